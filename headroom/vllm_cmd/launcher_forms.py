"""vLLM's own engine args in the other forms people start it in: a container (`docker run
... vllm/vllm-openai:TAG ARGS`, a compose `command:`, a Kubernetes `args:` list) and a
Python call (`LLM(model=..., tensor_parallel_size=2)`, `AsyncEngineArgs(...)`).

The vllm/vllm-openai image's entrypoint is vLLM's server (`python3 -m
vllm.entrypoints.openai.api_server` in the older images' Dockerfile, `vllm serve` later),
so whatever follows the image is vLLM's flags, a model first where the entrypoint is
`vllm serve`; the image's tag is the release (`v0.6.3`, `v0.8.5.post1`; `latest` and
`nightly` name none). ROCm's rocm/vllm tags carry it too (`rocm6.3.1_vllm_0.8.5_20250521`).
"""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass

_VLLM_IMAGE = re.compile(r"(?:^|/)vllm/vllm-(?:openai|tpu)(?:-rocm)?(?::(?P<tag>[\w.\-]+))?$")
_ROCM_IMAGE = re.compile(r"(?:^|/)rocm/vllm(?:-dev)?(?::(?P<tag>[\w.\-]+))?$")
_TAG_RELEASE = re.compile(r"v?(\d+\.\d+\.\d+(?:\.post\d+|\.\d+)?)(?:[-+_].*)?")
_ROCM_TAG_RELEASE = re.compile(r".*?vllm[_-]v?(\d+\.\d+\.\d+)")
# docker/podman run options that take no value; every other long option takes one.
_DOCKER_FLAGS = {
    "-d", "--detach", "-i", "--interactive", "-t", "--tty", "--rm", "--privileged", "--init",
    "-P", "--publish-all", "--read-only", "--sig-proxy", "--no-healthcheck", "-q", "--quiet",
    "--oom-kill-disable", "--replace", "--use-api-socket", "--help",
}  # fmt: skip
_DOCKER_SHORT_VALUED = set("acehlmpuvw")
_DOCKER_PROGRAMS = {"docker", "podman", "nvidia-docker", "nerdctl"}
_PY_CALL = re.compile(
    r"\b(LLM|AsyncEngineArgs|EngineArgs|AsyncLLMEngine\.from_engine_args|LLMEngine)\s*\("
)
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")
_YAML_KEY = re.compile(r"['\"]?[A-Za-z_][\w./-]*['\"]?:")


@dataclass(frozen=True)
class Container:
    """What a `docker run` line says: the image, vLLM's part of it, the environment."""

    image: str
    argv: tuple[str, ...]  # the command the image runs, as a vLLM command line
    env: tuple[tuple[str, str], ...]
    visible_gpus: int | None
    gpus_said: str | None  # the option that said it, for the note


def image_release(image: str) -> tuple[str | None, bool]:
    """(release, is vLLM's image) for an image reference."""
    found = _VLLM_IMAGE.search(image)
    if found is not None:
        tag = found.group("tag") or ""
        release = _TAG_RELEASE.fullmatch(tag)
        return (release.group(1) if release else None), True
    found = _ROCM_IMAGE.search(image)
    if found is not None:
        release = _ROCM_TAG_RELEASE.match(found.group("tag") or "")
        return (release.group(1) if release else None), True
    return None, "vllm" in image.lower()


def is_container_run(words: Sequence[str]) -> bool:
    if not words or os.path.basename(words[0]) not in _DOCKER_PROGRAMS:
        return False
    rest = list(words[1:3])
    return bool(rest) and (rest[0] in ("run", "create") or rest[:2] == ["container", "run"])


def read_container(words: Sequence[str]) -> Container | None:
    """The image and its command of `docker|podman run [OPTIONS] IMAGE [ARGS]`."""
    i = 2 if words[1] in ("run", "create") else 3
    env: list[tuple[str, str]] = []
    gpus: int | None = None
    said: str | None = None
    entrypoint: str | None = None
    while i < len(words) and words[i].startswith("-") and words[i] != "--":
        option, eq, inline = words[i].partition("=")
        takes = _takes_value(option)
        value = inline if eq else (words[i + 1] if takes and i + 1 < len(words) else "")
        i += 1 if eq or not takes else 2
        if option in ("-e", "--env") and "=" in value:
            name, text = value.split("=", 1)
            env.append((name, text))
            if name in ("NVIDIA_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES") and gpus is None:
                gpus, said = _device_count(text), f"{name}={text}"
        elif option == "--gpus":
            gpus, said = _gpus_option(value), f"--gpus {value}"
        elif option == "--device" and "nvidia.com/gpu=" in value:
            one = _device_count(value.split("=", 1)[1])
            gpus = None if one is None else (gpus or 0) + one
            said = f"--device {value}"
        elif option == "--entrypoint":
            entrypoint = value
    if i < len(words) and words[i] == "--":
        i += 1
    if i >= len(words):
        return None
    image, rest = words[i], list(words[i + 1 :])
    if entrypoint:
        rest = [*entrypoint.split(), *rest]
    return Container(image, tuple(rest), tuple(env), gpus, said)


