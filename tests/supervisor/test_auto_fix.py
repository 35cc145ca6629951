"""--auto-fix's choice: the top finding's first action with a value, one knob, never a repeat,
and the finding that cites the start-up failure's root cause before side remarks."""

from __future__ import annotations

from pathlib import Path

from headroom.doctor import Action, Diagnosis, DoctorInputs, Finding, diagnose
from headroom.probes.vllm_log import digest_text
from headroom.supervisor.restart import auto_fix_changes, split_changes
from headroom.vllm_cmd import parse_command

DATA = Path(__file__).with_name("data")


def _finding(fid: str, evidence: str, *actions: Action) -> Finding:
    return Finding(fid, 4, "error", fid, (evidence,), actions)


def _action(knob: str, value) -> Action:
    return Action(knob, "set", value, "why", "cost")


def test_first_action_with_a_value_of_the_top_finding():
    diagnosis = Diagnosis(
        (
            _finding("a", "line a", _action("max_num_seqs", None), _action("max_model_len", 768)),
            _finding("b", "line b", _action("enforce_eager", True)),
        ),
        (),
    )
    changes, finding, action = auto_fix_changes(diagnosis)
    assert changes == {"max_model_len": 768}
    assert finding.id == "a"


def test_an_action_already_applied_is_passed_over():
    command = parse_command(["vllm", "serve", "m", "--max-model-len", "768"])
    diagnosis = Diagnosis(
        (_finding("a", "x", _action("max_model_len", 768), _action("kv_cache_dtype", "fp8")),),
        (),
    )
    changes, _, _ = auto_fix_changes(diagnosis, command)
    assert changes == {"kv_cache_dtype": "fp8"}
    assert auto_fix_changes(Diagnosis((), ())) is None
    assert auto_fix_changes(None) is None


def test_real_log_on_a_loaded_host_fixes_the_kv_budget_not_the_slowness():
    text = (DATA / "real-fail-max-model-len-on-loaded-host.log").read_text()
    digest = digest_text(text)
    command = parse_command(
        "python -m vllm.entrypoints.openai.api_server --model /m --port 1 "
        "--max-model-len 2048 --kv-cache-memory-bytes 1000000"
    )
    diagnosis = diagnose(DoctorInputs(command=command, log=digest))
    root = digest.facts().failures[0]
    assert root.kind == "max_seq_len_exceeds_kv"
    changes, finding, action = auto_fix_changes(diagnosis, command, root.line.strip()[:500])
    assert finding.id == "max-seq-len-exceeds-kv"
    assert len(changes) == 1
    knob, value = next(iter(changes.items()))
    assert (knob, action.direction) in {
        ("kv_cache_memory_bytes", "raise"),
        ("max_model_len", "lower"),
    }
    if knob == "max_model_len":
        assert value == 768


def test_split_changes_sends_upper_case_names_to_the_environment():
    flags, env = split_changes({"max_num_seqs": 64, "NCCL_P2P_DISABLE": "1"})
    assert flags == {"max_num_seqs": 64}
    assert env == {"NCCL_P2P_DISABLE": "1"}
