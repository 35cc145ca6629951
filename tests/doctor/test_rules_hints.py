"""The fix vLLM's own error names (rules_hints, finding `vllm-named-fix`).

Every vLLM text is vLLM's own, from the release and file named beside it (read in the
wheels, scripts/hint_survey.py); the PyTorch OOM line is the one of
tests/fixtures/gpu-startup-logs/a100-80gb-wizardlm2-8x22b-oom.log; the incidents' texts are
those of the public threads named.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from headroom.doctor import DoctorInputs, diagnose
from headroom.doctor.context import Context
from headroom.doctor.findings import Action, Finding
from headroom.doctor.hint_knobs import KNOWN_NAMES, ResolvedFix, doctrine_problem, resolve
from headroom.doctor.rules_hints import named_fix
from headroom.doctor.steps import drop_emptied
from headroom.probes.vllm_hints import fixes_in_message
from headroom.probes.vllm_log import digest_text
from headroom.vllm_cmd import parse_command
from headroom.vllm_cmd.flags import lookup_dest

FIXTURES = Path(__file__).parents[1] / "fixtures"
TORCH_OOM = (FIXTURES / "gpu-startup-logs" / "a100-80gb-wizardlm2-8x22b-oom.log").read_text()
TORCH_OOM = TORCH_OOM.splitlines()[0]
# 0.11.0 vllm/platforms/cuda.py:245
MLA_V1 = (
    "RuntimeError: MLA attention backends require the V1 engine. Set VLLM_USE_V1=1 to enable them."
)
# 0.6.4.post1 vllm/model_executor/models/idefics3.py:361
IDEFICS = ("RuntimeError: Idefics3 cannot process 8 images in a prompt, please increase "
           "max_model_len or reduce image limit by --limit-mm-per-prompt.")  # fmt: skip
# 0.6.3 vllm/worker/openvino_worker.py:604 (the second placeholder is printed as written)
OPENVINO = ("RuntimeError: The required memory size 30.2 GiB for model is higher than the total "
            "available device memory {total_device_memory_str}. Please consider to decrease "
            "`max_num_batched_tokens` or increase `gpu_memory_utilization`")  # fmt: skip


def _findings(log: str, argv: list[str] | None = None):
    inputs = DoctorInputs(log=digest_text(log), command=parse_command(argv) if argv else None)
    return diagnose(inputs).findings


def _named(findings):
    return [f for f in findings if f.id == "vllm-named-fix"]


def _turns(finding) -> list[tuple[str, str, object]]:
    return [(a.knob, a.direction, a.value) for a in finding.actions]


def test_the_tokenizer_the_0_1_2_error_names():
    """vllm-project/vllm#569 (vLLM 0.1.2 tokenizer.py): the maintainer's answer was the
    message's own: `--tokenizer hf-internal-testing/llama-tokenizer`."""
    log = ("RuntimeError: Failed to load the tokenizer. If you are using a LLaMA-based model, use "
           "'hf-internal-testing/llama-tokenizer' instead of the original tokenizer.")  # fmt: skip
    top = _findings(log)[0]
    assert top.id == "vllm-named-fix" and top.step is None
    assert _turns(top) == [("tokenizer", "set", "hf-internal-testing/llama-tokenizer")]


def test_trust_remote_code_from_the_transformers_text_vllm_relays():
    """vllm-project/vllm#9531: the reporter's paste, lower-cased; the fix was the flag. The
    catalog knows the text now (config_needs_remote_code): its rule answers, and the named fix
    does not repeat it; the reader itself reads the same fix."""
    log = ("valueerror: loading internvl2-8b/ requires you to execute the configuration file in "
           "that repo on your local machine. make sure you have read the code there to avoid "
           "malicious use, then set the option 'trust_remote_code=true\u2019 to remove this error.")  # fmt: skip
    findings = _findings(log, ["vllm", "serve", "internvl2-8b/"])
    assert _turns(findings[0])[0] == ("trust_remote_code", "set", True)
    assert len([f for f in findings if ("trust_remote_code", "set", True) in _turns(f)]) == 1
    (fix,) = fixes_in_message(log.split(": ", 1)[1], KNOWN_NAMES)
    assert (fix.knob, fix.direction, fix.value) == ("trust_remote_code", "set", "true")


def test_an_environment_variable_of_a_release_the_catalog_does_not_know():
    top = _findings(MLA_V1)[0]
    assert top.id == "vllm-named-fix" and top.step is None
    assert _turns(top) == [("VLLM_USE_V1", "set", "1")]
    assert any("VLLM_USE_V1 is read by vLLM" in line for line in top.evidence)


def test_a_five_step_knob_takes_its_step():
    top = _findings(IDEFICS)[0]
    assert top.id == "vllm-named-fix" and top.step == 4
    assert _turns(top)[0] == ("max_model_len", "raise", None)
    assert ("limit_mm_per_prompt", "lower", None) in _turns(top)


def test_a_number_set_turns_the_knob_the_way_the_command_says():
    """0.4.3 tensorizer.py: "Please set tensor_parallel_size=1." against a TP of 4 lowers it."""
    log = ("ValueError: Loading to multiple GPUs is not currently supported with vLLM-serialized "
           "models. Please set tensor_parallel_size=1. or use a non-vLLM-serialized model, such "
           "as a serialized Hugging Face `PretrainedModel`.")  # fmt: skip
    (named,) = _named(_findings(log, ["vllm", "serve", "m", "--tensor-parallel-size", "4"]))
    assert _turns(named) == [("tensor_parallel_size", "lower", 1)]


