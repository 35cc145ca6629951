"""Parallel sizes against the GPUs and the model (headroom/doctor/rules_parallel_sizes.py).

Every log text is vLLM's own (the catalog's entries, headroom/probes/vllm_catalog/parallel.py
and failures.py; provenance.py names the files and releases that print them), with numbers of
real layouts: DeepSeek-V3/R1 (61 layers) on two nodes of eight GPUs, Llama-3.1-70B (80 layers)."""

from __future__ import annotations

import pytest

from headroom.doctor import DoctorInputs, diagnose
from headroom.doctor.gpu_spec import parse_gpu_spec
from headroom.doctor.rules_parallel_sizes import vllm_split
from headroom.probes.vllm_catalog import PREFIX_FORMS, SIGNATURES
from headroom.vllm_cmd import parse_command

BY_ID = {s.id: s for s in SIGNATURES}
WORLD = BY_ID["world_size_too_large"].examples[0]
RAY = (
    BY_ID["ray_tp_above_local_gpus"].examples[0].replace("(8)", "(16)", 1).replace("(4)", "(8)", 1)
)


def _top(log, argv=None, gpus=None, nodes=1, version=None):
    d = diagnose(
        DoctorInputs(
            log=log,
            command=parse_command(argv) if argv else None,
            gpu_spec=parse_gpu_spec(gpus) if gpus else None,
            nodes=nodes,
            vllm_version=version,
        )
    )
    return d.findings[0]


def _turns(finding):
    return [(a.knob, a.direction, a.value) for a in finding.actions]


def test_on_two_nodes_the_world_size_is_kept_tp_per_node_pp_across():
    log = WORLD.replace("(8)", "(16)").replace("(4)", "(8)")
    top = _top(log, ["vllm", "serve", "deepseek-ai/DeepSeek-V3", "-tp", "16"], "8xH200", nodes=2)
    turns = _turns(top)
    assert top.id == "world-size-too-large" and top.step == 3
    assert turns[0] == ("tensor_parallel_size", "lower", 8)
    assert ("pipeline_parallel_size", "raise", 2) in turns
    assert ("nnodes", "set", 2) in turns  # vLLM's own text: set '--nnodes' appropriately


def test_nnodes_only_where_the_release_has_it_and_not_twice():
    log = WORLD.replace("(8)", "(16)").replace("(4)", "(8)")
    argv = ["vllm", "serve", "deepseek-ai/DeepSeek-V3", "-tp", "16"]
    assert "nnodes" not in {t[0] for t in _turns(_top(log, argv, "8xH200", 2, "0.11.0"))}
    given = [*argv, "--nnodes", "2"]
    assert "nnodes" not in {t[0] for t in _turns(_top(log, given, "8xH200", 2))}


def test_on_one_node_the_layout_is_searched_on_its_gpus():
    # TP 8 x PP 2 = 16 on a node of 8: TP 8 alone holds Llama-3.1-70B on 80 GB GPUs.
    log = WORLD.replace("(8)", "(16)").replace("(4)", "(8)")
    top = _top(log, ["vllm", "serve", "meta-llama/Llama-3.1-70B-Instruct", "-tp", "8", "-pp", "2"],
               "8xA100-80GB")  # fmt: skip
    assert ("pipeline_parallel_size", "lower", 1) in _turns(top)
    assert not any(t[0] == "tensor_parallel_size" and t[1] == "raise" for t in _turns(top))


def test_the_012_wording_of_the_tp_reads_the_same():
    log = BY_ID["world_size_too_large"].examples[1]  # "Tensor parallel size (8) cannot be ..."
    top = _top(
        log, ["vllm", "serve", "meta-llama/Llama-3.1-70B-Instruct", "-tp", "8"], "4xA100-80GB"
    )
    assert top.id == "world-size-too-large"
    assert _turns(top)[0] == ("tensor_parallel_size", "lower", 4)


def test_rays_warning_on_a_cluster_is_tp_across_nodes():
    argv = [
        "vllm",
        "serve",
        "deepseek-ai/DeepSeek-R1",
        "-tp",
        "16",
        "--distributed-executor-backend",
        "ray",
    ]
    top = _top(RAY, argv, "8xH100", nodes=2)
    assert top.id == "tp-across-nodes"
    assert _turns(top)[0] == ("tensor_parallel_size", "lower", 8)


