"""Which of vLLM's own texts name their fix, and how they word it (read-only walk).

    python scripts/hint_survey.py DIR [--json OUT] [--envs OUT] [--flags OUT] [--misread]
    python scripts/hint_survey.py --from SURVEY.json FLAGS.json [--misread]   (re-read a walk)
    python scripts/hint_survey.py --module FLAGS.json ENVS.json OUT.py   (write the names table)

DIR holds releases unpacked as DIR/<release>/src/vllm (the layout scripts/catalog_coverage.py
reads; a 0.1.x sdist unpacked the same way works too). For every release, every .py file
but vendored code is parsed and the messages of `raise X("...")` (also `raise X(msg)` where
`msg = "..."` is assigned just before, vLLM's `err_msg` idiom), `logger.warning/error/...`
and `assert cond, "..."` are kept when they name a knob: a `--flag`, a name in backticks or
quotes, an environment variable (`VLLM_*`, `NCCL_*`, ...) or an engine-arg name of
headroom/vllm_cmd/flags.py. Each is read by headroom.probes.vllm_hints (values rendered as
"8"), and the survey prints how often each verb form and each kind of knob occurs, and which
texts advise (a verb of advice beside a knob) but yield no fix (`--misread`).

Also collected, per release: the environment variables vLLM reads (envs.py's table keys and
`os.environ`/`os.getenv` names anywhere) and the long options its parsers add
(`add_argument("--x", ...)` in the files that build the server's parser, PARSERS), written
with --envs / --flags as {name: [first, last]}.
Nothing under DIR is written.
"""

from __future__ import annotations

import ast
import json
import re
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from catalog_coverage import _name, _normal, _text  # noqa: E402
from catalog_coverage import texts_of as catalog_texts_of  # noqa: E402

# The files that build `vllm serve`'s (and the older api_server's) argument parser.
PARSERS = re.compile(
    r"vllm/(?:engine/arg_utils|entrypoints/(?:openai/)?cli_args|entrypoints/launchers/cli_args"
    r"|entrypoints/(?:openai/)?api_server|entrypoints/cli/serve)\.py$"
)
SKIP = re.compile(r"third_party|vllm_flash_attn|/benchmarks?/|test_utils|/tests?/")
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9]*(?:[-_.][a-z0-9]+)*")
TICKED = re.compile(r"`([^`]{1,80})`|'([A-Za-z_][\w.-]{2,60}(?:=[^']{0,40})?)'")
ENV = re.compile(r"\b(?:VLLM|NCCL|CUDA|PYTORCH|TORCH|HF|RAY|OMP|HIP|GLOO|TOKENIZERS)_[A-Z0-9_]+\b")
ADVICE = re.compile(
    r"\b(?:try|please|consider|you (?:can|may|should|need|must|might)|set|setting|pass|passing|"
    r"use|using|specify|increase|increasing|decrease|decreasing|reduce|reducing|lower|lowering|"
    r"raise|raising|enable|enabling|disable|disabling|add|adding|run with|remove|omit|unset)\b",
    re.IGNORECASE,
)


def _version_key(release: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", release))


def _assigned_texts(func: ast.AST) -> dict[str, list[tuple[int, str]]]:
    """name -> [(line, text)] of string assignments in one function (the `err_msg` idiom)."""
    out: dict[str, list[tuple[int, str]]] = {}
    for node in ast.walk(func):
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Name):
                text = _text(node.value)
                if text:
                    out.setdefault(target.id, []).append((node.lineno, text))
    return out


def texts_of(source: str) -> list[tuple[str, str, int, str]]:
    """(origin, exception type or logger method, line, text) of one file's messages: the
    catalog walk's (scripts/catalog_coverage.py), plus vLLM's `err_msg` idiom."""
    out = catalog_texts_of(source)
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return out
    # `err_msg = ("..."); raise RuntimeError(err_msg)`: the text assigned before the raise
    for func in ast.walk(tree):
        if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        assigned = _assigned_texts(func)
        for node in ast.walk(func):
            if not (isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call)):
                continue
            args = node.exc.args
            if args and isinstance(args[0], ast.Name):
                before = [t for line, t in assigned.get(args[0].id, []) if line <= node.lineno]
                if before:
                    out.append(("raise", _name(node.exc), node.lineno, before[-1]))
    return list(dict.fromkeys(out))


