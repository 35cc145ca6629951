"""`headroom doctor` on real model configs, whole or with any keys missing: it always
diagnoses (exit 0 or 1), says what it could not read, and never offers to quantize a
checkpoint that already is."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.fixtures import FIXTURES

from headroom.cli import doctor
from headroom.probes.model import shape_from_config

CONFIGS = sorted((FIXTURES / "model-configs").glob("*.json"))
NESTED = ("text_config", "llm_config", "language_config")


def _drop(config: dict, top: set[str], nested: set[str]) -> dict:
    out = {k: v for k, v in config.items() if k not in top}
    for key in NESTED:
        if isinstance(out.get(key), dict):
            out[key] = {k: v for k, v in out[key].items() if k not in nested}
    return out


@st.composite
def damaged_configs(draw):
    path = draw(st.sampled_from(CONFIGS))
    config = json.loads(path.read_text(encoding="utf-8"))
    top = draw(st.sets(st.sampled_from(sorted(config))))
    inner = {k for key in NESTED if isinstance(config.get(key), dict) for k in config[key]}
    nested = draw(st.sets(st.sampled_from(sorted(inner)))) if inner else set()
    return path.stem, _drop(config, top, nested)


def _run(capsys, model_dir, *extra):
    code = doctor.main(
        ["--model-config", str(model_dir), "--gpus", "8xH100", "--json", *extra,
         "--", "vllm", "serve", str(model_dir), "-tp", "8"]
    )  # fmt: skip
    out, err = capsys.readouterr()
    return code, out, err


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(damaged=damaged_configs())
def test_any_subset_of_keys_removed_still_diagnoses(tmp_path_factory, capsys, damaged):
    name, config = damaged
    model_dir = tmp_path_factory.mktemp(name)
    (model_dir / "config.json").write_text(json.dumps(config), encoding="utf-8")
    code, out, err = _run(capsys, model_dir)
    assert code in (0, 1), err
    doc = json.loads(out)
    assert [s["step"] for s in doc["steps"]] == [1, 2, 3, 4, 5]
    shape = shape_from_config(config, model_dir.name)  # the reader and the doctor agree
    if not shape.sizable:
        assert any("does not give" in line for line in doc["lacking"]), doc["lacking"]


@pytest.mark.parametrize("path", CONFIGS, ids=[p.stem for p in CONFIGS])
def test_every_real_config_diagnoses_whole(tmp_path, capsys, path):
    (tmp_path / "config.json").write_text(path.read_text(encoding="utf-8"))
    code, out, err = _run(capsys, tmp_path)
    assert code in (0, 1), err
    assert not any("does not give" in line for line in json.loads(out)["lacking"])


def test_unreadable_json_is_still_bad_input(tmp_path, capsys):
    (tmp_path / "config.json").write_text("{not json")
    code, _, err = _run(capsys, tmp_path)
    assert code == 2 and "not valid JSON" in err


def test_deepseek_v3_at_tp8_is_sized_from_its_expert_width(tmp_path, capsys):
    """moe_intermediate_size read from config.json: ~80 GiB of fp8 weights per GPU at TP 8,
    not the ~700 GiB a dense reading of intermediate_size gives (no false step-1 finding)."""
    (tmp_path / "config.json").write_text(
        (FIXTURES / "model-configs" / "deepseek-r1.json").read_text()
    )
    code = doctor.main(
        ["--model-config", str(tmp_path), "--gpus", "8xH200", "--json",
         "--", "vllm", "serve", str(tmp_path), "-tp", "8"]
    )  # fmt: skip
    doc = json.loads(capsys.readouterr().out)
    assert code in (0, 1)
    ids = [f["id"] for f in doc["findings"]]
    assert "predicted-no-kv-memory" not in ids and "cuda-oom-weights" not in ids
    assert doc["steps"][0]["status"] != "fail"


# A real OOM line (tests/fixtures/gpu-startup-logs, WizardLM-2-8x22B on one A100-80GB).
OOM_LOG = FIXTURES / "gpu-startup-logs" / "a100-80gb-wizardlm2-8x22b-oom.log"


def test_a_model_name_nothing_knows_still_diagnoses_from_its_name(capsys):
    """--model-config NAME that is no table row, file or Hub id: not bad input, the doctor
    goes on, says so in lacking, and still reads the name's parameter count."""
    code = doctor.main(["--log", str(OOM_LOG), "--model-config", "Acme-Chat-140B",
                        "--gpus", "1xA100:80", "--json"])  # fmt: skip
    out, err = capsys.readouterr()
    assert code == 1, err
    doc = json.loads(out)
    assert any("'Acme-Chat-140B' is not in the built-in table" in line for line in doc["lacking"])
    evidence = " ".join(" ".join(f["evidence"]) for f in doc["findings"])
    assert "140B parameters" in evidence  # sized from the name, as a command line's model is


def test_a_model_config_path_that_is_not_there_is_still_bad_input(tmp_path, capsys):
    code = doctor.main(["--log", str(OOM_LOG), "--model-config", str(tmp_path / "c.json")])
    _, err = capsys.readouterr()
    assert code == 2 and "unknown model" in err and "shapes, e.g." in err
