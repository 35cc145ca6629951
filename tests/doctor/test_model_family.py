"""Whether a model is multimodal (headroom/doctor/model_family.py), from an engine arg vLLM
takes only for one: "`limit_mm_per_prompt` is only supported for multimodal models." (0.6.3
and 0.9.2 config.py), whatever the model's name says."""

from __future__ import annotations

import shlex

from headroom.doctor import DoctorInputs
from headroom.doctor.context import Context
from headroom.doctor.model_family import model_family
from headroom.vllm_cmd import parse_command

# OpenBMB/AgentCPM-GUI#55: the name names no family the table or the name patterns know
AGENTCPM = (
    "vllm serve model/AgentCPM-GUI --served-model-name AgentCPM-GUI --tensor_parallel_size 2 "
    "--trust-remote-code --limit-mm-per-prompt image=10"
)


def _family(command: str):
    # the line as the CLI reads it: an older release's "image=10" syntax, leniently
    cmd = parse_command(shlex.split(command), strict=False)
    ctx = Context(DoctorInputs(log="启动vllm后报显存不足", command=cmd))
    return model_family(ctx)


def test_a_multimodal_only_arg_names_a_multimodal_model():
    found = _family(AGENTCPM)
    assert found is not None and found.multimodal and not found.encoder_decoder
    assert "--limit-mm-per-prompt" in found.how


def test_without_it_the_name_alone_says_nothing():
    assert _family(AGENTCPM.replace(" --limit-mm-per-prompt image=10", "")) is None