def env_names(source: str) -> set[str]:
    """Environment variables a file reads: envs.py's table keys, os.environ / os.getenv."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return set()
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            keys = [k.value for k in node.keys if isinstance(k, ast.Constant)]
            if keys and all(
                isinstance(k, str) and re.fullmatch(r"[A-Z][A-Z0-9_]+", k) for k in keys
            ):
                if sum(k.startswith("VLLM_") for k in keys) >= 3:
                    found.update(keys)
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            name = _name(node)
            owner = ast.unparse(node.func) if isinstance(node.func, ast.Attribute) else ""
            value = node.args[0].value
            if (
                isinstance(value, str)
                and re.fullmatch(r"[A-Z][A-Z0-9_]{2,}", value)
                and (name == "getenv" or owner in ("os.environ.get", "os.environ.setdefault"))
            ):
                found.add(value)
        elif isinstance(node, ast.Subscript) and ast.unparse(node.value) == "os.environ":
            key = node.slice
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                if re.fullmatch(r"[A-Z][A-Z0-9_]{2,}", key.value):
                    found.add(key.value)
    return found


def long_options(source: str) -> set[str]:
    """The long options a parser file adds: add_argument("--x", ...)."""
    return set(re.findall(r"add_argument\(\s*['\"](--[a-z][a-z0-9-]*)['\"]", source))


_DESTS: re.Pattern[str] | None = None


def names_a_knob(words: str) -> bool:
    global _DESTS
    if _DESTS is None:  # the flag table's engine-arg names with an underscore, as bare words
        from headroom.vllm_cmd.flags import FLAGS_BY_DEST

        dests = sorted((d for d in FLAGS_BY_DEST if "_" in d), key=len, reverse=True)
        _DESTS = re.compile(r"\b(?:" + "|".join(dests) + r")\b")
    return bool(
        FLAG.search(words) or TICKED.search(words) or ENV.search(words) or _DESTS.search(words)
    )


def walk(root: Path) -> tuple[dict[str, dict], dict[str, list[str]], dict[str, list[str]]]:
    releases = sorted(
        (p.name for p in root.iterdir() if (p / "src" / "vllm").is_dir()), key=_version_key
    )
    table: dict[str, dict] = {}
    envs: dict[str, list[str]] = {}
    options: dict[str, list[str]] = {}
    for release in releases:
        base = root / release / "src"
        for path in sorted((base / "vllm").rglob("*.py")):
            rel = str(path.relative_to(base))
            if SKIP.search(rel):
                continue
            source = path.read_text(errors="replace")
            for name in env_names(source):
                envs.setdefault(name, [release, release])[1] = release
            if PARSERS.search(rel):
                for option in long_options(source):
                    options.setdefault(option, [release, release])[1] = release
            for origin, typ, line, text in texts_of(source):
                words = _normal(text)
                if not names_a_knob(words):
                    continue
                row = table.setdefault(
                    words, {"origin": origin, "type": typ, "releases": [], "where": f"{release}: {rel}:{line}"}
                )  # fmt: skip
                if release not in row["releases"]:
                    row["releases"].append(release)
    return table, envs, options


def rendered(words: str) -> str:
    return words.replace("{}", "8")


MODULE_HEAD = '''"""Knob names vLLM's messages may name beyond 0.32's flag table (vllm_cmd.flags).