def test_rays_warning_without_nodes_keeps_the_world_for_a_cluster():
    top = _top(RAY, ["vllm", "serve", "deepseek-ai/DeepSeek-R1", "-tp", "16"], "8xH100")
    assert top.id == "world-size-too-large" and top.severity == "warning"
    assert _turns(top)[:2] == [
        ("tensor_parallel_size", "lower", 8),
        ("pipeline_parallel_size", "raise", 2),
    ]


def test_dp_ranks_above_the_gpus_lower_dp():
    log = BY_ID["dp_local_rank_out_of_bounds"].examples[0]
    top = _top(log, ["vllm", "serve", "Qwen/Qwen3-30B-A3B", "--data-parallel-size", "4", "-tp", "2"],
               "4xH100")  # fmt: skip
    assert top.id == "dp-exceeds-gpus" and _turns(top) == [("data_parallel_size", "lower", 2)]


def test_ray_dp_master_node_lowers_the_local_ranks_to_what_fits():
    log = BY_ID["dp_ranks_not_enough"].examples[0]
    argv = ["vllm", "serve", "m", "--data-parallel-size", "8", "--data-parallel-size-local", "4"]
    assert _turns(_top(log, argv)) == [("data_parallel_size_local", "lower", 2)]


def test_dp_without_the_gpus_is_advice_without_a_value():
    top = _top(BY_ID["dp_local_rank_out_of_bounds"].examples[0], ["vllm", "serve", "m", "-dp", "4"])
    assert _turns(top) == [("data_parallel_size", "lower", None)]


@pytest.mark.parametrize(
    ("layers", "pp", "split"),
    [(61, 2, [31, 30]), (80, 3, [27, 27, 26]), (61, 4, [15, 15, 16, 15]), (32, 4, [8, 8, 8, 8])],
)
def test_vllms_own_split_puts_the_remainder_before_the_last_stage(layers, pp, split):
    # get_pp_indices (distributed/utils.py 0.8.5+): partitions[-i] += 1 for i in 2..r+1
    assert vllm_split(layers, pp) == split and sum(split) == layers


def test_a_partition_that_does_not_sum_to_the_layers_gets_vllms_split():
    top = _top(
        BY_ID["pp_partition_sum"].examples[0], ["vllm", "serve", "m", "-tp", "8", "-pp", "2"]
    )
    assert _turns(top) == [("VLLM_PP_LAYER_PARTITION", "set", "31,30")]


def test_a_partition_of_the_wrong_length_reads_the_layers_from_the_model():
    log = BY_ID["pp_partition_count"].examples[0]
    top = _top(log, ["vllm", "serve", "meta-llama/Llama-3.1-70B-Instruct", "-tp", "8", "-pp", "2"])
    assert _turns(top) == [("VLLM_PP_LAYER_PARTITION", "set", "40,40")]
    unknown = _top(BY_ID["pp_partition_string"].examples[0], ["vllm", "serve", "/m", "-pp", "2"])
    assert _turns(unknown) == [("VLLM_PP_LAYER_PARTITION", "set", None)]


def test_eplb_adds_the_redundant_experts_that_make_the_count_divide():
    log = BY_ID["eplb_experts_uneven"].examples[0]  # 160 experts, 6 EP ranks
    top = _top(log, ["vllm", "serve", "m", "--enable-eplb", "--enable-expert-parallel", "-tp", "6"])
    assert _turns(top)[0] == ("num_redundant_experts", "raise", 2)
    assert ("enable_eplb", "set", False) in _turns(top)


def test_expert_parallel_on_a_dense_model_is_turned_off():
    top = _top(
        BY_ID["ep_without_moe"].examples[0], ["vllm", "serve", "m", "--enable-expert-parallel"]
    )
    assert _turns(top) == [("enable_expert_parallel", "set", False)]


# Every text of the family through the reader and the doctor, with the prefixes vLLM prints it
# with (a logger line with its own file; a raised text bare, behind [rank0]: or a process tag).
FAMILY = {
    "world_size_too_large": "world-size-too-large",
    "ray_tp_above_local_gpus": "world-size-too-large",
    "dp_local_rank_out_of_bounds": "dp-exceeds-gpus",
    "dp_ranks_not_enough": "dp-exceeds-gpus",
    "pp_partition_count": "pp-partition-invalid",
    "pp_partition_sum": "pp-partition-invalid",
    "pp_partition_string": "pp-partition-invalid",
    "eplb_experts_uneven": "eplb-experts-uneven",
    "ep_without_moe": "ep-without-moe",
    "ct_wna16_moe_group_split": "quantized-tp-split",
    "moe_requires_ep": "ep-required",
    "mxfp8_moe_split": "quantized-tp-split",
}


