"""A launcher's command line read as the vLLM engine args it starts vLLM with.

Many start vLLM through another tool: FastChat's vllm_worker, LLaMA-Factory, verl, EasyR1,
OpenRLHF, TRL, Xinference, KServe, lm-eval, ms-swift, Ray Serve (tables in `launcher_tables`
and `launcher_tables_rl`, found by `launcher_identify`), a container image or a
Python call (`launcher_forms`), wrapped in a shell line (`shell_line`). `read_launch_line`
reads such a line into a plain vLLM command line (`vllm serve MODEL --flag value ...`,
the environment kept in front as `env A=B`), says which of the tool's names became which
engine arg, the tool's own defaults it took, the release an image tag names, and the GPUs
the line makes visible. It never raises; None means the line is vLLM's own, as typed.

This is for reading what a person pasted (`headroom doctor`, `headroom plan`): the
supervisor and the restart dialog keep the user's line exactly as it is.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from headroom.vllm_cmd.launcher_args import engine_tokens, engine_value
from headroom.vllm_cmd.launcher_forms import (
    image_release,
    is_container_run,
    python_call,
    read_container,
    yaml_command,
)
from headroom.vllm_cmd.launcher_identify import identify
from headroom.vllm_cmd.launcher_read import ToolReading, read_tool
from headroom.vllm_cmd.shell_line import NEWLINE, ShellCommand, command_segments, split_pasted

ReadFile = Callable[[str], "str | None"]


@dataclass(frozen=True)
class LaunchReading:
    """A pasted line, read as a vLLM command line."""

    argv: tuple[str, ...]  # `[env A=B ...] vllm serve [MODEL] FLAGS`, for parse_command
    engine_args: dict[str, object]  # what the launcher's table gave ({} for vLLM's own flags)
    read_as: str  # "FastChat's vllm_worker flags", "the container's command", ...
    renamed: tuple[tuple[str, str], ...] = ()  # (the tool's name as typed, engine arg)
    defaults: tuple[str, ...] = ()  # engine args the tool's own defaults gave
    defaults_note: str = ""
    release: str | None = None  # the vLLM release an image tag names
    release_from: str | None = None
    visible_gpus: int | None = None
    visible_from: str | None = None
    notes: tuple[str, ...] = ()  # what was not read, and why
    tool_key: str | None = None
    knob_names: tuple[tuple[str, str], ...] = ()  # (engine arg, the tool's own name)
    translated: bool = True
    gpus: str | None = (
        None  # COUNTxNAME when the text names the GPUs' kind (SkyPilot, labels)  # False: vLLM's own command, only the shell's words taken away
    )

    def note(self) -> str:
        """One line for the doctor's `lacking`: what the line was read as, and how."""
        text = f"read as vLLM engine args from {self.read_as}"
        if self.renamed:
            pairs = dict.fromkeys(f"{typed} is {arg}" for typed, arg in self.renamed)
            text += ": " + ", ".join(pairs)
        if self.defaults:
            text += f"; {self.defaults_note or 'the tool defaults'}: " + ", ".join(self.defaults)
        if self.release:
            text += f"; vLLM {self.release} from the image {self.release_from}"
        if self.visible_gpus:
            plural = "s" if self.visible_gpus != 1 else ""
            text += f"; {self.visible_gpus} GPU{plural} visible ({self.visible_from})"
        if self.gpus:
            text += f"; GPUs {self.gpus} as the text names them"
        if self.knob_names:
            text += "; in its own names: " + ", ".join(f"{a} is {n}" for a, n in self.knob_names)
        return "; ".join([text, *self.notes])


def read_launch_line(
    argv: Sequence[str] | str, *, gpus: int | None = None, read_file: ReadFile | None = None
) -> LaunchReading | None:
    """The vLLM command line a launcher's line amounts to; None when the line already is
    vLLM's own as typed (or holds nothing to read). `gpus`: the GPUs known from elsewhere
    (`--gpus`), for launchers that run tensor parallel over every GPU they see."""
    try:
        return _read(split_pasted(argv), gpus, read_file)
    except (ValueError, TypeError, KeyError, IndexError, RecursionError, OverflowError):
        return None  # a reader's gap must not cost the diagnosis: the line is read as typed


