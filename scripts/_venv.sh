# Sourced by scripts/demo and scripts/test: make ./.venv with Headroom and its pinned
# dependencies (constraints.txt is the lock file, so SVG snapshots do not move when
# Textual releases). Re-installs only when pyproject.toml or constraints.txt changed.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${HEADROOM_VENV:-$ROOT/.venv}"
EXTRAS="${1:-}"
if [ ! -x "$VENV/bin/python" ]; then
    python3 -m venv "$VENV"
fi
stamp="$VENV/.headroom-installed$EXTRAS"
want="$(cat "$ROOT/pyproject.toml" "$ROOT/constraints.txt" | cksum)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    # pip's stderr is kept apart so the machine's harmless "Location ... is ignored" notices
    # about local package mirrors do not bury real errors.
    if ! "$VENV/bin/python" -m pip install -q --disable-pip-version-check \
        -c "$ROOT/constraints.txt" -e "$ROOT$EXTRAS" 2> "$VENV/.pip-stderr"; then
        cat "$VENV/.pip-stderr" >&2
        exit 1
    fi
    grep -v "is ignored: it is neither a file nor a directory" "$VENV/.pip-stderr" >&2 || true
    echo "$want" > "$stamp"
fi