def _cases():
    for sig_id, finding in FAMILY.items():
        sig = BY_ID[sig_id]
        if sig.origin == "log":
            file = sig.printed_by[0]
            prefixes = [
                PREFIX_FORMS[n].format(file=file) for n in ("bare", "engine_core", "worker_tp")
            ]
            prefixes = [p.replace("INFO", "WARNING") for p in prefixes]
        else:
            prefixes = [PREFIX_FORMS[n] for n in ("bare", "rank", "proc_only")]
        for example in sig.examples:
            for prefix in prefixes:
                yield pytest.param(prefix + example, finding, id=f"{sig_id}-{prefix[:12]}")


@pytest.mark.parametrize(("line", "finding"), list(_cases()))
def test_every_text_of_the_family_reaches_its_finding(line, finding):
    argv = ["vllm", "serve", "m", "-tp", "8", "-pp", "2"]
    if finding != "ep-required":
        argv.append("--enable-expert-parallel")
    found = {f.id for f in diagnose(DoctorInputs(log=line, command=parse_command(argv))).findings}
    assert finding in found, (line, found)


def test_before_any_log_a_world_above_the_listed_gpus_is_refused():
    argv = [
        "env",
        "CUDA_VISIBLE_DEVICES=0,1",
        "vllm",
        "serve",
        "Qwen/Qwen2.5-32B-Instruct",
        "-tp",
        "4",
    ]
    top = _top(None, argv, "8xA100-80GB")
    assert top.id == "world-size-too-large" and top.step == 3
    assert _turns(top)[0] == ("tensor_parallel_size", "lower", 2)
    assert ("CUDA_VISIBLE_DEVICES", "set", None) in _turns(top)
    described = _top(
        None, ["vllm", "serve", "Qwen/Qwen2.5-32B-Instruct", "-tp", "4"], "2xA100-80GB"
    )
    assert _turns(described)[0] == ("tensor_parallel_size", "lower", 2)


def test_no_world_finding_when_the_gpus_suffice_or_nodes_are_several():
    ok = diagnose(DoctorInputs(command=parse_command(["vllm", "serve", "m", "-tp", "2"]),
                               gpu_spec=parse_gpu_spec("2xA100-80GB")))  # fmt: skip
    assert "world-size-too-large" not in {f.id for f in ok.findings}
    multi = diagnose(DoctorInputs(command=parse_command(["vllm", "serve", "m", "-tp", "8", "-pp", "2"]),
                                  gpu_spec=parse_gpu_spec("8xH100"), nodes=2))  # fmt: skip
    assert "world-size-too-large" not in {f.id for f in multi.findings}


def test_a_kernel_that_needs_expert_parallel_turns_it_on_unless_it_is_on():
    log = BY_ID["moe_requires_ep"].examples[0]
    top = _top(log, ["vllm", "serve", "deepseek-ai/DeepSeek-V4-Pro", "-tp", "8"])
    assert _turns(top) == [("enable_expert_parallel", "set", True)]
    on = _top(
        log,
        ["vllm", "serve", "deepseek-ai/DeepSeek-V4-Pro", "-tp", "8", "--enable-expert-parallel"],
    )
    assert on.id == "ep-required-bug" and not on.actions  # vllm#55914: a bug, fixed in the engine


def test_before_any_log_dp_ranks_above_the_gpus_lower_dp():
    argv = ["vllm", "serve", "Qwen/Qwen3-30B-A3B", "--data-parallel-size", "4", "-tp", "2"]
    top = _top(None, argv, "4xH100")
    assert top.id == "dp-exceeds-gpus" and _turns(top) == [("data_parallel_size", "lower", 2)]
    fits = diagnose(
        DoctorInputs(command=parse_command([*argv[:-1], "1"]), gpu_spec=parse_gpu_spec("4xH100"))
    )
    assert "dp-exceeds-gpus" not in {f.id for f in fits.findings}
