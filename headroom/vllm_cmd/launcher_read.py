"""Which launcher a command is, and its settings read into vLLM engine args (the tables of
`launcher_tables`; how each tool turns its settings into engine args is noted there)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

from headroom.vllm_cmd.flags import lookup_dest
from headroom.vllm_cmd.launcher_args import (
    Setting,
    as_int,
    as_json_object,
    engine_value,
    normal_name,
    read_settings,
    vllm_spec,
    yaml_scalar,
)
from headroom.vllm_cmd.launcher_config import config_settings
from headroom.vllm_cmd.launcher_tables import (
    LLAMA_FACTORY,
    LLAMA_FACTORY_INFER,
    LM_EVAL,
    MS_SWIFT,
    RAY_SERVE_LLM,
    TRL_TRAINER,
    VERL,
    XINFERENCE,
    Launcher,
)
from headroom.vllm_cmd.scan import scan_tokens
from headroom.vllm_cmd.shell_line import VARIABLE

_DTYPES = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32", "half": "float16",
           "float": "float32"}  # fmt: skip
# (prompt, response) defaults a launcher sums into max_model_len when only one is said.
_LENGTH_DEFAULTS = {"verl": (512, 512), "easyr1": (512, 512), "openrlhf": (1024, 1024),
                    "llamafactory_vllm_infer": (2048, 1024)}  # fmt: skip
_LF_SUBCOMMANDS = {"api", "chat", "webchat", "eval", "export", "train", "webui", "env"}
ReadFile = Callable[[str], "str | None"]


@dataclass(frozen=True)
class ToolReading:
    launcher: Launcher
    engine_args: dict[str, object]
    renamed: tuple[tuple[str, str], ...]
    defaults: tuple[str, ...]
    visible_gpus: int | None
    visible_from: str | None
    notes: tuple[str, ...]
    style: str = "flags"  # how the line gave them: "flags" (--x v) or "settings" (x=v, x: v)
    knob_names: tuple[tuple[str, str], ...] = ()  # (engine arg, the tool's name) not said
    gpus: str | None = None  # COUNTxNAME the settings name (Ray Serve's accelerator_type)


def read_tool(
    launcher: Launcher,
    args: list[str],
    env: Mapping[str, str],
    gpus: int | None,
    read_file: ReadFile | None,
) -> ToolReading:
    notes: list[str] = []
    if launcher is LLAMA_FACTORY and args[:1] and args[0] in _LF_SUBCOMMANDS:
        args = args[1:]
    from_file, file_notes, file_named = config_settings(launcher, args, read_file)
    notes.extend(file_notes)
    typed = [
        replace(s, name=launcher.aliases.get(s.name, s.name))
        for s in read_settings(args, lambda name: _is_bool(launcher, name))
    ]
    if launcher is LM_EVAL:
        typed = _lm_eval_model_args(typed)
    settings: dict[str, Setting] = {s.name: s for s in [*from_file, *typed]}
    out: dict[str, object] = {}
    renamed: list[tuple[str, str]] = []
    lengths: dict[str, int] = {}
    unknown: set[str] = set()
    visible, visible_from = _visible(env)

    def put(engine: str, raw: object, shown: str) -> None:
        if isinstance(raw, str) and VARIABLE.search(raw):
            notes.append(f"{shown} is {raw}, a variable the line does not set")
            unknown.add(engine)  # said, so no default of the launcher's stands in for it
            return
        value, why = engine_value(engine, raw)
        if why is not None:
            notes.append(f"{shown} not read ({why})")
            unknown.add(engine)
            return
        out[engine] = value
        if normal_name(shown) != engine:
            renamed.append((shown, engine))

    for name, s in settings.items():
        shown = s.typed
        entry = launcher.settings.get(name)
        if entry is not None:
            count = _apply(entry, s, put, lengths)
            if count is not None:
                visible, visible_from = count, f"{shown} {yaml_scalar(s.value)}"
            continue
        if name in launcher.own or s.typed == "":
            continue
        prefix = next((p for p in launcher.prefixes if name.startswith(p)), None)
        if prefix is not None:
            rest = name[len(prefix) :]
            if rest != "config" and lookup_dest(rest) is not None:
                put(rest, s.value, shown)
            continue
        if launcher.engine_keys and not s.typed.startswith("-") and _engine_key(name):
            put(name, s.value, shown)  # `max_model_len: 8192` in a YAML of engine args
            continue
        _vllm_flag(launcher, args, s, put)
    not_vllm = _engine_not_vllm(launcher, settings)
    if not_vllm:
        return ToolReading(launcher, {}, (), (), visible, visible_from, (not_vllm,))
    if launcher is RAY_SERVE_LLM and "model_source" not in settings and "model_id" in settings:
        put("model", settings["model_id"].value, "model_id")  # model_source defaults to it
    if launcher is TRL_TRAINER and str(yaml_scalar(_raw(settings, "vllm_mode"))) == "server":
        return ToolReading(launcher, {k: v for k, v in out.items() if k == "model"}, (), (),
                           visible, visible_from,
                           ("the trainer asks a `trl vllm-serve` server (vllm_mode server): "
                            "the engine's settings are on that server's line",))  # fmt: skip
    _derive(launcher, out, lengths, visible, gpus, notes, renamed)
    defaults: list[str] = []
    file_unread = file_named and bool(file_notes)
    if not file_unread:
        for key, value in launcher.defaults.items():
            if key not in out and key not in unknown and not (key == "max_model_len" and lengths):
                out[key] = value
                defaults.append(f"{key} {value}")
    elif launcher.defaults:
        notes.append(f"{launcher.name}'s defaults not assumed: the config it names sets them")
    if launcher is XINFERENCE and "model" not in out:
        model = yaml_scalar(_raw(settings, "model_name"))
        size = str(yaml_scalar(_raw(settings, "size_in_billions"))).replace("_", ".")
        if model:  # its registry's name and size: `-n qwen2.5-instruct -s 0_5` is 0.5B
            out["model"] = f"{model}-{size}b" if size else str(model)
    style = "flags" if any(s.typed.startswith("-") for s in typed) else "settings"
    gpus_named = _ray_gpus(out, settings) if launcher is RAY_SERVE_LLM else None
    return ToolReading(launcher, out, tuple(renamed), tuple(defaults), visible, visible_from,
                       tuple(notes), style, _knob_names(launcher, renamed), gpus_named)  # fmt: skip


def _apply(entry: tuple[str, str], s: Setting, put, lengths: dict[str, int]) -> int | None:
    """One of the table's settings, turned into engine args the way its `how` says (see
    launcher_tables); the GPU count it gives for `gpus`, else None."""
    engine, how = entry
    if how == "length":
        n = as_int(s.value)
        if n is not None and n > 0:
            lengths[engine] = n
    elif how == "gpus":
        return _gpu_count(s.value)
    elif how == "engine_args":
        mapping = as_json_object(s.value) if isinstance(s.value, str) else None
        for key, value in (mapping or {}).items():
            if lookup_dest(str(key)) is not None:
                put(str(key), value, f"{s.typed}.{key}")
    elif how == "dtype":
        word = str(yaml_scalar(s.value)).lower()
        put(engine, _DTYPES.get(word, word), s.typed)
    elif how in ("above_one", "above_one_on"):
        n = as_int(s.value)
        if n is not None and how == "above_one_on":
            put(engine, n > 1, s.typed)
        elif n is not None and n > 1:
            put(engine, n, s.typed)
    elif how == "set_on":
        if str(yaml_scalar(s.value)).lower() not in ("", "null", "none", "false"):
            put(engine, True, s.typed)
    else:
        put(engine, s.value, s.typed)
    return None


def _ray_gpus(out: Mapping[str, object], settings: Mapping[str, Setting]) -> str | None:
    """Ray places TP x PP GPUs of its accelerator_type for each replica (LLMConfig)."""
    if "accelerator_type" not in settings:
        return None
    world = 1
    for key in ("tensor_parallel_size", "pipeline_parallel_size"):
        value = out.get(key)
        world *= value if isinstance(value, int) and value > 0 else 1
    return f"{world}x{yaml_scalar(settings['accelerator_type'].value)}"


# The knobs the doctor's findings turn: where the line does not say them, the note gives
# the tool's own name for each, so an answer in vLLM's names can be typed into the tool.
_KNOBS = ("tensor_parallel_size", "gpu_memory_utilization", "max_model_len", "max_num_seqs",
          "max_num_batched_tokens", "enforce_eager", "enable_chunked_prefill",
          "pipeline_parallel_size")  # fmt: skip


def _knob_names(launcher: Launcher, renamed: list[tuple[str, str]]) -> tuple[tuple[str, str], ...]:
    said = {engine for _, engine in renamed}
    names: dict[str, str] = {}
    for name, (engine, how) in launcher.settings.items():
        if engine in _KNOBS and engine not in said and how in ("value", "above_one"):
            if name.replace("model_args.", "") != engine:
                names.setdefault(engine, name)
    return tuple(names.items())


def _engine_key(name: str) -> bool:
    """A YAML key read as the engine arg of its name (not `config`: a file of the
    person's machine, nor `model`, which each table names itself)."""
    return name not in ("config", "model") and lookup_dest(name) is not None


def _lm_eval_model_args(settings: list[Setting]) -> list[Setting]:
    """`--model_args pretrained=X,tensor_parallel_size=2` (lm_eval/utils.py
    simple_parse_args_string: split on commas, then on the first '='), and the newer CLI's
    `--model_args a=1 b=2` (nargs="+"), as `model_args.KEY` settings."""
    out: list[Setting] = []
    for s in settings:
        if s.name == "model_args" and isinstance(s.value, str):
            for part in (p for p in s.value.split(",") if "=" in p):
                key, _, value = part.partition("=")
                out.append(replace(s, name=f"model_args.{normal_name(key.strip())}",
                                   value=value, typed=f"model_args {key.strip()}"))  # fmt: skip
        elif not s.typed.startswith("-") and "." not in s.name:
            out.append(replace(s, name=f"model_args.{s.name}", typed=f"model_args {s.name}"))
        else:
            out.append(s)
    return out


def _engine_not_vllm(launcher: Launcher, settings: Mapping[str, Setting]) -> str | None:
    """Why the line does not run vLLM at all (lm-eval's `--model hf`, ms-swift's
    `--infer_backend lmdeploy`, Xinference's `--model-engine transformers`), else None."""
    said = {
        LM_EVAL.key: ("model", ("vllm", "vllm-vlm")),
        MS_SWIFT.key: ("infer_backend", ("vllm",)),
        XINFERENCE.key: ("model_engine", ("vllm",)),
        LLAMA_FACTORY.key: ("infer_backend", ("vllm",)),
    }.get(launcher.key)
    if said is None or said[0] not in settings:
        return None
    value = str(yaml_scalar(settings[said[0]].value)).lower()
    if value in said[1]:
        return None
    return f"{launcher.name} runs {value!r} here, not vLLM ({said[0]}): no vLLM engine args"


def _raw(settings: Mapping[str, Setting], name: str) -> str | bool:
    found = settings.get(name)
    return found.value if found is not None else ""


def _is_bool(launcher: Launcher, name: str) -> bool:
    entry = launcher.settings.get(name)
    if entry is not None:
        spec = lookup_dest(entry[0]) if entry[1] == "value" else None
        return spec is not None and spec.kind in ("bool", "flag")
    if name in ("use_vllm", "no_register", "trust_remote_code", "enable_thinking"):
        return True
    spec = vllm_spec("--" + name.replace("_", "-"), exact=False)
    return spec is not None and spec.kind in ("bool", "flag")


def _vllm_flag(launcher: Launcher, args: list[str], s: Setting, put) -> None:
    """A setting that is not the launcher's own: read when it is one of vLLM's flags (any
    spelling vLLM takes where the launcher hands vLLM's flags through, else only vLLM's
    exact name: the launcher would refuse it, but the person meant vLLM's flag)."""
    if not s.typed.startswith("-"):
        return
    if vllm_spec(s.typed, exact=not launcher.vllm_flags) is None:
        return
    occurrences = scan_tokens(args[s.start : s.end], strict=False)
    if occurrences and occurrences[0].spec is not None:
        put(occurrences[0].dest, occurrences[0].value, s.typed)


def _visible(env: Mapping[str, str]) -> tuple[int | None, str | None]:
    value = env.get("CUDA_VISIBLE_DEVICES")
    if value is None:
        return None, None
    devices = [d for d in value.strip("'\"").split(",") if d.strip()]
    if not devices or devices == ["-1"]:
        return None, None
    return len(devices), f"CUDA_VISIBLE_DEVICES={value}"


def _gpu_count(raw: str | bool) -> int | None:
    text = str(yaml_scalar(raw))
    if text.isdigit():
        return int(text) if int(text) > 0 else None
    items = [x for x in text.split(",") if x.strip().isdigit()]
    return len(items) if items and len(items) == len(text.split(",")) else None


def _derive(launcher, out, lengths, visible, gpus, notes, renamed) -> None:
    """What each launcher computes itself (its source, in launcher_tables)."""
    if "max_model_len" not in out and lengths:
        prompt_default, response_default = _LENGTH_DEFAULTS.get(launcher.key, (0, 0))
        prompt = lengths.get("prompt", prompt_default)
        response = lengths.get("response", response_default)
        if prompt and response:
            out["max_model_len"] = prompt + response
            renamed.append(("prompt + response length", "max_model_len"))
            if launcher is VERL:
                notes.append("verl before v0.7 gives vLLM prompt + response length as "
                             "max_model_len; v0.7+ the model's own length")  # fmt: skip
    seen = visible if visible is not None else gpus
    if launcher in (LLAMA_FACTORY, XINFERENCE) and "tensor_parallel_size" not in out:
        if seen:
            out["tensor_parallel_size"] = seen
            renamed.append(("every GPU it sees", "tensor_parallel_size"))
        else:
            notes.append(f"{launcher.name} runs tensor parallel over every GPU it sees; "
                         "the line does not say how many")  # fmt: skip
    if launcher is LLAMA_FACTORY_INFER and "tensor_parallel_size" not in out and seen:
        pp = out.get("pipeline_parallel_size")
        out["tensor_parallel_size"] = max(seen // (pp if isinstance(pp, int) and pp > 0 else 1), 1)
        renamed.append(("GPUs it sees // pipeline_parallel_size", "tensor_parallel_size"))
