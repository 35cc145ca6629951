"""Which of vLLM's own user-facing texts the signature catalog knows (read-only walk).

    python scripts/catalog_coverage.py /tmp/vllm-src [--missing] [--topic NAME] [--json OUT]

For every release of vllm_catalog.RELEASES unpacked under DIR/<release>/src/vllm, parses
each user-facing .py file (OUT_OF_SCOPE: model files, kernels, other accelerators...) and lists the messages of `raise X("...")`, `logger.warning/error/...("...")`
and `assert cond, "..."` (f-strings, %-formats, .format and `+` joined: the fixed words kept,
every value replaced by "{}"). A text counts as a candidate when it speaks of one of the
TOPICS (memory, KV cache, swap, lengths, batch limits, parallel sizes and heads, dtype and
quantization, CUDA graphs, NCCL/Gloo/Ray/shm, engine and workers). Each candidate (the same
words in several releases count once) is rendered with "8" for its values, given the prefix
it reaches a log with ("ValueError: ", "AssertionError: ", none for a logger) and classified
by the log reader: "known" when a catalog entry other than the generic ones recognises it.

Prints the coverage per topic; --missing lists the texts the catalog does not know (with
their releases and first source place), --json writes the whole table. Nothing under DIR is
written.
"""

from __future__ import annotations

import ast
import json
import re
import sys
from collections import defaultdict
from pathlib import Path

# Topics, first match wins (order: the specific before the broad).
TOPICS: tuple[tuple[str, str], ...] = (
    ("swap", r"swap[ _]space|cpu memory|cpu blocks|swap"),
    ("kv_cache", r"kv[ _-]?cache|cache blocks|gpu blocks|num_gpu_blocks|block_size|kv_cache_memory"),
    ("lengths", r"max_model_len|max_seq_len|max model len|model length|max_position|context length"),
    ("batch", r"max_num_seqs|max_num_batched_tokens|batched tokens|chunked prefill|chunked_prefill"),
    ("parallel", r"tensor[ _]parallel|pipeline[ _]parallel|world[ _]size|attention heads|kv heads"
                 r"|num_heads|num_kv_heads|data[ _]parallel|expert[ _]parallel|divisible"),
    ("dtype_quant", r"dtype|bfloat16|bf16|float16|fp8|quantiz|compute capability|awq|gptq"),
    ("cuda_graph", r"cuda ?graph|cudagraph|enforce[_ ]eager|graph capture"),
    ("comms", r"nccl|gloo|\bray\b|placement group|shared memory|/dev/shm|\bshm\b|all[_ -]?reduce"),
    ("memory", r"out of memory|gpu memory|memory utilization|not enough memory|\boom\b|memory"),
    ("engine", r"engine core|enginecore|engine_use_ray|worker .*died|engine .*(?:died|failed|dead)"
               r"|initialization failed|scheduler"),
)  # fmt: skip
_TOPICS = [(name, re.compile(rx, re.I)) for name, rx in TOPICS]
LOG_CALLS = {"warning", "warning_once", "warn", "error", "critical", "exception", "fatal"}
# Catalog entries that match any exception or NCCL line: they do not make a text "known".
GENERIC = {"exception", "traceback", "config_value_error", "nccl_warn", "nccl_transport"}
# Where a user's texts come from: configuration, engine, scheduler, workers, executors,
# distributed set-up, platforms, loading, quantization configs, the servers. Left out: model
# files, kernels and attention backends (developer asserts), KV transfer connectors, other
# accelerators (XPU, HPU, Neuron, TPU, OpenVINO, CPU), speculative decoding, LoRA, vendored code.
OUT_OF_SCOPE = re.compile(
    r"third_party|vllm_flash_attn|/models?/|/attention/|attention_backends|kv_transfer|ec_transfer"
    r"|weight_transfer|/kernels/|/ops/|compilation/passes|hisparse|kv_offload|eplb|lora/"
    r"|transformers_utils|(?:xpu|hpu|neuron|openvino|tpu|cpu)[_./]|spec_decode|speculative"
    r"|multimodal|/layers/(?!quantization/)|/fused_moe/|benchmark"
)
# The start-up path every server goes through (configuration checks, scheduler, workers, the
# executors, the memory profile): printed as a second total, the texts most users meet.
START_UP_PATH = re.compile(
    r"vllm/(?:config|engine/arg_utils|engine/llm_engine|engine/async_llm_engine|core/scheduler"
    r"|core/block_manager|worker/worker\.py|worker/cache_engine|worker/model_runner|v1/worker/gpu_worker"
    r"|v1/worker/utils|v1/engine/core|v1/core/kv_cache_utils|executor/ray|executor/multiproc"
    r"|platforms/cuda|distributed/parallel_state|model_executor/model_loader)"
)
_FORMAT = re.compile(r"%[-+ #0]*\d*(?:\.\d+)?[sdifrxXeEgG%]|\{[^{}]*\}")


