"""Which launcher a command runs: its program (`python -m MODULE`, a script, a program,
through `accelerate launch`/`torchrun`/`ray job submit --`) and the vocabulary of its
settings, against the tables of `launcher_tables`."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence

from headroom.vllm_cmd.flags import lookup_dest
from headroom.vllm_cmd.launcher_args import normal_name
from headroom.vllm_cmd.launcher_tables import (
    EASYR1,
    FASTCHAT,
    KSERVE,
    LLAMA_FACTORY,
    LLAMA_FACTORY_INFER,
    LM_EVAL,
    MS_SWIFT,
    OPENRLHF,
    RAY_SERVE_LLM,
    TRL_SERVE,
    TRL_TRAINER,
    VERL,
    VLLM_YAML,
    XINFERENCE,
    Launcher,
)

_PYTHON = re.compile(r"python(\d+(\.\d+)?)?(\.exe)?$")
# Runners of a training script: the script and its flags come after the runner's options.
_SCRIPT_RUNNERS = {"accelerate", "torchrun", "deepspeed", "ray"}


def program_of(words: Sequence[str]) -> tuple[str, str, list[str]]:
    """(kind, name, arguments): ("module", "fastchat.serve.vllm_worker", ...),
    ("script", "vllm_infer.py", ...) or ("program", "llamafactory-cli", ...)."""
    words = list(words)
    for _ in range(4):  # accelerate launch ... / ray job submit -- python ...
        if not words:
            return "program", "", []
        if words[0].startswith("-") or "=" in words[0] or words[0].endswith(":"):
            return "program", "", words  # settings alone (an args: list, pasted overrides)
        program = os.path.basename(words[0])
        if _PYTHON.fullmatch(program):
            j = 1
            while j < len(words) and words[j].startswith("-") and words[j] != "-m":
                j += 2 if words[j] in ("-W", "-X") else 1
            if j + 1 < len(words) and words[j] == "-m":
                return "module", words[j + 1], words[j + 2 :]
            if j < len(words):
                return "script", os.path.basename(words[j]), words[j + 1 :]
            return "program", program, []
        if program in _SCRIPT_RUNNERS:
            if "--" in words:
                words = words[words.index("--") + 1 :]
                continue
            at = next((k for k, w in enumerate(words) if w.endswith(".py") or w == "-m"), None)
            if at is None:
                return "program", program, words[1:]
            if words[at] == "-m":
                return ("module", words[at + 1], words[at + 2 :]) if at + 1 < len(words) else (
                    "program", program, [])  # fmt: skip
            return "script", os.path.basename(words[at]), words[at + 1 :]
        return "program", program, words[1:]
    return "program", "", []


def identify(words: Sequence[str]) -> tuple[Launcher, list[str]] | None:
    """The launcher these words run, and the arguments it reads; None when none is known."""
    kind, name, args = program_of(words)
    if name == "vllm" or name.startswith("vllm."):
        return None  # vLLM's own launcher: its flags are read as they are
    names = {normal_name(t.partition("=")[0]) for t in args if t.startswith("-") or "=" in t}
    names |= {normal_name(t[:-1].strip("'\"")) for t in args if t.endswith(":")}  # YAML keys
    if name.startswith("fastchat.serve.vllm_worker") or name == "vllm_worker.py":
        return FASTCHAT, args
    if name == "vllm_infer.py":
        return LLAMA_FACTORY_INFER, args
    if name in ("llamafactory-cli", "lmf") or name.startswith("llamafactory"):
        return LLAMA_FACTORY, args
    if name == "trl" and args[:1] == ["vllm-serve"] or name.startswith("trl.scripts.vllm_serve"):
        return TRL_SERVE, args[1:] if name == "trl" else args
    if name == "xinference" and args[:1] == ["launch"]:
        return XINFERENCE, args[1:]
    if name in ("lm_eval", "lm-eval") or name.startswith("lm_eval"):
        return LM_EVAL, args[1:] if args[:1] == ["run"] else args
    if name == "swift" and args[:1] and not args[0].startswith("-") or name.startswith("swift.cli"):
        return MS_SWIFT, args[1:] if name == "swift" else args
    if name.startswith("huggingfaceserver") or (
        "model_id" in names and names & {"backend", "model_name", "model_dir"}
    ):
        return KSERVE, args
    if name.startswith("openrlhf.") or names & {"pretrain", "vllm_num_engines", "vllm.num_engines"}:
        return OPENRLHF, args
    if names & {"use_vllm", "vllm_mode"} or (name == "trl" and args):
        return TRL_TRAINER, args
    if any(n.startswith(("worker.rollout.", "worker.actor.")) for n in names):
        return EASYR1, args
    if any(n.startswith("actor_rollout_ref.") for n in names) or name.startswith("verl.trainer"):
        return (EASYR1 if name == "verl.trainer.main" else VERL), args
    if names & set(LLAMA_FACTORY.settings) - {"model_name_or_path", "cache_dir"} or (
        "infer_backend" in names
    ):
        return LLAMA_FACTORY, args
    if names & {"vllm_tensor_parallel_size", "vllm_gpu_memory_utilization"}:
        return TRL_TRAINER, args
    if names & {"llm_configs", "model_loading_config", "engine_kwargs"}:
        return RAY_SERVE_LLM, args
    yaml_keys = [t for t in args if t.endswith(":") and lookup_dest(t[:-1].strip("'\""))]
    if len({t for t in yaml_keys if t[:-1] not in ("model", "port", "host")}) >= 2:
        return VLLM_YAML, args  # vLLM's own engine args pasted as YAML (a --config file)
    return None
