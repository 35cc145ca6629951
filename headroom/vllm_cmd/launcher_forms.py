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

from headroom.vllm_cmd.shell_line import NEWLINE

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
    return bool(rest) and (
        rest[0] in ("run", "create", "exec")
        or rest[:2] in (["container", "run"], ["compose", "run"])
    )


def read_container(words: Sequence[str]) -> Container | None:
    """The image and its command of `docker|podman run [OPTIONS] IMAGE [ARGS]`."""
    # `docker exec [OPTIONS] CONTAINER CMD` reads like run: the container's name where the
    # image is (it names no release); `docker compose run SERVICE CMD` likewise
    i = 2 if words[1] in ("run", "create", "exec") else 3
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


@dataclass(frozen=True)
class ContainerSpec:
    """What a pasted compose, Kubernetes, SkyPilot or dstack text says about the engine."""

    words: tuple[str, ...]  # the command (`command:` + `args:`, `run:`, `commands:`)
    image: str | None
    env: tuple[tuple[str, str], ...]
    visible_gpus: int | None
    gpus_said: str | None
    gpu_kind: str | None = None  # SkyPilot's accelerator, a node label's GPU product


_COMMAND_KEYS = ("command:", "args:", "run:", "commands:")
_BLOCK_INDICATORS = {"|", ">", "|-", ">-", "|+", ">+"}


def yaml_command(tokens: Sequence[str]) -> ContainerSpec | None:
    """The command of a pasted container spec: compose/Kubernetes `command:` and `args:`
    lists or strings, SkyPilot's `run: |` and dstack's `commands:`; its `image:`, its
    environment (`- CUDA_VISIBLE_DEVICES=0,1`, `- name: X` / `value: Y`) and its GPUs
    (`nvidia.com/gpu: 2`, SkyPilot `accelerators: A100:8`, compose `count: 2` of an nvidia
    device, `device_ids: ['0', '1']`). None when the tokens have no command key."""
    bare = [t.strip("'\"") for t in tokens]
    if not any(b in _COMMAND_KEYS for b in bare):
        return None
    image = said = kind = None
    gpus: int | None = None
    env: list[tuple[str, str]] = []
    words: list[str] = []
    nvidia = any("nvidia" in b for b in bare)
    i = 0
    while i < len(tokens):
        key, following = bare[i], (bare[i + 1] if i + 1 < len(bare) else "")
        if key in _COMMAND_KEYS:
            i += 1
            if i < len(tokens) and bare[i] in _BLOCK_INDICATORS:
                i += 1
            shell = key in ("run:", "commands:")  # lines of shell, one command a line
            while i < len(tokens) and not _YAML_KEY.fullmatch(tokens[i]):
                if tokens[i] in (NEWLINE, "\n"):
                    if shell and tokens[i] == NEWLINE:
                        words.append(NEWLINE)
                    i += 1
                    continue
                item = tokens[i].strip().strip(",").strip("[]").strip(",").strip("'\"")
                if item and item != "-":
                    words.append(item)
                i += 1
            if words and shell:
                words.append(NEWLINE)  # Kubernetes' args: go on after its command:
            continue
        if key == "image:":
            image = following.strip(",[]")
        elif key in ("nvidia.com/gpu:", "amd.com/gpu:") and following.isdigit():
            gpus, said = int(following), f"{key} {following}"
        elif key == "accelerators:" and ":" in following:
            name, _, count = following.strip("{}").rpartition(":")
            if count.strip().isdigit():
                gpus, said = int(count), f"accelerators: {following}"
                kind = name.strip() or kind
        elif key in ("nvidia.com/gpu.product:", "cloud.google.com/gke-accelerator:"):
            # a node selector's GPU product (GPU feature discovery's label, GKE's)
            kind = re.sub(r"^(nvidia-)?(tesla-)?", "", following, flags=re.IGNORECASE) or kind
        elif key == "count:" and nvidia and following.isdigit() and gpus is None:
            gpus, said = int(following), f"count: {following}"
        elif key == "device_ids:":
            ids = _list_items(bare[i + 1 :])
            if ids:
                gpus, said = len(ids), f"device_ids: {ids}"
        elif key == "name:" and i + 3 < len(bare) and bare[i + 2] == "value:":
            env.append((following, bare[i + 3]))
        elif "=" in key and not key.startswith("-"):
            name, value = key.split("=", 1)
            if re.fullmatch(r"[A-Z_][A-Z0-9_]*", name):
                env.append((name, value))  # compose `environment: - NAME=VALUE`
        i += 1
    if gpus is None:
        found = [v for k, v in env if k in ("NVIDIA_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES")]
        if found and _device_count(found[-1]):
            gpus, said = _device_count(found[-1]), f"NVIDIA/CUDA_VISIBLE_DEVICES={found[-1]}"
    while words and words[-1] == NEWLINE:
        words.pop()
    return ContainerSpec(tuple(words), image, tuple(env), gpus, said, kind)


def _list_items(rest: Sequence[str]) -> list[str]:
    items = []
    for token in rest:
        if _YAML_KEY.fullmatch(token) or token.endswith(":"):
            break
        for part in token.strip("[]").split(","):
            part = part.strip().strip("'\"[]")
            if part and part != "-":
                items.append(part)
    return items


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
