"""A sentence instead of a log (headroom/doctor/rules_words.py): the symptom plus what the
words say (GPU counts, heads, a utilization blamed, a setting said to work), with the command
line and the GPUs, mapped onto the five-step table, one family per test. The texts are issue
titles and sentences of public threads (named beside each); every family also has the cases
where the rule must say nothing, because a wrong direction is worse than no answer."""

from __future__ import annotations

import pytest

from headroom.doctor import DoctorInputs, diagnose
from headroom.doctor.gpu_spec import parse_gpu_spec
from headroom.vllm_cmd import parse_command


def _diagnose(log: str, command: str | None = None, gpus: str | None = None):
    return diagnose(
        DoctorInputs(
            log=log,
            command=parse_command(command.split()) if command else None,
            gpu_spec=parse_gpu_spec(gpus) if gpus else None,
        )
    )


def _turns(diagnosis) -> set[tuple[str, str]]:
    return {(a.knob, a.direction) for f in diagnosis.findings for a in f.actions}


def _ids(diagnosis) -> set[str]:
    return {f.id for f in diagnosis.findings}


# --- a memory symptom on one GPU of several: step 1, raise TP --------------------------------


@pytest.mark.parametrize(
    ("log", "command", "gpus", "tp"),
    [
        (  # vllm-project/vllm#9977 (issue title); 2 x 3080 Ti in the thread
            "[Usage]: Can I use model parallelism? I faced a problem that OOM when 1 gpu, even "
            "though I have multi-gpu",
            None,
            "2xRTX3080Ti:12",
            2,
        ),
        (  # QwenLM/Qwen#870: the first card's memory grows until it overflows; 8 x A100 40G
            "采用vllm_wrapper进行推理，发现第一张卡的显存增加直到溢出，其他卡的显存不变。",
            "--tensor-parallel-size 1",
            "8xA100:40",
            2,
        ),
        ("OOM on a single GPU although the box has 4 GPUs", None, None, 2),
    ],
)
def test_an_oom_on_one_gpu_of_several_raises_tp(log, command, gpus, tp):
    d = _diagnose(log, command, gpus)
    top = d.findings[0]
    assert top.id == "words-one-gpu-of-several" and top.step == 1
    assert (top.actions[0].knob, top.actions[0].direction, top.actions[0].value) == (
        "tensor_parallel_size",
        "raise",
        tp,
    )
    assert ("tensor_parallel_size", "lower") not in _turns(d)


@pytest.mark.parametrize(
    ("log", "command", "gpus"),
    [
        # chatchat-space/Langchain-Chatchat#3202: one GPU in use, but no memory symptom
        ("[BUG] vllm多卡启动显示成功，但是实际上只有一张显卡被占用", None, "2xRTX4090"),
        # the command line already spreads the model
        ("OOM when 1 gpu, even though I have multi-gpu", "--tensor-parallel-size 2", None),
        # --gpus says this machine has one GPU: the words' "several" is not this machine
        ("OOM when 1 gpu, even though I have multi-gpu", None, "1xA100:80"),
        # no contrast: an OOM on two GPUs
        ("OOM on 2 GPUs", None, "2xA100:80"),
    ],
)
def test_no_tp_raise_without_one_gpu_of_several_and_a_memory_symptom(log, command, gpus):
    assert "words-one-gpu-of-several" not in _ids(_diagnose(log, command, gpus))


@pytest.mark.parametrize(
    ("log", "gpus", "tp"),
    [
        # chatchat-space/Langchain-Chatchat#3202 (title); two GPUs in its config ('gpus': '0,1')
        ("[BUG] vllm多卡启动显示成功，但是实际上只有一张显卡被占用", "2xRTX4090", 2),
        # chatchat-space/Langchain-Chatchat#3300 (title): two configured, one occupied
        (
            "vllm模式启动，配置使用2个gpu，为什么只占用一块gpu，以下是server_config.py详细配置信息",
            None,
            2,
        ),
    ],
)
def test_one_gpu_at_work_of_several_without_a_failure_spreads_over_them(log, gpus, tp):
    d = _diagnose(log, None, gpus)
    top = d.findings[0]
    assert top.id == "words-one-gpu-used" and top.severity == "warning"
    assert (top.actions[0].knob, top.actions[0].direction, top.actions[0].value) == (
        "tensor_parallel_size",
        "raise",
        tp,
    )