def _read(tokens: list[str], gpus: int | None, read_file: ReadFile | None) -> LaunchReading | None:
    if not tokens:
        return None
    spec = yaml_command(tokens)
    if spec is not None:
        reading = _from_yaml(spec, gpus, read_file)
        if reading is not None:
            return reading
    if _yaml_like(tokens):
        # a YAML of settings (Ray Serve's LLMConfig, a LLaMA-Factory file, vLLM's own
        # --config): its lines are one mapping, not one command a line
        flat = [t for t in tokens if t not in (NEWLINE, "-")]
        found = identify(flat)
        if found is not None:
            return _from_tool(read_tool(found[0], found[1], {}, gpus, read_file), ())
    segments = command_segments(tokens)
    if not segments:
        return None
    chosen = _choose(segments)
    reading = _read_segment(chosen, gpus, read_file, depth=0)
    if reading is not None:
        return reading
    call = python_call(tokens)
    if call is not None:
        return _from_python(call)
    words = chosen.words
    bare_vllm = (
        bool(words) and os.path.basename(words[0]) == "vllm" and tuple(words[1:2]) != ("serve",)
    )
    if _is_vllm(words) and not bare_vllm and list(tokens) != _as_typed(chosen):
        # vLLM's own command inside shell noise (nohup, redirections, `cd x &&`); a bare
        # `vllm` with no `serve` after it is not a server's command line
        return _plain(chosen, "the vLLM command in the shell line")
    return None


def _yaml_like(tokens: list[str]) -> bool:
    """Two lines or more that start with `key:` (after a list's `-`)."""
    starts = [
        t
        for i, t in enumerate(tokens)
        if t.endswith(":") and (i == 0 or tokens[i - 1] in (NEWLINE, "-"))
    ]
    return len(starts) >= 2


def _choose(segments: list[ShellCommand]) -> ShellCommand:
    """The command that starts the engine: a known launcher, a container, vLLM itself;
    else the last one."""
    for test in (
        lambda s: is_container_run(s.words),
        lambda s: identify(s.words) is not None,
        lambda s: _is_vllm(s.words),
    ):
        for segment in segments:
            if test(segment):
                return segment
    return segments[-1]


def _as_typed(segment: ShellCommand) -> list[str]:
    return [*(f"{k}={v}" for k, v in segment.env), *segment.words]


def _is_vllm(words: Sequence[str]) -> bool:
    if not words:
        return False
    program = os.path.basename(words[0])
    if program == "vllm":
        return True
    if "-m" in words[:4]:
        at = list(words).index("-m")
        return at + 1 < len(words) and words[at + 1].split(".")[0] == "vllm"
    return False


def _read_segment(
    segment: ShellCommand, gpus: int | None, read_file: ReadFile | None, depth: int
) -> LaunchReading | None:
    if is_container_run(segment.words) and depth < 3:
        return _from_container(segment, gpus, read_file, depth)
    found = identify(segment.words)
    if found is None:
        return None
    launcher, args = found
    tool = read_tool(launcher, args, dict(segment.env), gpus, read_file)
    return _from_tool(tool, segment.engine_env())


def _vllm_argv(env, model: object, args: dict[str, object]) -> tuple[str, ...]:
    front = ("env", *(f"{k}={v}" for k, v in env), "vllm", "serve") if env else ("vllm", "serve")
    named = (str(model),) if model not in (None, "") else ()
    return (*front, *named, *engine_tokens(args))


def _from_tool(tool: ToolReading, env) -> LaunchReading:
    args = dict(tool.engine_args)
    return LaunchReading(
        argv=_vllm_argv(env, args.get("model"), args),
        engine_args=args,
        read_as=tool.launcher.name
        + ("" if tool.launcher.name.startswith("a ") else f" {tool.style}"),
        renamed=tool.renamed,
        defaults=tool.defaults,
        defaults_note=tool.launcher.defaults_note,
        visible_gpus=tool.visible_gpus,
        visible_from=tool.visible_from,
        notes=tool.notes,
        tool_key=tool.launcher.key,
        knob_names=tool.knob_names,
        gpus=tool.gpus,
    )


def _plain(segment: ShellCommand, read_as: str) -> LaunchReading:
    env = segment.engine_env()
    front = ("env", *(f"{k}={v}" for k, v in env)) if env else ()
    return LaunchReading(
        argv=(*front, *segment.words), engine_args={}, read_as=read_as, translated=False
    )


