"""A checkpoint that is already quantized (its quantization_config, or --quantization on the
command line) is never offered "quantize it" again; the count-only `--gpus 4xGPU` is kept;
a partial model config is reported in `lacking`, not an error."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from support.fixtures import FIXTURES

from headroom.doctor import DoctorInputs, diagnose
from headroom.doctor.gpu_spec import GpuSpecError, parse_gpu_spec, read_gpus_option
from headroom.probes.model import shape_from_config
from headroom.probes.vllm_log import digest_text
from headroom.vllm_cmd import parse_command

OOM_LOG = (FIXTURES / "gpu-startup-logs" / "a100-80gb-wizardlm2-8x22b-oom.log").read_text()
# The OOM of a real log, with a model the built-in table does not know: what the doctor knows
# of it is only what each test gives (a config, or nothing).
LINE = (
    "python3 -m vllm.entrypoints.openai.api_server --model some-org/unknown-model "
    "--dtype auto --max-model-len 8192 --gpu-memory-utilization 0.50 --enforce-eager"
)
MIXTRAL = json.loads((FIXTURES / "model-configs" / "mixtral-8x7b.json").read_text())
AWQ = json.loads(
    (FIXTURES / "model-configs" / "quantization" / "qwen3.6-35b-a3b-awq.json").read_text()
)


def _weights_oom(command: str, model=None):
    return diagnose(
        DoctorInputs(
            command=parse_command(command),
            log=digest_text(OOM_LOG),
            gpu_spec=parse_gpu_spec("1xA100"),
            model=model,
        )
    )


def _knobs(diagnosis) -> set[str]:
    top = diagnosis.findings[0]
    assert top.id == "cuda-oom-weights"
    return {a.knob for a in top.actions}


def test_an_unquantized_checkpoint_is_offered_quantization():
    assert "quantization" in _knobs(_weights_oom(LINE))  # nothing known: TP, then quantize
    assert "quantization" in _knobs(_weights_oom(LINE, shape_from_config(MIXTRAL, "mixtral")))


def test_quantization_on_the_command_line_means_no_second_quantization():
    knobs = _knobs(_weights_oom(LINE + " --quantization awq"))
    assert "quantization" not in knobs and "tensor_parallel_size" in knobs


def test_a_quantized_checkpoint_config_means_no_second_quantization():
    shape = shape_from_config({**MIXTRAL, "quantization_config": AWQ}, "mixtral-awq")
    assert shape.quantization == "awq" and shape.quantization_bits == 4
    diagnosis = _weights_oom(LINE, shape)
    assert "quantization" not in _knobs(diagnosis)
    partial = shape_from_config({"quantization_config": AWQ, "architectures": ["X"]}, "awq-only")
    assert not partial.sizable  # too little to size, enough to know it is quantized
    assert "quantization" not in _knobs(_weights_oom(LINE, partial))


def test_gpu_count_without_memory_is_kept():
    spec, count = read_gpus_option("4xGPU")
    assert spec is None and count == 4
    spec, count = read_gpus_option("2xH100")
    assert spec is not None and count == 2
    for bad in ("2000xH100", "", "4xGPU:0.1"):
        with pytest.raises(GpuSpecError):
            read_gpus_option(bad)
    shape = shape_from_config(MIXTRAL, "mixtral")
    command = parse_command("vllm serve m -tp 4")
    without = diagnose(DoctorInputs(command=command, model=shape))
    counted = diagnose(DoctorInputs(command=command, model=shape, gpu_count=4))
    assert without.steps[2].status == "unknown"  # step 3 needs the GPU count
    assert counted.steps[2].status == "ok" and "4 GPU(s) per node" in counted.steps[2].why
    assert "no GPU description (--gpus or NVML)" not in counted.lacking


def test_doctor_cli_keeps_the_count_and_says_the_memory_is_unknown(capsys):
    from headroom.cli import doctor

    code = doctor.main(["--gpus", "4xGPU", "--json", "--", "vllm", "serve", "m", "-tp", "4"])
    doc = json.loads(capsys.readouterr().out)
    assert code in (0, 1)
    assert any(line.startswith("GPU memory unknown (--gpus 4xGPU") for line in doc["lacking"])
    assert "4 GPU(s) per node" in doc["steps"][2]["why"]


def test_a_partial_model_config_is_named_in_lacking():
    partial = shape_from_config({k: v for k, v in MIXTRAL.items() if k != "num_hidden_layers"}, "m")
    diagnosis = diagnose(DoctorInputs(command=parse_command("vllm serve m"), model=partial))
    assert any("does not give the layer count" in line for line in diagnosis.lacking)
    whole = replace(partial, num_layers=32, unread=())
    assert not any("does not give" in line for line in diagnose(
        DoctorInputs(command=parse_command("vllm serve m"), model=whole)).lacking)  # fmt: skip


def test_step_two_never_claims_a_tp_divides_heads_it_does_not():
    shape = shape_from_config(MIXTRAL, "mixtral")  # 32 heads, 8 KV heads
    bad = diagnose(DoctorInputs(command=parse_command("vllm serve m -tp 3"), model=shape))
    assert bad.steps[1].status == "fail" and "does not divide" in bad.steps[1].why
    good = diagnose(DoctorInputs(command=parse_command("vllm serve m -tp 4"), model=shape))
    assert good.steps[1].status == "ok" and "TP 4 divides" in good.steps[1].why

    heads_only = shape_from_config({"num_attention_heads": 32, "num_key_value_heads": 8}, "h")
    assert not heads_only.sizable
    partial = diagnose(DoctorInputs(command=parse_command("vllm serve m -tp 3"), model=heads_only))
    assert partial.steps[1].status == "fail"  # the heads alone decide step 2
