"""The memory model against real vLLM start-up logs: the estimate's error, term by term.

Each case is a real start-up (tests/fixtures/startup-logs, tests/fixtures/gpu-startup-logs;
sources in their SOURCES.md) that names the model, the GPUs, the flags and the release and
prints the KV figures. The estimate gets only what a user would type (model, --gpus, flags,
--vllm-version); every number the log prints is compared with the estimate's own term:
weights, activation, non-torch, CUDA graphs, and the KV cache (GiB, and tokens). Where the log
gives no activation or non-torch figure, their sum is the log's residual (budget - weights -
KV, with the budget = total x utilization) and is compared as one "act+non-torch" term.

Goal: the KV estimate's median error <= 5 % and worst <= 15 %, V0 and V1 reported apart.
Cases that only check terms (the log does not name the GPU) print their terms and stay out
of the goal.

    .venv/bin/python benchmarks/memory_model.py [--json]
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from headroom.doctor.gpu_spec import parse_gpu_spec  # noqa: E402
from headroom.doctor.memory_model import Knobs, account  # noqa: E402
from headroom.doctor.model_bytes import GIB, kv_bytes_per_token  # noqa: E402
from headroom.doctor.model_table import find_model  # noqa: E402
from headroom.doctor.versions import is_v1, parse_version  # noqa: E402

FIXTURES = ROOT / "tests" / "fixtures"


@dataclass(frozen=True)
class Case:
    fixture: str  # path under tests/fixtures
    model: str
    gpus: str | None  # None: the log does not name the GPU (terms only)
    knobs: Knobs
    version: str
    note: str = ""
    extra: dict = field(default_factory=dict)  # figures the reporter stated beside the log
    nvlink: bool | None = None  # links between the GPUs when the setup says otherwise


CASES = (
    # V0 engine
    Case("gpu-startup-logs/rtx3090-llama3.1-8b-maxlen20000-v0.6.log",
         "meta-llama/Llama-3.1-8B-Instruct", "1xRTX3090", Knobs(max_model_len=20000), "0.6.4"),
    Case("gpu-startup-logs/rtx3090-llama3.1-8b-maxlen29000-fail-v0.6.log",
         "meta-llama/Llama-3.1-8B-Instruct", "1xRTX3090", Knobs(max_model_len=29000), "0.6.4"),
    Case("gpu-startup-logs/rtx3090-qwen1.5-7b-gptq-int4-maxlen32768-fail-v0.3.log",
         "qwen/Qwen1.5-7B-Chat-GPTQ-Int4", "1xRTX3090", Knobs(quantization="gptq"), "0.3.0"),
    Case("gpu-startup-logs/h200x8-llama-70b-tp8-v0.6.4.log", "meta-llama/Llama-3.1-70B-Instruct",
         "8xH200", Knobs(tp=8, gpu_memory_utilization=0.95), "0.6.4",
         note="peak_torch_memory is weights + activation"),
    Case("gpu-startup-logs/rtx4090x2-r1-distill-qwen-14b-tp2-fail-v0.7.log",
         "deepseek-ai/DeepSeek-R1-Distill-Qwen-14B", "2xRTX4090",
         Knobs(tp=2, gpu_memory_utilization=0.98, max_model_len=131072), "0.7.2",
         note="KV tokens are the tighter GPU's (it held other memory): GiB of worker 0 used",
         extra={"kv_gib": 8.69, "non_torch_gib": 0.25, "activation_gib": 0.19}),
    # V1 engine
    Case("startup-logs/dennislee22-vllm-7B-1gpuA10080GB-0.25GRAM-v0.10.1.1.log",
         "Qwen/Qwen2-7B-Instruct", "1xA100-80GB",
         Knobs(max_model_len=16384, gpu_memory_utilization=0.25), "0.10.1.1"),
    Case("startup-logs/dennislee22-vllm-7B-1gpuA10080GB-0.5GRAM-v0.10.1.1.log",
         "Qwen/Qwen2-7B-Instruct", "1xA100-80GB",
         Knobs(max_model_len=16384, gpu_memory_utilization=0.5), "0.10.1.1"),
    Case("startup-logs/dennislee22-vllm-7B-2gpuA10080GB-0.25GRAM-same-node-v0.10.1.1.log",
         "Qwen/Qwen2-7B-Instruct", "2xA100-80GB",
         Knobs(tp=2, max_model_len=16384, gpu_memory_utilization=0.25), "0.10.1.1",
         note="two Kubernetes pods of one GPU each: NCCL between pods, no NVLink",
         nvlink=False),
    Case("startup-logs/dennislee22-vllm-7B-2gpuA10080GB-0.5GRAM-same-node-v0.10.1.1.log",
         "Qwen/Qwen2-7B-Instruct", "2xA100-80GB",
         Knobs(tp=2, max_model_len=16384, gpu_memory_utilization=0.5), "0.10.1.1",
         note="two Kubernetes pods of one GPU each: NCCL between pods, no NVLink",
         nvlink=False),
    Case("startup-logs/dennislee22-vllm-7B-2gpuA10040GB-0.5GRAM-diff-nodes-v0.10.1.1.log",
         "Qwen/Qwen2-7B-Instruct", "1xA100-40GB",
         Knobs(tp=2, max_model_len=16384, gpu_memory_utilization=0.5), "0.10.1.1",
         note="TP 2 over two nodes (Ray): one GPU per node", nvlink=False),
    Case("startup-logs/dennislee22-vllm-120B-4gpuA10080GB-0.8GRAM-diff-nodes-v0.10.1.1.log",
         "openai/gpt-oss-120b", "4xA100-80GB",
         Knobs(tp=4, max_model_len=16384, gpu_memory_utilization=0.8), "0.10.1.1",
         note="TP 4 over nodes (Ray); MXFP4 experts, half the layers sliding-window",
         nvlink=False),
    Case("gpu-startup-logs/h100x4-qwen3-235b-a22b-fp8-tp4.log", "Qwen/Qwen3-235B-A22B-FP8",
         "4xH100", Knobs(tp=4), "0.9.2",
         note="started with an LMCache connector (its buffers are not modelled)"),
    # terms only: the GPU is not named
    Case("gpu-startup-logs/gpu-qwen3-30b-a3b-fp8-kv-fp8-v1.log", "Qwen/Qwen3-30B-A3B-FP8", None,
         Knobs(kv_cache_dtype="fp8", max_model_len=100000), "0.10.2"),
    Case("gpu-startup-logs/gpu1-qwen3-14b-maxlen32768-v1.log", "Qwen/Qwen3-14B", None,
         Knobs(max_model_len=32768), "0.11.0"),
)  # fmt: skip

_NUM = r"([\d.]+)"


def read_log(text: str) -> dict[str, float]:
    """The memory figures a real start-up log prints (first worker's where there are many)."""
    found: dict[str, float] = {}

    def first(key: str, pattern: str, scale: float = 1.0) -> None:
        match = re.search(pattern, text)
        if match and key not in found:
            found[key] = float(match.group(1).replace(",", "")) * scale

    first("weights_gib", r"Model loading took " + _NUM + r" ?GiB")
    first("weights_gib", r"Loading model weights took " + _NUM + r" ?GB")
    first("kv_gib", r"Available KV cache memory: " + _NUM + r" GiB")
    first("kv_gib", r"kv_cache_size=" + _NUM + r"GiB")
    first("kv_tokens", r"GPU KV cache size: ([\d,]+) tokens")
    first("kv_tokens", r"# GPU blocks: (\d+)", 16)
    first("kv_tokens", r"GPU blocks: (\d+)", 16)
    first("kv_tokens", r"stored in KV cache \((\d+)\)")
    first("graphs_gib", r"Graph capturing finished in \d+ secs, took " + _NUM + r" GiB")
    first("non_torch_gib", r"non_torch_memory=" + _NUM + r"GiB")
    first("peak_torch_gib", r"peak_torch_memory=" + _NUM + r"GiB")
    first("total_gib", r"total_gpu_memory=" + _NUM + r"GiB")
    first(
        "activation_gib", r"GiB for peak activation" and r", " + _NUM + r" GiB for peak activation"
    )
    return found


def rel(estimate: float, real: float) -> float:
    return abs(estimate - real) / real if real else float("inf")


def evaluate(case: Case) -> dict[str, object]:
    text = (FIXTURES / case.fixture).read_text(encoding="utf-8")
    real = {**read_log(text), **case.extra}
    model = find_model(case.model)
    row: dict[str, object] = {
        "case": Path(case.fixture).name,
        "version": case.version,
        "engine": "V1" if is_v1(parse_version(case.version)) else "V0",
        "note": case.note,
        "terms": {},
    }
    if model is None:
        row["skipped"] = f"{case.model} is not in the model table"
        return row
    terms: dict[str, dict[str, float]] = {}
    if case.gpus is None:  # terms only: weights, and KV bytes per token through the log's KV
        gpu = parse_gpu_spec("1xH100")
        acc = account(model, gpu, case.knobs, case.version)
        if "weights_gib" in real:
            terms["weights"] = {"estimate": acc.weights_gib, "log": real["weights_gib"]}
        if "kv_gib" in real and "kv_tokens" in real:
            per = kv_bytes_per_token(model, case.knobs.tp, case.knobs.pp, case.knobs.kv_cache_dtype)
            tokens = int(real["kv_gib"] * GIB // (per * 16)) * 16
            terms["kv_tokens_from_log_gib"] = {"estimate": tokens, "log": real["kv_tokens"]}
        row["terms"] = terms
        row["goal"] = False
        return row
    gpu = parse_gpu_spec(case.gpus)
    if case.nvlink is not None:
        gpu = replace(gpu, nvlink=case.nvlink)
    acc = account(model, gpu, case.knobs, case.version)
    budget = acc.gpu_usable_gib * acc.utilization
    if "weights_gib" in real:
        terms["weights"] = {"estimate": acc.weights_gib, "log": real["weights_gib"]}
    elif "peak_torch_gib" in real:  # V0's peak_torch_memory = weights + activation peak
        terms["weights+activation"] = {
            "estimate": round(acc.weights_gib + acc.activation_gib, 2),
            "log": real["peak_torch_gib"],
        }
    if "activation_gib" in real:
        terms["activation"] = {"estimate": acc.activation_gib, "log": real["activation_gib"]}
    elif "peak_torch_gib" in real and "weights_gib" in real:
        terms["activation"] = {
            "estimate": acc.activation_gib,
            "log": round(real["peak_torch_gib"] - real["weights_gib"], 2),
        }
    if "non_torch_gib" in real:
        terms["non-torch"] = {"estimate": acc.overhead_gib, "log": real["non_torch_gib"]}
    if "graphs_gib" in real:
        terms["graphs"] = {"estimate": acc.cudagraph_gib, "log": real["graphs_gib"]}
    if "kv_gib" in real and "weights_gib" in real and "activation_gib" not in real:
        graphs = acc.cudagraph_gib if acc.cudagraph_in_budget else 0.0
        residual = budget - real["weights_gib"] - real["kv_gib"] - graphs
        terms["act+non-torch"] = {
            "estimate": round(acc.activation_gib + acc.overhead_gib, 2),
            "log": round(residual, 2),
        }
    if "kv_gib" in real:
        terms["kv_gib"] = {"estimate": acc.kv_cache_gib, "log": real["kv_gib"]}
    if "kv_tokens" in real and "kv_gib" not in case.extra:
        terms["kv_tokens"] = {"estimate": acc.kv_capacity_tokens, "log": real["kv_tokens"]}
    row["terms"] = terms
    row["goal"] = not case.note.startswith("started with")
    key = "kv_tokens" if "kv_tokens" in terms else "kv_gib"
    if key in terms:
        row["kv_error"] = round(rel(terms[key]["estimate"], terms[key]["log"]), 4)
        row["kv_metric"] = key
    return row


def summary(rows: list[dict]) -> dict[str, dict[str, float]]:
    out = {}
    for engine in ("V0", "V1", "all"):
        errors = [
            r["kv_error"]
            for r in rows
            if "kv_error" in r and r.get("goal") and engine in (r["engine"], "all")
        ]
        if errors:
            out[engine] = {
                "cases": len(errors),
                "median": round(statistics.median(errors), 4),
                "worst": round(max(errors), 4),
                "within_15": sum(e <= 0.15 for e in errors),
            }
    return out


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    rows = [evaluate(c) for c in CASES]
    totals = summary(rows)
    if args.json:
        print(json.dumps({"cases": rows, "summary": totals}, indent=2))
        return 0
    for engine in ("V0", "V1"):
        print(f"\n{engine} engine")
        for r in (r for r in rows if r["engine"] == engine):
            head = f"  {r['case']} (vLLM {r['version']})"
            if "skipped" in r:
                print(f"{head}: skipped, {r['skipped']}")
                continue
            kv = (
                f"KV error {r['kv_error']:.1%} ({r['kv_metric']})"
                if "kv_error" in r
                else "terms only"
            )
            print(f"{head}: {kv}{'' if r.get('goal') else ' [not in the goal]'}")
            if r["note"]:
                print(f"      note: {r['note']}")
            for name, t in r["terms"].items():
                est, real = t["estimate"], t["log"]
                diff = est - real
                print(f"      {name:<22} estimate {est:>12,.2f}  log {real:>12,.2f}  "
                      f"diff {diff:>+10,.2f} ({rel(est, real):.1%})")  # fmt: skip
    print("\nKV estimate error (goal: median <= 5 %, worst <= 15 %)")
    for engine, s in totals.items():
        print(f"  {engine:<3} {s['cases']:>2} cases: median {s['median']:.1%}, worst "
              f"{s['worst']:.1%}, {s['within_15']} within 15 %")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