def _from_container(
    segment: ShellCommand, gpus: int | None, read_file: ReadFile | None, depth: int
) -> LaunchReading | None:
    box = read_container(segment.words)
    if box is None:
        return None
    release, is_vllm_image = image_release(box.image)
    inner = ShellCommand(box.argv, (*segment.env, *box.env))
    env = inner.engine_env()
    words = list(box.argv)
    nested = _read_segment(inner, box.visible_gpus or gpus, read_file, depth + 1) if words else None
    if nested is not None:
        base = nested
    elif not words or words[0].startswith("-") or is_vllm_image:
        if words and _is_vllm(words):
            cmd = words
        elif words and words[0] == "serve":
            cmd = ["vllm", *words]
        else:
            cmd = ["vllm", "serve", *words]
        front = ("env", *(f"{k}={v}" for k, v in env)) if env else ()
        base = LaunchReading(argv=(*front, *cmd), engine_args={}, read_as="")
    else:
        return None
    return LaunchReading(
        argv=base.argv,
        engine_args=base.engine_args,
        read_as=f"the container {box.image}'s command"
        + (f" ({base.read_as})" if base.read_as else ""),
        renamed=base.renamed,
        defaults=base.defaults,
        defaults_note=base.defaults_note,
        release=release,
        release_from=box.image if release else None,
        visible_gpus=box.visible_gpus or base.visible_gpus,
        visible_from=box.gpus_said if box.visible_gpus else base.visible_from,
        notes=base.notes,
        tool_key=base.tool_key,
        knob_names=base.knob_names,
    )


def _from_yaml(spec, gpus, read_file) -> LaunchReading | None:
    words = list(spec.words)
    if not words and spec.image is None:
        return None
    release, is_vllm_image = image_release(spec.image) if spec.image else (None, False)
    segments = command_segments(words) if words else []
    chosen = _choose(segments) if segments else ShellCommand((), ())
    inner = ShellCommand(chosen.words, (*spec.env, *chosen.env))
    env = inner.engine_env()
    nested = _read_segment(inner, spec.visible_gpus or gpus, read_file, 1) if words else None
    front = ("env", *(f"{k}={v}" for k, v in env)) if env else ()
    cmd = list(chosen.words)
    if nested is not None:
        argv = nested.argv
    elif cmd and (_is_vllm(cmd) or cmd[0] == "serve"):
        argv = (*front, *(["vllm", *cmd] if cmd[0] == "serve" else cmd))
    elif cmd and (cmd[0].startswith("-") or is_vllm_image):
        argv = (*front, "vllm", "serve", *cmd)
    else:
        return None
    return LaunchReading(
        argv=argv,
        engine_args=nested.engine_args if nested else {},
        read_as="the command of a container spec" + (f" ({nested.read_as})" if nested else ""),
        renamed=nested.renamed if nested else (),
        defaults=nested.defaults if nested else (),
        defaults_note=nested.defaults_note if nested else "",
        release=release,
        release_from=spec.image if release else None,
        visible_gpus=spec.visible_gpus or (nested.visible_gpus if nested else None),
        visible_from=spec.gpus_said or (nested.visible_from if nested else None),
        notes=nested.notes if nested else (),
        tool_key=nested.tool_key if nested else None,
        knob_names=nested.knob_names if nested else (),
        gpus=f"{spec.visible_gpus}x{spec.gpu_kind}"
        if spec.gpu_kind and spec.visible_gpus
        else None,
    )


def _from_python(call) -> LaunchReading | None:
    args: dict[str, object] = {}
    notes: list[str] = []
    for name, raw in call.kwargs:
        value, why = engine_value(name, raw)
        if why is None:
            args[name] = value
        elif name not in ("max_tokens", "temperature", "top_p"):
            notes.append(f"{name}= not read ({why})")
    if call.skipped:
        notes.append("not literal values (variables): " + ", ".join(call.skipped))
    if not args:
        return None
    return LaunchReading(
        argv=_vllm_argv((), args.get("model"), args),
        engine_args=args,
        read_as=f"the Python call {call.function}(...)",
        notes=tuple(notes),
    )
