#!/usr/bin/env bash
# Build (once) the environment for the multi-node tests against a real Ray cluster:
# ray[default]==2.60.0 (the release fleet-facts.md describes) in its own virtual
# environment under $HEADROOM_RAY_HOME (default ~/.cache/headroom), so Headroom's own
# environment stays small. The tests start the cluster themselves, on the loopback of a
# network namespace; nothing here starts a service. Exits non-zero when it cannot build.
set -euo pipefail
HOME_DIR="${HEADROOM_RAY_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/headroom}"
VENV="$HOME_DIR/ray-2.60.0"
mkdir -p "$HOME_DIR"
exec 9>"$HOME_DIR/.setup-ray.lock"
flock 9
if [ ! -f "$VENV/.complete" ]; then
    echo "setup-ray: installing ray[default]==2.60.0 into $VENV (about 1 minute)" >&2
    python3 -m venv "$VENV"
    "$VENV/bin/python" -m pip install -q --disable-pip-version-check "ray[default]==2.60.0" \
        2> >(grep -v "is ignored: it is neither a file nor a directory" >&2)
    RAY_USAGE_STATS_ENABLED=0 "$VENV/bin/ray" --version >/dev/null
    touch "$VENV/.complete"
fi
echo "HEADROOM_RAY=$VENV/bin/ray"