def test_a_cuda_oom_keeps_the_messages_memory_hint_only_the_oom_way():
    """The OpenVINO worker's hint (decrease the batch or increase the utilization) beside a
    CUDA OOM: the batch goes down, the utilization is never raised anywhere. In the ranked
    list the OOM rule, which weighs the numbers, already lowers the batch (with a value), so
    the named fix, left with nothing to add, is dropped."""
    log = TORCH_OOM + "\n" + OPENVINO
    (named,) = named_fix(Context(DoctorInputs(log=digest_text(log))))
    assert _turns(named) == [("max_num_batched_tokens", "lower", None)]
    assert any(
        "not following" in line and "gpu_memory_utilization" in line for line in named.evidence
    )
    findings = _findings(log)
    assert findings[0].id.startswith("cuda-oom") and not _named(findings)
    raised = [a for f in findings for a in f.actions if a.knob == "gpu_memory_utilization"]
    assert raised and all(a.direction != "raise" for a in raised)


def test_the_doctrine_for_each_memory_failure():
    up = ResolvedFix("gpu_memory_utilization", "raise", None, "--gpu-memory-utilization", False)
    down = ResolvedFix("gpu_memory_utilization", "lower", None, "--gpu-memory-utilization", False)
    shorter = ResolvedFix("max_model_len", "lower", None, "--max-model-len", False)
    assert doctrine_problem(up, "oom") and doctrine_problem(down, "kv")
    assert doctrine_problem(up, "kv") is None and doctrine_problem(down, "oom") is None
    assert doctrine_problem(shorter, "both") is None and doctrine_problem(up, "both")
    assert doctrine_problem(up, None) is None


def test_a_line_the_catalog_knows_is_left_to_its_own_rule():
    """vLLM's KV-cache text (0.2.7-0.10.2 llm_engine.py) and the bfloat16 one (0.6.3 worker.py)
    have rules that weigh the numbers: no named fix repeats or overrides them."""
    kv = ("ValueError: The model's max seq len (32768) is larger than the maximum number of "
          "tokens that can be stored in KV cache (7344). Try increasing `gpu_memory_utilization` "
          "or decreasing `max_model_len` when initializing the engine.")  # fmt: skip
    bf16 = ("ValueError: Bfloat16 is only supported on GPUs with compute capability of at least "
            "8.0. Your Tesla T4 GPU has compute capability 7.5. You can use float16 instead by "
            "explicitly setting the`dtype` flag in CLI, for example: --dtype=half.")  # fmt: skip
    for log in (kv, bf16):
        findings = _findings(log)
        assert findings and not _named(findings)


def test_a_named_fix_ranks_below_the_rule_that_knows_the_failure():
    findings = _findings(TORCH_OOM + "\n" + MLA_V1)
    ids = [f.id for f in findings]
    assert ids[0].startswith("cuda-oom") and "vllm-named-fix" in ids


@pytest.mark.parametrize(
    "log",
    [
        "[Bug]OOM occurs after setting gpu_memory_utilization to 1.0",  # vllm-project/vllm#1298
        "How can I set the gpu_memory_utilization?",  # batsresearch/bonito#22
        '  File "/usr/lib/python3/dist-packages/vllm/platforms/cuda.py", line 244, in get_attn_backend_cls\n'
        "    raise RuntimeError(",  # the traceback's source line, no exception line after it
        "INFO 11-29 11:24:21 [logger.py:41] Received request cmpl-6a3f: prompt: '"
        + MLA_V1
        + "', params: SamplingParams(n=1, max_tokens=16), lora_request: None.",
    ],
)
def test_no_named_fix_from_a_persons_words_a_source_line_or_a_clients_prompt(log):
    assert not _named(_findings(log))


def test_a_finding_left_without_changes_is_dropped():
    kept = Finding("cuda-oom", 4, "error", "t", (), (Action("max_num_seqs", "lower", 8, "w"),))
    emptied = Finding("vllm-named-fix", None, "error", "t", ("see cuda-oom",), ())
    other = Finding("engine-died", None, "error", "t")
    assert drop_emptied([kept, emptied, other]) == [kept, other]


def test_every_knob_the_survey_names_resolves_to_a_real_one_or_is_another_tools():
    """Over vLLM's own texts (tests/fixtures/vllm_hints): a fix is proposed only on a flag of
    some release's parser or a variable vLLM reads; the rest are Docker's, pip's or keys."""
    named = json.loads((FIXTURES / "vllm_hints" / "texts.json").read_text())["named"]
    not_vllm = set()
    for entry in named:
        for fix in fixes_in_message(entry["text"].replace("{}", "8"), KNOWN_NAMES):
            resolved = resolve(fix)
            if resolved is None:
                not_vllm.add(fix.knob)
            elif fix.form != "env":
                assert resolved.knob in KNOWN_NAMES
                assert lookup_dest(resolved.knob) or resolved.note, resolved
    others = {
        "ipc", "shm_size", "cap_add",  # docker run's (shm_broadcast.py, numa_utils.py)
        "build_isolation",  # pip's --no-build-isolation (configs/mpt.py)
        "VLLM_COMPILE",  # a compilation mode's name (gpu_model_runner.py), no variable
        "seed_token",  # `vllm preload`'s own flag (entrypoints/cli/preload.py), not the server's
        "data_parallel",  # "--data-parallel-* arguments": the family, no one flag
    }  # fmt: skip
    assert not_vllm <= others, not_vllm