Generated by scripts/hint_survey.py --module from vLLM's wheels (0.1.2 sdist, 0.2.7-0.33.0):
OLDER_OPTIONS, the long options the server's parser files add in some release read but not in
vllm_cmd.flags; ENV_NAMES, the environment variables vLLM reads (envs.py, os.environ); each
with the first and the last release read that has it. Regenerate rather than edit.
"""

from __future__ import annotations

__all__ = ["ENV_NAMES", "OLDER_OPTIONS"]

'''


def write_module(flags_path: Path, envs_path: Path, out: Path) -> None:
    from headroom.vllm_cmd.flags import FLAGS_BY_OPTION

    options = json.loads(flags_path.read_text())
    envs = json.loads(envs_path.read_text())
    older = [f"{o} {a} {b}" for o, (a, b) in sorted(options.items()) if o not in FLAGS_BY_OPTION]
    rows, line = [], ""
    for name, (a, b) in sorted(envs.items()):
        item = f"{name} {a} {b}"
        if line and len(line) + len(item) + 3 > 99:
            rows.append(line)
            line = ""
        line = f"{line} | {item}" if line else item
    rows.append(line)
    text = MODULE_HEAD
    text += '# option first last\n_OLDER = """\n' + "\n".join(older) + '\n"""\n\n'
    text += '# name first last | ...\n_ENVS = """\n' + "\n".join(rows) + '\n"""\n\n\n'
    text += (
        "def _table(text: str) -> dict[str, tuple[str, str]]:\n"
        "    out: dict[str, tuple[str, str]] = {}\n"
        '    for item in text.replace("\\n", " | ").split(" | "):\n'
        "        if item.strip():\n"
        "            name, first, last = item.split()\n"
        "            out[name] = (first, last)\n"
        "    return out\n\n\n"
        "# engine-arg name (underscores) -> (first, last release read that has the option)\n"
        "OLDER_OPTIONS: dict[str, tuple[str, str]] = {\n"
        '    name[2:].replace("-", "_"): span for name, span in _table(_OLDER).items()\n'
        "}\n"
        "ENV_NAMES: dict[str, tuple[str, str]] = _table(_ENVS)\n"
    )
    out.write_text(text)


def main(argv: list[str]) -> int:
    if argv and argv[0] == "--module":
        write_module(Path(argv[1]), Path(argv[2]), Path(argv[3]))
        return 0
    from headroom.probes.vllm_hints import fixes_in_message
    from headroom.vllm_cmd.flags import FLAGS_BY_DEST

    if argv[0] == "--from":  # the walk takes minutes: re-read one written before
        table = json.loads(Path(argv[1]).read_text())
        options = json.loads(Path(argv[2]).read_text())
        envs = {}
    else:
        table, envs, options = walk(Path(argv[0]))
    # the engine-arg names a bare or quoted name may be: 0.32's table and every release's parser
    names = set(FLAGS_BY_DEST) | {o[2:].replace("-", "_") for o in options}
    verbs: Counter[str] = Counter()
    forms: Counter[str] = Counter()
    directions: Counter[str] = Counter()
    advising = read = 0
    misread = []
    for words, row in table.items():
        fixes = fixes_in_message(rendered(words), names)
        row["fixes"] = [[f.knob, f.form, f.direction, f.value] for f in fixes]
        for f in fixes:
            verbs[f.verb.lower()] += 1
            forms[f.form] += 1
            directions[f.direction] += 1
        if ADVICE.search(words):
            advising += 1
            read += bool(fixes)
            if not fixes:
                misread.append((row["where"], words))
    if "--json" in argv:
        Path(argv[argv.index("--json") + 1]).write_text(json.dumps(table, indent=1))
    if "--envs" in argv:
        Path(argv[argv.index("--envs") + 1]).write_text(
            json.dumps(dict(sorted(envs.items())), indent=0)
        )
    if "--flags" in argv:
        Path(argv[argv.index("--flags") + 1]).write_text(
            json.dumps(dict(sorted(options.items())), indent=0)
        )
    if "--misread" in argv:
        for where, words in sorted(misread):
            print(f"{where}\n    {words[:300]}")
    print(
        f"texts naming a knob: {len(table)}; with a verb of advice: {advising}; a fix read: {read}"
    )
    print("fixes by verb:", ", ".join(f"{v} {n}" for v, n in verbs.most_common()))
    print("fixes by form:", ", ".join(f"{v} {n}" for v, n in forms.most_common()))
    print("fixes by direction:", ", ".join(f"{v} {n}" for v, n in directions.most_common()))
    print(f"environment variables read: {len(envs)}; long options added: {len(options)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