def _takes_value(option: str) -> bool:
    if option in _DOCKER_FLAGS:
        return False
    if option.startswith("--"):
        return True
    letters = option[1:]  # `-it` takes none, `-e`, `-v`, `-itv` one
    return bool(letters) and letters[-1] in _DOCKER_SHORT_VALUED


def _gpus_option(value: str) -> int | None:
    text = value.strip("'\"")
    if text.isdigit():
        return int(text)
    for part in text.split(","):
        if part.strip("'\"").startswith("device="):
            return _device_count(text.split("device=", 1)[1])
        if part.startswith("count=") and part[6:].isdigit():
            return int(part[6:])
    return None  # "all": every GPU of the host, how many is not said


def _device_count(text: str) -> int | None:
    items = [x for x in text.strip("'\"").split(",") if x.strip("'\" ")]
    if not items or any(x.strip().lower() in ("all", "none", "void", "-1") for x in items):
        return None
    return len(items)


def yaml_command(tokens: Sequence[str]) -> tuple[list[str], str | None, int | None] | None:
    """(the command's tokens, image, nvidia.com/gpu count) of a pasted compose or Kubernetes
    text (`image: ...`, `command:`/`args:` lists, `nvidia.com/gpu: 2`); None when the
    tokens have no `command:`/`args:` key."""
    keys = [i for i, t in enumerate(tokens) if t.strip("'\"") in ("command:", "args:")]
    if not keys:
        return None
    image = gpus = None
    out: list[str] = []
    i = 0
    while i < len(tokens):
        bare = tokens[i].strip("'\"")
        if bare == "image:" and i + 1 < len(tokens):
            image = tokens[i + 1].strip("'\",[]")
        elif bare in ("nvidia.com/gpu:", "amd.com/gpu:") and i + 1 < len(tokens):
            count = tokens[i + 1].strip("'\",")
            gpus = int(count) if count.isdigit() else gpus
        elif bare in ("command:", "args:"):
            i += 1
            while i < len(tokens) and not _YAML_KEY.fullmatch(tokens[i]):
                item = tokens[i].strip().strip(",").strip("[]").strip(",").strip("'\"")
                if item and item != "-":
                    out.append(item)
                i += 1
            continue
        i += 1
    return out, image, gpus


@dataclass(frozen=True)
class PythonCall:
    function: str
    kwargs: tuple[tuple[str, object], ...]
    skipped: tuple[str, ...]  # keywords whose value is an expression, not a literal


def python_call(tokens: Sequence[str]) -> PythonCall | None:
    """The keyword arguments of the first `LLM(...)`/`EngineArgs(...)` call in the text
    (quotes a shell took away are not needed: `model=org/name` reads as the text)."""
    text = " ".join(tokens)
    if len(text) > 1 << 16:
        return None
    found = _PY_CALL.search(text)
    if found is None:
        return None
    depth, start, end = 0, found.end(), len(text)
    for k in range(start, len(text)):
        if text[k] in "([{":
            depth += 1
        elif text[k] in ")]}":
            if depth == 0:
                end = k
                break
            depth -= 1
    kwargs: list[tuple[str, object]] = []
    skipped: list[str] = []
    for k, part in enumerate(_top_level_split(text[start:end])):
        name, eq, raw = part.partition("=")
        name = name.strip()
        if k == 0 and not eq and found.group(1) == "LLM" and name:
            name, raw, eq = "model", name, "="  # LLM("facebook/opt-13b", ...): model first
        if not eq or not _IDENTIFIER.fullmatch(name) or "." in name:
            continue
        value = _literal(raw.strip())
        if value is _NOT_LITERAL:
            skipped.append(name)
        else:
            kwargs.append((name, value))
    return PythonCall(found.group(1), tuple(kwargs), tuple(skipped))


_NOT_LITERAL = object()


def _literal(raw: str) -> object:
    try:
        return ast.literal_eval(raw)
    except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
        pass
    if raw in ("true", "false"):
        return raw == "true"
    # an unquoted word: a shell took the quotes away ('org/name', 'bfloat16'), or a variable
    if not raw or _IDENTIFIER.fullmatch(raw) and "/" not in raw and "-" not in raw:
        return _NOT_LITERAL if raw not in ("auto", "bfloat16", "float16", "half", "fp8") else raw
    if re.fullmatch(r"[\w./:\-]+", raw):
        return raw
    return _NOT_LITERAL


def _top_level_split(text: str) -> list[str]:
    parts, depth, current, quote = [], 0, [], ""
    for ch in text:
        if quote:
            current.append(ch)
            if ch == quote:
                quote = ""
            continue
        if ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append("".join(current))
            current = []
            continue
        current.append(ch)
    parts.append("".join(current))
    return parts
