"""Derive headroom/doctor/pp_support.py: which architectures each vLLM release runs pipeline
parallel, read from the release's own source.

    python scripts/pp_support_table.py DIR     (DIR/X/src/vllm for every release X, as for
                                                scripts/catalog_provenance.py)

0.5.x-0.6.x list them (`_PP_SUPPORTED_MODELS` in vllm/config.py, "Pipeline parallelism is
only supported for the following architectures"); from the release whose ModelConfig asks
`ModelRegistry.is_pp_supported_model`, an architecture runs PP when its class implements the
`SupportsPP` interface. The registry maps an architecture to (module, class)
(model_executor/models/registry.py, `_MODELS` dicts; models/__init__.py before it); a class
supports PP when `SupportsPP` is among its bases, directly or through another model class
(resolved in its module first, then in any model module). Only `ast` is used: nothing is
imported from vLLM.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path


def _release_key(name: str) -> tuple[int, ...]:
    return tuple(int(p) for p in name.replace(".post", ".").split(".") if p.isdigit())


def _dict_entries(tree: ast.Module) -> dict[str, tuple[str, str]]:
    """arch -> (module, class) from every module-level dict literal of the registry whose
    values are 2-tuples of strings (registry.py's _TEXT_GENERATION_MODELS and friends)."""
    out: dict[str, tuple[str, str]] = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.Dict):
            continue
        for key, value in zip(node.keys, node.values, strict=False):
            if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
                continue
            if isinstance(value, ast.Tuple) and len(value.elts) >= 2:
                parts = [e.value for e in value.elts[:2] if isinstance(e, ast.Constant)]
                if len(parts) == 2 and all(isinstance(p, str) for p in parts):
                    out[key.value] = (parts[0], parts[1])
    return out


def _model_files(models: Path) -> list[tuple[str, Path]]:
    """(registry module name, file): model_executor/models/*.py by stem; the packages newer
    releases register as "vllm.models.NAME" (0.25+) by that dotted name, every file in them."""
    files = [(path.stem, path) for path in sorted(models.glob("*.py"))]
    packages = models.parents[1] / "models"
    if packages.is_dir():
        for path in sorted(packages.rglob("*.py")):
            parts = path.relative_to(packages).with_suffix("").parts
            files.append((f"vllm.models.{parts[0]}", path))
    return files


def _classes(models: Path) -> tuple[dict[str, dict[str, list[str]]], dict[str, list[str]]]:
    """Per module: class -> base names; and a global class -> bases (first seen)."""
    per_module: dict[str, dict[str, list[str]]] = {}
    every: dict[str, list[str]] = {}
    for module, path in _model_files(models):
        try:
            tree = ast.parse(path.read_text(errors="replace"))
        except SyntaxError:
            continue
        found: dict[str, list[str]] = {}
        for node in tree.body:
            if isinstance(node, ast.ClassDef) and node.name not in per_module.get(module, {}):
                bases = []
                for base in node.bases:
                    if isinstance(base, ast.Name):
                        bases.append(base.id)
                    elif isinstance(base, ast.Attribute):
                        bases.append(base.attr)
                    elif isinstance(base, ast.Subscript) and isinstance(base.value, ast.Name):
                        bases.append(base.value.id)
                found[node.name] = bases
                every.setdefault(node.name, bases)
        per_module.setdefault(module, {}).update(found)
    return per_module, every


def _supports_pp(module: str, cls: str, per_module, every, seen=None) -> bool:
    seen = seen or set()
    if (module, cls) in seen:
        return False
    seen.add((module, cls))
    bases = per_module.get(module, {}).get(cls)
    if bases is None:
        bases = every.get(cls, [])
    for base in bases:
        if base == "SupportsPP":
            return True
        home = module if base in per_module.get(module, {}) else ""
        if _supports_pp(home, base, per_module, every, seen):
            return True
    return False


def supported(src: Path) -> set[str] | None:
    vllm = src / "vllm"
    config = vllm / "config.py"
    if config.exists():
        tree = ast.parse(config.read_text(errors="replace"))
        for node in tree.body:
            if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "_PP_SUPPORTED_MODELS" for t in node.targets
            ):
                return {e.value for e in node.value.elts if isinstance(e, ast.Constant)}
    models = vllm / "model_executor" / "models"
    registry = models / "registry.py"
    if not registry.exists():
        return None  # before 0.5: no pipeline parallelism at all
    entries = _dict_entries(ast.parse(registry.read_text(errors="replace")))
    per_module, every = _classes(models)
    return {
        arch for arch, (mod, cls) in entries.items() if _supports_pp(mod, cls, per_module, every)
    }


def known(src: Path) -> set[str]:
    models = src / "vllm" / "model_executor" / "models"
    for name in ("registry.py", "__init__.py"):
        path = models / name
        if path.exists():
            found = _dict_entries(ast.parse(path.read_text(errors="replace")))
            if found:
                return set(found)
    return set()


def _wrapped(names: list[str], width: int = 96) -> list[str]:
    out, line = [], "       "
    for name in names:
        piece = f" {name!r},"
        if len(line) + len(piece) > width:
            out.append(line)
            line = "       "
        line += piece
    return [*out, line] if line.strip() else out


def main(argv: list[str]) -> int:
    root = Path(argv[0])
    releases = sorted(
        (p.name for p in root.iterdir() if (p / "src" / "vllm").is_dir()), key=_release_key
    )
    first: dict[str, str] = {}
    lost: dict[str, str] = {}
    every_arch: set[str] = set()
    newest = releases[-1]
    for release in releases:
        src = root / release / "src"
        pp = supported(src)
        every_arch |= known(src)
        if pp is None:
            continue
        for arch in sorted(pp):
            first.setdefault(arch, release)
        for arch in list(first):
            if arch not in pp and release == newest:
                lost[arch] = newest
    never = sorted(every_arch - set(first))
    out = Path(__file__).resolve().parents[1] / "headroom/doctor/pp_support.py"
    lines = [
        '"""Generated by scripts/pp_support_table.py from the vLLM wheels read ('
        + ", ".join(releases)
        + "):",
        "PP_SINCE: the first release read that runs each architecture pipeline parallel;",
        "PP_NEVER: architectures the releases register that none of them runs PP (as of "
        + newest
        + ").",
        'Do not edit by hand; re-run the script."""',
        "",
        "# fmt: off",
        "PP_SINCE: dict[str, str] = {",
    ]
    by_release: dict[str, list[str]] = {}
    for arch in sorted(first):
        if arch not in lost:
            by_release.setdefault(first[arch], []).append(arch)
    lines[-1] = "_SINCE_BY_RELEASE: dict[str, tuple[str, ...]] = {"
    for release in sorted(by_release, key=_release_key):
        lines.append(f"    {release!r}: (")
        lines += _wrapped(by_release[release])
        lines.append("    ),")
    lines += ["}", "PP_SINCE: dict[str, str] = {"]
    lines += ["    arch: release for release, archs in _SINCE_BY_RELEASE.items() for arch in archs"]
    lines += ["}", "PP_NEVER: frozenset[str] = frozenset({"]
    lines += _wrapped(never + sorted(lost))
    lines += ["})", f"NEWEST_READ = {newest!r}", "# fmt: on", ""]
    out.write_text("\n".join(lines))
    print(f"wrote {out}: {len(first) - len(lost)} with PP, {len(never) + len(lost)} without")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
