"""Property tests for the launcher reader: any pasted line (random tokens of every
launcher's vocabulary, vLLM's flags, shell words, quotes, YAML punctuation) is read without
an exception, into a command line vLLM's own parser reads, and never into an engine arg
that neither the launcher's table nor a vLLM flag on the line names."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from headroom.vllm_cmd import parse_command
from headroom.vllm_cmd.flags import FLAGS_BY_DEST, lookup_option
from headroom.vllm_cmd.launcher_tables import LAUNCHERS
from headroom.vllm_cmd.launchers import _read, read_launch_line
from headroom.vllm_cmd.shell_line import split_pasted

TOOL_NAMES = sorted({name for launcher in LAUNCHERS for name in launcher.settings})
PROGRAMS = [
    "python3 -m fastchat.serve.vllm_worker", "llamafactory-cli api", "llamafactory-cli api x.yaml",
    "python3 -m verl.trainer.main_ppo", "python3 -m verl.trainer.main config=c.yaml",
    "python3 -m openrlhf.cli.train_ppo_ray", "trl vllm-serve", "accelerate launch t.py",
    "xinference launch", "python -m huggingfaceserver", "vllm serve m", "docker run --gpus 2",
    "podman run -it", "python scripts/vllm_infer.py", "nohup", "CUDA_VISIBLE_DEVICES=0,1",
    "sudo -E", "bash -c", "conda run -n x", "ray job submit --", "env A=1",
    "lm_eval --model vllm --model_args", "swift infer", "swift deploy --infer_backend vllm",
    "TP=2", "llm_configs:", "engine_kwargs:",
]  # fmt: skip
VLLM_OPTIONS = ["--tensor-parallel-size", "-tp", "--max-model-len", "--enforce-eager",
                "--no-enable-chunked-prefill", "--enable-chunked-prefill", "--gpu-memory-utilization",
                "--model", "--port", "--max_num_seqs", "--kv-cache-dtype", "--config"]  # fmt: skip
VALUES = ["2", "0.9", "8192", "true", "False", "null", "auto", "-1", "1e9", "16k", "bf16",
          "Qwen/Qwen3-8B", "'0,1'", '"device=0,1"', "{}", '{"max_num_seqs": 4}', "[1,2]", "all",
          "x.yaml", "vllm/vllm-openai:v0.6.3", "vllm/vllm-openai:latest", "''", "é", "\\"]  # fmt: skip
SHELL = ["&&", "|", ";", "&", ">", "2>&1", ">log", "\\", "-", "--", "args:", "command:",
         "image:", "nvidia.com/gpu:", "[", "]", ",", "- --model", "key:", '"', "'", "\n",
         "\\\n", "# note", "${TP}", "$TP", "run: |", "accelerators: A100:8", "count:",
         "device_ids: ['0', '1']", "- name: CUDA_VISIBLE_DEVICES", "value: '0,1'"]  # fmt: skip


def _setting(name: str, value: str, style: int) -> str:
    return [f"--{name} {value}", f"--{name}={value}", f"{name}={value}", f"{name}: {value}",
            f"--{name.replace('_', '-')}", f"+{name}={value}"][style]  # fmt: skip


WORD = st.one_of(
    st.sampled_from(PROGRAMS),
    st.builds(_setting, st.sampled_from(TOOL_NAMES), st.sampled_from(VALUES), st.integers(0, 5)),
    st.builds(lambda o, v: f"{o} {v}", st.sampled_from(VLLM_OPTIONS), st.sampled_from(VALUES)),
    st.sampled_from(VALUES),
    st.sampled_from(SHELL),
    st.text(max_size=8),
)
LINE = st.lists(WORD, max_size=14).map(" ".join)


def _named_by_the_line(tokens: list[str]) -> set[str]:
    """The engine args the vLLM flags on the line name (in any form the reader strips)."""
    named = set()
    for token in tokens:
        for variant in (token, token.strip("[],'\" ")):
            option = variant.partition("=")[0]
            for candidate in (option, "--" + option[5:] if option.startswith("--no-") else ""):
                spec = lookup_option(candidate) if candidate.startswith("-") else None
                if spec is not None:
                    named.add(spec.dest)
    return named


@settings(max_examples=400, deadline=None)
@given(LINE, st.sampled_from([None, 1, 4]))
def test_any_line_is_read_without_error_into_named_engine_args(text, gpus):
    tokens = split_pasted(text)
    reading = _read(tokens, gpus, {"x.yaml": "vllm_maxlen: 100\nvllm_config: {}\n"}.get)
    assert read_launch_line(text, gpus=gpus) is None or True  # the public entry never raises
    if reading is None:
        return
    cmd = parse_command(list(reading.argv), strict=False)
    if reading.tool_key is None:
        return  # vLLM's own flags as the person typed them (an unknown one stays theirs)
    for dest in cmd.engine_args():
        assert dest in FLAGS_BY_DEST or dest == "model", dest
    launcher = next(x for x in LAUNCHERS if x.key == reading.tool_key)
    allowed = launcher.engine_args_named() | _named_by_the_line(tokens) | {"model"}
    if launcher.engine_keys or launcher.prefixes:
        # vLLM's own names under the tool's (a YAML of engine args, engine_kwargs.vllm.X,
        # lm-eval's model_args, ms-swift's vllm_X): the text itself spells each one
        spelled = text.replace("-", "_")
        allowed |= {d for d in FLAGS_BY_DEST if d in spelled and d != "config"}
    extra = set(reading.engine_args) - allowed
    # vllm_config's JSON (LLaMA-Factory) names engine args of its own: only max_num_seqs here
    assert extra <= {"max_num_seqs"}, (extra, tokens)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(VALUES + TOOL_NAMES + ["LLM(", ")", "=", ",", "model="]),
                max_size=12).map(" ".join))  # fmt: skip
def test_python_calls_and_fragments_never_raise(text):
    reading = read_launch_line("llm = LLM(" + text)
    if reading is not None:
        assert set(reading.engine_args) <= set(FLAGS_BY_DEST)


def test_a_bare_vllm_behind_a_wrapper_is_no_command_line_and_lost_quotes_are_read():
    # Hypothesis found `bash -c vllm serve m` read as argv ('vllm',), which no parser takes
    for text in ("bash -c vllm", "nohup vllm", "sudo -E vllm"):
        assert _read(split_pasted(text), None, {}.get) is None, text
    reading = _read(split_pasted("bash -c vllm serve m --max-model-len 100"), None, {}.get)
    assert reading is not None
    assert parse_command(list(reading.argv), strict=False).engine_args()["max_model_len"] == 100
