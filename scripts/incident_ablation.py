"""Which of the doctor's right answers on the TRAINING split survive how else a thread shows.

    PYTHONPATH=$PWD .venv/bin/python scripts/incident_ablation.py [--kind K ...] [--id ID]

The doctor is right on far more of the training split than of the validation split: some of
its rules lean on cues the training threads happened to carry (a command line, a GPU name, a
release, one way of writing a log). This finds that brittleness without the validation split:
for every training incident the doctor answers right, it runs variants a new thread plausibly
shows that keep the deciding evidence (a person's title retyped in lower case among them),
and counts the right answers that survive.

Only `split == "train"` is ever kept, straight after loading and before anything else.

A variant returns None where it does not apply (no command line to drop, no traceback to
cut). A flip (right -> not right) is *legitimate* when the variant took away the only carrier
of the evidence (the command line's max_model_len that the log never prints, the GPU's memory
that only `--gpus` gave); `evidence_dropped` says so with the reason, and a flip it does not
excuse is one a rule should survive. The prefixes, INFO lines and progress bars added are
real vLLM output (tests/fixtures/startup-logs, gpu-startup-logs, ray; see PREFIXES).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
for path in (ROOT, ROOT / "scripts"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

# scripts beside this one
import incident_variants as V  # noqa: E402
import incident_variants_cmd as C  # noqa: E402
from incident_variants import _bench  # noqa: E402

VARIANTS: dict[str, Callable[[dict], dict | None]] = {
    "no_command": V.no_command,
    "command_in_log": C.command_in_log,
    "no_gpus": V.no_gpus,
    "gpus_count": V.gpus_count,
    "gpus_nvml_name": V.gpus_nvml_name,
    "no_model": C.no_model,
    "model_local_path": C.model_local_path,
    "no_version": V.no_version,
    "neighbour_version": V.neighbour_version,
    "version_spelled": V.version_spelled,
    "version_in_log": V.version_in_log,
    **{kind: V.prefixed(prefix) for kind, prefix in V.PREFIXES.items()},
    "tp_workers_repeat": V.tp_workers_repeat,
    "wrap80_hard": V.wrapped(80, words=False),
    "wrap80_words": V.wrapped(80, words=True),
    "fenced": V.fenced,
    "traceback_cut": V.traceback_cut,
    "info_around": V.info_around,
    "tqdm_before": V.tqdm_before,
    "words_lower": V.words_lower,
    "flags_eq": C.flag_variant("eq"),
    "flags_underscore": C.flag_variant("underscore"),
    "llm_call": C.llm_call,
    "as_api_server": C.as_api_server,
    "as_docker": C.as_docker,
    "defaults_spelled": C.defaults_spelled,
    "defaults_dropped": C.defaults_dropped,
}

DECIDING_ARGS = (
    "model",
    "tensor_parallel_size",
    "pipeline_parallel_size",
    "max_model_len",
    "gpu_memory_utilization",
    "max_num_seqs",
    "max_num_batched_tokens",
    "kv_cache_dtype",
    "quantization",
    "enforce_eager",
    "cpu_offload_gb",
    "kv_cache_memory_bytes",
)
_GPU_MEMORY_IN_LOG = re.compile(
    # PyTorch's own forms ("total capacity of", torch 2.1-'s "GiB total capacity;"), never a
    # reporter's shortening ("(GPU 0; 23.52 GiB total; 0 bytes free)", pytorch#182941)
    r"total capacity|total_gpu_memory|total GPU memory|GPU memory: [\d.]+|"
    r"memory_total|total memory",
    re.IGNORECASE,
)
_UNTAGGED_CORE_LINE = re.compile(
    r"^\s*(?:ERROR|WARNING|INFO|CRITICAL) \d\d-\d\d [\d:]+ \[core\.py:\d+\]"
)
_VERSION_IN_LOG = re.compile(r"\bv?0\.\d+\.\d+|vLLM API server version|V1 LLM engine \(v", re.I)


def _said(value: object, text: str, name: str | None = None) -> bool:
    if isinstance(value, str) and "/" in value:
        value = value.rstrip("/").rsplit("/", 1)[-1]  # a model named by its last part
    if isinstance(value, bool):
        # a boolean flag is said where the log names it in any spelling (the engine's config
        # line's enforce_eager=True, words that remove --enforce-eager); an unnamed one was
        # only on the command line
        return name is None or bool(re.search(name.replace("_", r"[-_\s]?"), text, re.I))
    if isinstance(value, float):
        return any(s in text for s in (f"{value}", f"{value:.2f}", f"{value:g}"))
    return str(value) in text


def evidence_dropped(kind: str, incident: dict) -> str | None:
    """Why a flip under `kind` is legitimate (the variant took the only carrier of the
    evidence away), or None when the evidence is still in what the doctor is given."""
    log = incident["log"]
    if kind == "no_command":
        from headroom.vllm_cmd.command import CommandLineError, parse_command

        try:
            args = parse_command(incident["command"], strict=False).engine_args()
        except CommandLineError:
            return "the command line did not parse as vLLM's"
        missing = [
            f"{k}={v}" for k, v in args.items() if k in DECIDING_ARGS and not _said(v, log, k)
        ]
        return "the log does not say " + ", ".join(missing) if missing else None
    if kind in ("no_gpus", "gpus_count"):
        if kind == "no_gpus" and not re.match(r"1x", incident["gpus"]):
            return "the GPU count was only in --gpus"
        if _GPU_MEMORY_IN_LOG.search(log):
            return None
        return "the log does not say the GPU's memory"
    if kind == "no_model":
        model = (incident.get("model") or "").rsplit("/", 1)[-1]
        return None if model and model.lower() in log.lower() else "the log does not name it"
    if kind in ("no_version", "neighbour_version"):
        if _VERSION_IN_LOG.search(log):
            return None
        return "the release decides, and only the incident said it"
    if kind.startswith("prefix_") and not incident.get("vllm_version"):
        if any(_UNTAGGED_CORE_LINE.match(line) for line in log.split("\n")):
            # rules_v1_switch dates V1's engine core by its line's form: 0.8.x-0.9.x print
            # core.py's lines with no process tag; a tag (0.10.x and every V1 release since
            # tag them "(EngineCore_DP0 pid=N)", vllm/v1/engine/utils.py) or another logger
            # header takes the only carrier of the release away
            return "the release was read from the untagged [core.py:N] line's form"
    if kind == "version_in_log" and _flag_gone(incident):
        # vLLM prints its version line only once argparse took every flag (api_server.py
        # run_server, after the CLI parsed): the line says the release did accept the flag
        return "the version line says vLLM got past its argument parser with the flag"
    if kind == "traceback_cut":
        rest = V.traceback_cut(incident)
        if rest is not None and not re.search(r"(?:Error|Exception|Warning)\b", rest["log"]):
            return "the traceback's frames were all the log said"
    return None


def _flag_gone(incident: dict) -> bool:
    """The thread's answer drops a flag the stated release no longer has (release_flags)."""
    from headroom.doctor.release_flags import gone_in

    expected, version = incident["expected"], incident.get("vllm_version")
    if expected.get("direction") != "unset" or not expected.get("knob") or not version:
        return False
    return gone_in(expected["knob"], str(version)) is not None