def _text(node: ast.AST) -> str | None:
    """The message's fixed words, values as "{}"; None when no literal text is in it."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        parts = []
        for value in node.values:
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                parts.append(value.value)
            else:
                parts.append("{}")
        return "".join(parts)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _text(node.left), _text(node.right)
        if left is None and right is None:
            return None
        return (left if left is not None else "{}") + (right if right is not None else "{}")
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
        return _text(node.left)
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "format"
    ):
        return _text(node.func.value)
    return None


def _normal(text: str) -> str:
    return re.sub(r"\s+", " ", _FORMAT.sub("{}", text)).strip()


def _name(node: ast.AST) -> str:
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ""


def texts_of(source: str) -> list[tuple[str, str, int, str]]:
    """(origin, exception type or logger method, line, text) of one file's messages."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call) and node.exc.args:
            text = _text(node.exc.args[0])
            if text:
                out.append(("raise", _name(node.exc), node.lineno, text))
        elif isinstance(node, ast.Assert) and node.msg is not None:
            text = _text(node.msg)
            if text:
                out.append(("assert", "AssertionError", node.lineno, text))
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in LOG_CALLS
            and "logger" in _name(node.func.value).lower()
            and node.args
        ):
            text = _text(node.args[0])
            if text:
                out.append(("log", node.func.attr, node.lineno, text))
    return out


def topic_of(text: str) -> str | None:
    return next((name for name, rx in _TOPICS if rx.search(text)), None)


def walk(root: Path, releases) -> dict[str, dict]:
    """Candidates by normalised text: origin, type, topic, releases, first place."""
    table: dict[str, dict] = {}
    for release in releases:
        base = root / release / "src"
        for path in sorted((base / "vllm").rglob("*.py")):
            rel = str(path.relative_to(base))
            if OUT_OF_SCOPE.search(rel):
                continue
            for origin, typ, line, text in texts_of(path.read_text(errors="replace")):
                words = _normal(text)
                if len(words.replace("{}", "").strip()) < 12:
                    continue
                topic = topic_of(words)
                if topic is None:
                    continue
                row = table.setdefault(
                    words,
                    {"origin": origin, "type": typ, "topic": topic, "releases": [],
                     "where": f"{release}: {rel}:{line}"},
                )  # fmt: skip
                if release not in row["releases"]:
                    row["releases"].append(release)
    return table


# What a "{}" stands for when a text is rendered: a number, a device name, a mode.
FILLERS = ("8", "GPU", "PreemptionMode.RECOMPUTE")


def rendered(words: str, origin: str, typ: str, filler: str = "8") -> str:
    sample = words.replace("{}", filler)
    if origin == "raise":
        return f"{typ or 'Exception'}: {sample}"
    if origin == "assert":
        return f"AssertionError: {sample}"
    return sample


def known_by(classify, words: str, origin: str, typ: str) -> str | None:
    """The catalog entry that recognises the text (rendered with each filler), else None."""
    for filler in FILLERS:
        event = classify(rendered(words, origin, typ, filler), 1)
        if event is not None and event.signature not in GENERIC:
            return event.signature
    return None


def main(argv: list[str]) -> int:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from headroom.probes.vllm_catalog import RELEASES
    from headroom.probes.vllm_log_patterns import classify_line

    root = Path(argv[0])
    table = walk(root, [r for r in RELEASES if (root / r / "src" / "vllm").is_dir()])
    per_topic: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for words, row in table.items():
        row["known_by"] = known_by(classify_line, words, row["origin"], row["type"])
        per_topic[row["topic"]][0] += 1
        per_topic[row["topic"]][1] += row["known_by"] is not None
    topic = argv[argv.index("--topic") + 1] if "--topic" in argv else None
    if "--missing" in argv:
        for words, row in sorted(table.items(), key=lambda kv: (kv[1]["topic"], kv[0])):
            if row["known_by"] is None and (topic is None or row["topic"] == topic):
                span = f"{row['releases'][0]}..{row['releases'][-1]}"
                print(f"[{row['topic']}] {row['origin']}:{row['type']} ({span}) {row['where']}")
                print(f"    {words[:300]}")
    if "--json" in argv:
        Path(argv[argv.index("--json") + 1]).write_text(json.dumps(table, indent=1))
    total = [sum(v[0] for v in per_topic.values()), sum(v[1] for v in per_topic.values())]
    core = [row for row in table.values() if START_UP_PATH.search(row["where"])]
    core_known = sum(row["known_by"] is not None for row in core)
    print(f"{'topic':<12} {'texts':>6} {'known':>6}")
    for name, _ in TOPICS:
        count, known = per_topic.get(name, [0, 0])
        print(f"{name:<12} {count:>6} {known:>6} ({100 * known / max(count, 1):.0f}%)")
    print(f"{'all':<12} {total[0]:>6} {total[1]:>6} ({100 * total[1] / max(total[0], 1):.0f}%)")
    share = 100 * core_known / max(len(core), 1)
    print(f"{'start-up':<12} {len(core):>6} {core_known:>6} ({share:.0f}%)  (START_UP_PATH files)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