@pytest.mark.parametrize(
    ("log", "command"),
    [
        # the words do not count the GPUs, and nothing else does
        ("[BUG] vllm多卡启动显示成功，但是实际上只有一张显卡被占用", None),
        # the command line already spreads the model
        (
            "vllm模式启动，配置使用2个gpu，为什么只占用一块gpu，以下是server_config.py详细配置信息",
            "--tensor-parallel-size 2",
        ),  # fmt: skip
        # vllm-project/vllm#6156 (title): three of four GPUs at work is another matter
        (
            "[Bug]: When starting deepseek-coder-v2-lite-instruct with vllm on 4 GPUs, one of them "
            "is at 0%.",
            None,
        ),  # fmt: skip
    ],
)
def test_no_idle_gpu_finding_without_a_count_or_when_tp_is_set(log, command):
    assert "words-one-gpu-used" not in _ids(_diagnose(log, command))


# --- heads the GPUs do not divide: TP that divides, PP across the rest ------------------------


def test_heads_over_gpus_with_memory_short_is_tp_times_pp():
    """zai-org/GLM-V#111 (title): 12 heads allow 4 cards, and 4 cards of the smaller 8-card
    machine do not hold the model: TP 4 x PP 2 (the thread's own fix)."""
    d = _diagnose(
        "GLM-4.5v受到GLM-4.1v的限制（固定12头），导致只能4卡部署，在显存较少的8卡设备上无法部署"
    )
    top = d.findings[0]
    assert top.id == "words-heads-over-gpus" and top.step == 3
    act = top.actions[0]
    assert (act.knob, act.direction, act.value) == ("pipeline_parallel_size", "raise", 2)
    assert dict(act.also) == {"tensor_parallel_size": 4}
    assert len(top.actions) == 1  # memory is short: TP 4 alone is not offered


def test_heads_no_gpu_count_above_one_divides_is_pp_over_all():
    """vllm-project/vllm#4232, a commenter: 64 heads, 3 GPUs, and the model does not fit on 2:
    only PP uses all three."""
    d = _diagnose(
        "Is it possible to run a model with 64 heads on 3 GPUs? The model does not fit on 2 "
        "GPUs and I only have 3 on a single node?"
    )
    top = d.findings[0]
    assert top.id == "words-heads-over-gpus"
    act = top.actions[0]
    assert (act.knob, act.direction, act.value, dict(act.also)) == (
        "pipeline_parallel_size",
        "raise",
        3,
        {"tensor_parallel_size": 1},
    )
    assert [a.knob for a in top.actions] == ["pipeline_parallel_size"]


def test_heads_without_a_memory_statement_also_offer_the_dividing_tp_alone():
    """MIV-XJTU/FSDrive#21's case in words: 12 heads, 8 GPUs fail; TP 4 x PP 2 first, TP 4 on
    four GPUs second (a lower TP than the 8 that failed)."""
    d = _diagnose("12 heads: vLLM fails to start on 8 GPUs", None, "8xA100:80")
    top = d.findings[0]
    assert top.id == "words-heads-over-gpus"
    assert [(a.knob, a.direction, a.value) for a in top.actions] == [
        ("pipeline_parallel_size", "raise", 2),
        ("tensor_parallel_size", "lower", 4),
    ]


@pytest.mark.parametrize(
    ("log", "command"),
    [
        ("32 heads on 8 GPUs fails to start", None),  # 8 divides 32: not a heads problem
        ("固定12头，8卡", None),  # no failure said
        ("12 heads, 8 GPUs, fails to start", "--tensor-parallel-size 4 -pp 2"),  # already so
    ],
)
def test_no_heads_layout_when_the_count_divides_nothing_failed_or_it_is_in_place(log, command):
    assert "words-heads-over-gpus" not in _ids(_diagnose(log, command))


# --- a utilization below the default, blamed for a failed start: raise it ---------------------