def right(outcome) -> bool:
    return bool(outcome.right_knob and outcome.right_step)


def training_incidents() -> list[dict]:
    bench = _bench()
    return [i for i in bench.load_incidents() if i["split"] == "train"]


def ablate(incidents: list[dict], kinds: list[str] | None = None) -> dict[str, dict]:
    """{kind: {"applied", "survived", "flips": [(id, got, legit-reason or None)]}} over the
    incidents the doctor answers right as given (training incidents only)."""
    bench = _bench()
    incidents = [i for i in incidents if i["split"] == "train"]
    base = bench.evaluate(incidents)
    right_ones = [o.incident for o in base if right(o)]
    table: dict[str, dict] = {}
    for kind in kinds or list(VARIANTS):
        variants = [(i, VARIANTS[kind](i)) for i in right_ones]
        variants = [(i, v) for i, v in variants if v is not None]
        outcomes = bench.evaluate([v for _, v in variants])
        row: dict = {"applied": len(variants), "survived": 0, "flips": []}
        for (original, _), outcome in zip(variants, outcomes, strict=True):
            if right(outcome):
                row["survived"] += 1
            else:
                got = f"step {outcome.got_step} {outcome.got_turn} exit {outcome.code}"
                reason = evidence_dropped(kind, original)
                row["flips"].append((original["id"], got, reason))
        table[kind] = row
    return table


def render(table: dict[str, dict], right_count: int) -> str:
    lines = [
        f"right as given: {right_count}",
        f"{'variant':<22} {'applied':>7} {'survived':>8} {'flips':>5} {'legit':>5} {'to fix':>6}",
    ]
    for kind, row in table.items():
        legit = sum(1 for *_, reason in row["flips"] if reason)
        lines.append(
            f"{kind:<22} {row['applied']:>7} {row['survived']:>8} {len(row['flips']):>5}"
            f" {legit:>5} {len(row['flips']) - legit:>6}"
        )
    for kind, row in table.items():
        for incident_id, got, reason in row["flips"]:
            tag = f"legit: {reason}" if reason else "EVIDENCE KEPT"
            lines.append(f"  {kind:<20} {incident_id}: {got}  [{tag}]")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    incidents = training_incidents()
    if "--id" in argv:
        wanted = set(argv[argv.index("--id") + 1].split(","))
        incidents = [i for i in incidents if i["id"] in wanted]
    kinds = [argv[k + 1] for k, a in enumerate(argv) if a == "--kind"] or None
    table = ablate(incidents, kinds)
    base_right = sum(1 for o in _bench().evaluate(incidents) if right(o))
    print(render(table, base_right))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
