"""`headroom doctor -- LINE` where LINE starts vLLM through another tool: read as vLLM
engine args, said in `lacking`, never refused (exit 2) when it is readable.

Lines: FastChat#2771's command (the incident in tests/fixtures/incidents), LLaMA-Factory's
README `llamafactory-cli api examples/inference/llama3_vllm.yaml`, a public README's
`docker run ... vllm/vllm-openai:v0.6.3 ...` (see tests/vllm_cmd/test_launchers.py)."""

from __future__ import annotations

import json
import shlex

from headroom.cli import doctor

FASTCHAT_2771 = (
    "CUDA_VISIBLE_DEVICES='0,1,2' nohup /home/being/anaconda3/envs/langchain/bin/python3 -m "
    'fastchat.serve.vllm_worker --trust-remote-code--model-names "yi-34B-chat" --model-path '
    "/media/being/_dev_dva2/model/Yi-34B-Chat/ --num-gpus 3 --port 21002 --controller-address "
    "http://localhost:21001 > Yi-34B-chat.txt 2>&1 &"
)
DOCKER_063 = (
    """docker run --runtime nvidia --gpus '"device=5,6"'  --name vllm_container -v """
    "/raid/s3/opengptx/models/:/root/.cache/huggingface --env "
    '"HUGGING_FACE_HUB_TOKEN=$API_TOKEN" -p 9900:8000 --ipc=host vllm/vllm-openai:v0.6.3 '
    "--model Qwen/Qwen2.5-72B-Instruct-AWQ --tensor-parallel-size 2"
)


def _doctor(capsys, *own: str, line: str) -> tuple[int, dict]:
    code = doctor.main([*own, "--json", "--", *shlex.split(line)])
    out, err = capsys.readouterr()
    assert code != 2, err
    return code, json.loads(out)


def test_fastchat_num_gpus_3_of_yi_34b_is_tp_3_and_the_doctor_says_it_was_translated(capsys):
    code, doc = _doctor(capsys, line=FASTCHAT_2771)
    top = doc["findings"][0]
    assert top["id"] == "tp-heads-not-divisible"
    tp = next(a for a in top["actions"] if a["knob"] == "tensor_parallel_size")
    # 56 heads, 8 KV heads: TP 2 or 4; with the GPUs' memory unknown, TP 2 would put 34 GB
    # of Yi-34B's weights on each GPU, so the divisor above (the thread's answer) is given
    assert (tp["direction"], tp["value"]) == ("raise", 4)
    assert any("FastChat's vllm_worker" in x and "--num-gpus" in x for x in doc["lacking"])


def test_a_container_tag_gives_the_release_unless_one_is_given(capsys):
    _, doc = _doctor(capsys, line=DOCKER_063)
    assert doc["vllm_version"] == "0.6.3"
    assert any("vllm/vllm-openai:v0.6.3" in x and "2 GPUs visible" in x for x in doc["lacking"])
    _, doc = _doctor(capsys, "--vllm-version", "0.8.5", line=DOCKER_063)
    assert doc["vllm_version"] == "0.8.5"


def test_a_launcher_config_not_on_this_machine_is_not_an_input_error(capsys):
    _, doc = _doctor(capsys, line="llamafactory-cli api examples/inference/llama3_vllm.yaml")
    assert any("not read here" in x for x in doc["lacking"])


def test_a_vllm_config_file_inside_a_container_is_not_an_input_error(capsys):
    _, doc = _doctor(
        capsys, line="docker run --gpus all vllm/vllm-openai:v0.8.5 --config /app/serve.yaml"
    )
    assert doc["vllm_version"] == "0.8.5"


def test_every_gpu_given_is_llamafactorys_tp(capsys, tmp_path):
    config = tmp_path / "llama3_vllm.yaml"
    config.write_text(
        "model_name_or_path: meta-llama/Meta-Llama-3-8B-Instruct\ntemplate: llama3\n"
        "infer_backend: vllm\nvllm_enforce_eager: true\n"
    )
    _, doc = _doctor(capsys, "--gpus", "4xA100", line=f"llamafactory-cli api {config}")
    note = next(x for x in doc["lacking"] if "LLaMA-Factory" in x)
    assert "every GPU it sees is tensor_parallel_size" in note
    assert "max_model_len 4096" in note  # its own vllm_maxlen default, not the model's length


def test_vllms_own_line_in_a_shell_line_keeps_its_config_file(capsys, tmp_path):
    config = tmp_path / "serve.yaml"
    config.write_text("tensor-parallel-size: 3\n")
    # Yi-34B's 56 heads refuse TP 3: the file's TP was read through the shell's nohup ... &
    _, doc = _doctor(
        capsys, line=f"nohup vllm serve 01-ai/Yi-34B-Chat --config {config} > vllm.log 2>&1 &"
    )
    assert doc["findings"][0]["id"] == "tp-heads-not-divisible"


def test_a_skypilot_task_names_its_gpus(capsys):
    line = (
        "resources:\n  accelerators: L4:4 # four L4\nrun: |\n"
        "  vllm serve Qwen/Qwen2.5-7B-Instruct --tensor-parallel-size 4 --max-model-len 8192"
    )
    code = doctor.main(["--json", "--", line])
    doc = json.loads(capsys.readouterr().out)
    assert code != 2 and doc["shape"] == "1 node x 4 L4"
    assert not any("no GPU description" in x for x in doc["lacking"])


def test_a_gpu_kind_the_table_does_not_know_is_not_an_input_error(capsys):
    line = "resources:\n  accelerators: Z9000:2\nrun: |\n  vllm serve Qwen/Qwen2.5-7B-Instruct"
    code = doctor.main(["--json", "--", line])
    doc = json.loads(capsys.readouterr().out)
    assert code != 2 and doc["shape"] is None


def test_plan_evaluates_a_launchers_line_as_its_vllm_engine_args(capsys):
    from headroom.cli import plan

    code = plan.main(
        ["Qwen2.5-7B-Instruct", "--gpus", "2xRTX4090", "--json", "--",
         *shlex.split(
             "python3 -m verl.trainer.main_ppo actor_rollout_ref.model.path=Qwen/Qwen2.5-7B-"
             "Instruct data.max_prompt_length=1024 data.max_response_length=4096"
         )]
    )  # fmt: skip
    doc = json.loads(capsys.readouterr().out)
    assert code in (0, 1)
    # verl's own defaults (TP 2, utilization 0.5) and prompt + response as max_model_len
    assert (doc["tensor_parallel_size"], doc["gpu_memory_utilization"]) == (2, 0.5)
    assert doc["max_model_len"] == 5120
    assert any("verl's rollout config" in n for n in doc["notes"])