def test_a_low_utilization_blamed_is_raised_to_the_default():
    """netease-youdao/QAnything#257 (title): the pure-Python install starts vLLM at 0.61 and a
    12 GB RTX 3060 cannot run it; the thread raised the utilization."""
    d = _diagnose(
        "[BUG] 纯python环境安装gpu利用率默认参数为0.61导致rtx3060用不起。（手动修正代码见正文）",
        "--gpu-memory-utilization 0.61",
        "1xRTX3060:12",
    )
    top = d.findings[0]
    assert top.id == "words-low-utilization" and top.step == 4
    act = top.actions[0]
    assert (act.knob, act.direction) == ("gpu_memory_utilization", "raise")
    assert act.value in (0.9, 0.92)  # the release's default (0.92 from 0.20, release unknown)
    assert ("gpu_memory_utilization", "lower") not in _turns(d)


@pytest.mark.parametrize(
    ("log", "command"),
    [
        # an OOM beside the low value: the OOM rule lowers it, the words cannot say which
        ("--gpu-memory-utilization 0.5 causes OOM at start-up", None),
        ("gpu利用率0.5导致显存不足", None),
        # the words and the command line disagree on the value
        ("gpu利用率默认参数为0.61导致rtx3060用不起", "--gpu-memory-utilization 0.8"),
        # "too high": blamed the other way
        ("gpu_memory_utilization 0.5 is too high, the start-up fails", None),
        # at the default or above: nothing to raise to
        ("gpu_memory_utilization 0.95 causes the start-up to fail", None),
        # named, not blamed
        ("cannot load llama 3.2 3b on a 16gb gpu when gpu_memory_utilisation=1", None),
    ],
)
def test_no_utilization_raise_when_the_words_do_not_settle_it(log, command):
    d = _diagnose(log, command)
    assert "words-low-utilization" not in _ids(d)
    if "OOM" in log or "显存不足" in log:
        assert ("gpu_memory_utilization", "raise") not in _turns(d)


# --- a setting the person says works ---------------------------------------------------------


def test_a_kv_dtype_said_to_work_is_set():
    """noonghunna/club-3090#47 (title): the TurboQuant KV cache fails at 90K on 2 x 3080 20 GB;
    the reporter's fp8_e5m2 KV cache works (the maintainer's clean workaround)."""
    d = _diagnose(
        "[bug] cliff 2 90K dual-turbo 2x3080 using turboquant - working with fp8_e5m2",
        "--tensor-parallel-size 2 --kv-cache-dtype turboquant_3bit_nc",
        "2xRTX3080:20",
    )
    top = d.findings[0]
    assert top.id == "words-works-with" and top.step == 5
    assert (top.actions[0].knob, top.actions[0].value) == ("kv_cache_dtype", "fp8_e5m2")


def test_eager_said_to_work_is_set():
    d = _diagnose("Engine crashes during start-up on 2 GPUs, works fine with --enforce-eager")
    top = d.findings[0]
    assert top.id == "words-works-with" and top.step == 4
    assert (top.actions[0].knob, top.actions[0].value) == ("enforce_eager", True)


@pytest.mark.parametrize(
    ("log", "command"),
    [
        ("[bug] OOM at 90K - working with fp8_e5m2", "--kv-cache-dtype fp8_e5m2"),  # already set
        ("Runs on 2 GPUs, working with fp8_e5m2", None),  # no trouble said
        ("[bug] crashes, not working with fp8_e5m2", None),  # negated
    ],
)
def test_no_setting_from_words_that_do_not_say_it_fixes_a_failure(log, command):
    assert "words-works-with" not in _ids(_diagnose(log, command))


# --- a real vLLM error line always wins -----------------------------------------------------


def test_a_real_error_line_silences_every_words_rule():
    log = "\n".join(
        [
            "OOM when 1 gpu, even though I have multi-gpu; 固定12头，8卡无法部署",
            "ValueError: No available memory for the cache blocks. Try increasing "
            "`gpu_memory_utilization` when initializing the engine.",
        ]
    )
    ids = _ids(_diagnose(log, None, "8xA100:40"))
    assert not any(i.startswith("words-") for i in ids)
