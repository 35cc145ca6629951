"""Launchers' command lines read as vLLM engine args (headroom.vllm_cmd.launchers).

Every line is a real one, quoted from where it was published:
- FastChat: the incident lm-sys/FastChat#2771's command (tests/fixtures/incidents) and
  FastChat's docs/vllm_integration.md (commit 0e6d3e4b);
- LLaMA-Factory: README (v0.9.1) `API_PORT=8000 llamafactory-cli api
  examples/inference/llama3_vllm.yaml`, that file's keys (commit 1ce638d7);
- verl: examples/ppo_trainer/run_qwen2-7b_seq_balance.sh (v0.4.0);
- EasyR1: examples/qwen2_5_vl_7b_geo3k_grpo.sh (commit b44b311);
- OpenRLHF: examples/scripts/train_ppo_llama_ray_hybrid_engine.sh (v0.9.0);
- TRL: docs/source/vllm_integration.md (commit f2cd57710);
- Xinference: doc/source/getting_started/using_xinference.rst (commit 7ecec16b);
- KServe: kserve/website docs/modelserving/v1beta1/llm/huggingface/README.md;
- containers: `docker run` lines from public READMEs and a vLLM issue ("Qwen3-Coder-Next-FP8
  start error wifh tp=8 on H100"), found through the code index;
- Python: vLLM's docs/serving/distributed_serving.md `LLM("facebook/opt-13b",
  tensor_parallel_size=4)`.
The configuration files fed through `read_file` carry those tools' keys with the test's
own values.
"""

from __future__ import annotations

import shlex

import pytest

from headroom.vllm_cmd import parse_command
from headroom.vllm_cmd.launchers import read_launch_line

FASTCHAT_2771 = (
    "CUDA_VISIBLE_DEVICES='0,1,2' nohup /home/being/anaconda3/envs/langchain/bin/python3 -m "
    'fastchat.serve.vllm_worker --trust-remote-code--model-names "yi-34B-chat" --model-path '
    "/media/being/_dev_dva2/model/Yi-34B-Chat/ --num-gpus 3 --port 21002 --controller-address "
    "http://localhost:21001 > Yi-34B-chat.txt 2>&1 &"
)
VERL_V040 = r"""python3 -m verl.trainer.main_ppo \
    algorithm.adv_estimator=gae \
    data.train_files="$train_files" \
    data.max_prompt_length=4096 \
    data.max_response_length=4096 \
    actor_rollout_ref.model.path=Qwen/Qwen2-7B-Instruct \
    actor_rollout_ref.actor.ppo_mini_batch_size=512 \
    actor_rollout_ref.rollout.tensor_model_parallel_size=2 \
    actor_rollout_ref.rollout.name=vllm \
    actor_rollout_ref.rollout.gpu_memory_utilization=0.5 \
    critic.model.path=Qwen/Qwen2-7B-Instruct \
    trainer.logger=['console','wandb'] \
    trainer.n_gpus_per_node=8 \
    trainer.nnodes=1 \
    trainer.save_freq=20"""
OPENRLHF_V090 = r"""python3 -m openrlhf.cli.train_ppo_ray \
   --ref_num_nodes 1 \
   --actor_num_gpus_per_node 8 \
   --vllm_num_engines 4 \
   --vllm_tensor_parallel_size 2 \
   --colocate_all_models \
   --vllm_gpu_memory_utilization 0.5 \
   --pretrain OpenRLHF/Llama-3-8b-sft-mixture \
   --reward_pretrain OpenRLHF/Llama-3-8b-rm-700k \
   --prompt_max_len 1024 \
   --max_samples 100000 \
   --generate_max_len 1024 \
   --zero_stage 3 \
   --bf16 \
   --vllm_sync_backend nccl \
   --enforce_eager \
   --vllm_enable_sleep \
   --deepspeed_enable_sleep"""


def _read(line: str, **kw):
    reading = read_launch_line(shlex.split(line), **kw)
    assert reading is not None
    return reading, parse_command(list(reading.argv), strict=False)


def test_fastchat_num_gpus_is_tp_and_the_visible_gpus_are_kept():
    reading, cmd = _read(FASTCHAT_2771)
    assert cmd.model == "/media/being/_dev_dva2/model/Yi-34B-Chat/"
    assert cmd.get("tensor_parallel_size") == 3
    assert cmd.launcher[:2] == ("env", "CUDA_VISIBLE_DEVICES=0,1,2")
    assert not cmd.has("port")  # the worker's port, not vLLM's
    assert reading.visible_gpus == 3
    assert (
        "FastChat's vllm_worker" in reading.note()
        and "--num-gpus is tensor_parallel_size" in reading.note()
    )


def test_fastchat_hands_vllms_own_flags_through():
    _, cmd = _read(
        "python3 -m fastchat.serve.vllm_worker --model-path lmsys/vicuna-7b-v1.5 "
        "--tokenizer hf-internal-testing/llama-tokenizer"
    )
    assert cmd.model == "lmsys/vicuna-7b-v1.5"
    assert cmd.get("tokenizer") == "hf-internal-testing/llama-tokenizer"
    assert not cmd.has("tensor_parallel_size")  # --num-gpus 1 (its default) passes nothing


def test_llamafactory_yaml_read_with_its_defaults_and_every_visible_gpu():
    yaml = (
        "model_name_or_path: meta-llama/Meta-Llama-3-8B-Instruct\ntemplate: llama3\n"
        "infer_backend: vllm\nvllm_enforce_eager: true\n"
    )
    files = {"examples/inference/llama3_vllm.yaml": yaml}
    reading, cmd = _read(
        "API_PORT=8000 llamafactory-cli api examples/inference/llama3_vllm.yaml",
        gpus=2,
        read_file=files.get,
    )
    assert cmd.model == "meta-llama/Meta-Llama-3-8B-Instruct"
    assert cmd.get("enforce_eager") is True
    assert cmd.get("tensor_parallel_size") == 2  # get_device_count()
    assert cmd.get("max_model_len") == 4096  # its own vllm_maxlen default, not the model's
    assert not cmd.has("gpu_memory_utilization")  # 0.9 or 0.7 by its release: not assumed
    assert "max_model_len 4096" in reading.defaults
    assert "API_PORT" not in " ".join(reading.argv)


def test_llamafactory_file_not_here_assumes_no_defaults():
    reading, cmd = _read("llamafactory-cli api qwen-1.5-72B-Chat.yaml vllm_maxlen=2048")
    assert cmd.get("max_model_len") == 2048
    assert not cmd.has("gpu_memory_utilization") and not reading.defaults
    assert "not read here" in reading.note()


def test_llamafactory_vllm_config_json_sets_engine_args():
    _, cmd = _read(
        "llamafactory-cli api --model_name_or_path Qwen/Qwen2-7B --infer_backend vllm "
        """--vllm_config '{"max_num_seqs": 16, "not_an_arg": 1}' --vllm_maxlen 8192"""
    )
    assert cmd.get("max_num_seqs") == 16 and cmd.get("max_model_len") == 8192
    assert "not_an_arg" not in cmd.engine_args()


def test_verl_overrides_with_line_continuations():
    reading, cmd = _read(VERL_V040)
    assert cmd.model == "Qwen/Qwen2-7B-Instruct"
    assert cmd.get("tensor_parallel_size") == 2
    assert cmd.get("gpu_memory_utilization") == 0.5
    assert cmd.get("max_model_len") == 8192  # prompt 4096 + response 4096
    assert cmd.get("enable_chunked_prefill") is True  # verl's default, passed to vLLM
    assert reading.visible_gpus == 8


def test_verl_expert_parallel_and_engine_kwargs():
    _, cmd = _read(
        "python3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.expert_parallel_size=8 "
        "+actor_rollout_ref.rollout.engine_kwargs.vllm.swap_space=4 "
        "actor_rollout_ref.rollout.enable_chunked_prefill=False"
    )
    assert cmd.get("enable_expert_parallel") is True
    assert cmd.get("swap_space") == 4.0
    assert cmd.get("enable_chunked_prefill") is False


def test_easyr1_reads_its_config_file_below_the_overrides():
    script = (
        "python3 -m verl.trainer.main config=examples/config.yaml "
        "data.train_files=hiyouga/geometry3k@train worker.actor.model.model_path="
        "Qwen/Qwen2.5-VL-7B-Instruct trainer.experiment_name=qwen2_5_vl_7b_geo_grpo "
        "trainer.n_gpus_per_node=8"
    )
    unread, cmd = _read(script)
    assert cmd.model == "Qwen/Qwen2.5-VL-7B-Instruct" and not unread.defaults
    config = (
        "data:\n  max_prompt_length: 2048\n  max_response_length: 2048\nworker:\n  rollout:\n"
        "    gpu_memory_utilization: 0.6\n    enable_chunked_prefill: false\n"
        "    tensor_parallel_size: 2\n"
    )
    reading, cmd = _read(script, read_file={"examples/config.yaml": config}.get)
    assert cmd.get("tensor_parallel_size") == 2 and cmd.get("max_model_len") == 4096
    assert cmd.get("enable_chunked_prefill") is False and cmd.get("enable_sleep_mode") is True


def test_openrlhf_vllm_flags_and_its_length():
    reading, cmd = _read(OPENRLHF_V090)
    assert cmd.model == "OpenRLHF/Llama-3-8b-sft-mixture"
    assert cmd.get("tensor_parallel_size") == 2
    assert cmd.get("gpu_memory_utilization") == 0.5
    assert cmd.get("enforce_eager") is True and cmd.get("enable_sleep_mode") is True
    assert cmd.get("max_model_len") == 2048 and cmd.get("dtype") == "bfloat16"
    assert not cmd.has("max_num_seqs") and not cmd.has("seed")


def test_trl_vllm_serve_and_its_visible_gpus():
    reading, cmd = _read(
        "CUDA_VISIBLE_DEVICES=0,1,2,3 trl vllm-serve --model Qwen/Qwen2.5-7B "
        "--tensor-parallel-size 4"
    )
    assert (cmd.model, cmd.get("tensor_parallel_size"), reading.visible_gpus) == (
        "Qwen/Qwen2.5-7B", 4, 4)  # fmt: skip


def test_trl_trainer_in_server_mode_gives_no_engine_args():
    reading, cmd = _read(
        "accelerate launch train_grpo.py --model_name_or_path Qwen/Qwen2-0.5B --use_vllm "
        "--vllm_mode server --vllm_gpu_memory_utilization 0.2"
    )
    assert not cmd.has("gpu_memory_utilization") and "vllm_mode server" in reading.note()


def test_xinference_short_options_name_the_model():
    reading, cmd = _read(
        "xinference launch --model-engine vllm -n qwen2.5-instruct -s 0_5 -f pytorch "
        "--gpu_memory_utilization 0.9"
    )
    assert cmd.model == "qwen2.5-instruct-0.5b"
    assert cmd.get("gpu_memory_utilization") == 0.9 and cmd.get("max_num_seqs") == 256


def test_kserve_args_list_of_an_inference_service():
    text = """kubectl apply -f - <<EOF
    spec:
      predictor:
        model:
          modelFormat:
            name: huggingface
          args:
          - --model_name=llama3
          - --model_id=meta-llama/meta-llama-3-8b-instruct
          resources:
            limits:
              cpu: "6"
              memory: 24Gi
              nvidia.com/gpu: "1"
    EOF"""
    reading = read_launch_line(text)
    assert reading is not None
    cmd = parse_command(list(reading.argv), strict=False)
    assert cmd.model == "meta-llama/meta-llama-3-8b-instruct" and not cmd.has("served_model_name")
    assert reading.visible_gpus == 1


@pytest.mark.parametrize(
    ("line", "release", "gpus", "model", "tp"),
    [
        (
            """docker run --runtime nvidia --gpus '"device=5,6"'  --name vllm_container -v """
            "/raid/s3/opengptx/models/:/root/.cache/huggingface --env "
            '"HUGGING_FACE_HUB_TOKEN=$API_TOKEN" -p 9900:8000 --ipc=host vllm/vllm-openai:v0.6.3 '
            "--model Qwen/Qwen2.5-72B-Instruct-AWQ --tensor-parallel-size 2",
            "0.6.3", 2, "Qwen/Qwen2.5-72B-Instruct-AWQ", 2,
        ),
        (
            """docker run --runtime nvidia --rm --gpus='"device=0"' --mount type=bind,"""
            "source=/usr/local/models/,target=/usr/local/models/ -p 21554:8000 --ipc=host "
            "vllm/vllm-openai:v0.6.3.post1 --model /usr/local/models/Meta-Llama-3.1-8B-Instruct"
            "-AWQ-INT4/ --max-model-len 8192",
            "0.6.3.post1", 1, "/usr/local/models/Meta-Llama-3.1-8B-Instruct-AWQ-INT4/", None,
        ),
        (
            "nerdctl run --gpus all --name vllm-serve --shm-size 64g -v /mnt/data02/000000/model/"
            "Qwen3-Coder-Next-FP8:/data/model -p 8000:8000 -e VLLM_USE_DEEP_GEMM=0 --ipc=host "
            "vllm/vllm-openai:v0.17.0 /data/model --served-model-name hello-model "
            "--gpu-memory-utilization 0.93 --tensor-parallel-size 8 --enable-expert-parallel",
            "0.17.0", None, "/data/model", 8,
        ),
        (
            "docker run --runtime nvidia --gpus all -v ./vllm:/root/.cache/huggingface -p "
            "8000:8000 --ipc=host vllm/vllm-openai:v0.10.2-x86_64 --model unsloth/gemma-3-27b-it",
            "0.10.2", None, "unsloth/gemma-3-27b-it", None,
        ),
    ],
)  # fmt: skip
def test_a_container_line_is_the_images_vllm_and_its_tag_the_release(
    line, release, gpus, model, tp
):
    reading, cmd = _read(line)
    assert reading.release == release and reading.visible_gpus == gpus
    assert cmd.model == model and cmd.get("tensor_parallel_size") == tp
    assert "HUGGING_FACE_HUB_TOKEN" not in " ".join(reading.argv)


def test_an_image_named_latest_names_no_release():
    reading, _ = _read(
        "docker run --runtime nvidia --gpus all -v ~/.cache/huggingface:/root/.cache/huggingface"
        ' --env "HUGGING_FACE_HUB_TOKEN=<secret>" -p 8000:8000 --ipc=host '
        "vllm/vllm-openai:latest --model mistralai/Mistral-7B-v0.1"
    )
    assert reading.release is None


def test_a_python_llm_call():
    reading = read_launch_line('llm = LLM("facebook/opt-13b", tensor_parallel_size=4)')
    assert reading is not None
    cmd = parse_command(list(reading.argv))
    assert (cmd.model, cmd.get("tensor_parallel_size")) == ("facebook/opt-13b", 4)


def test_vllms_own_line_in_shell_noise_and_as_typed():
    reading = read_launch_line(
        shlex.split("cd /srv && nohup vllm serve Qwen/Qwen3-8B -tp 2 > vllm.log 2>&1 &")
    )
    assert reading is not None and not reading.translated
    assert list(reading.argv) == ["vllm", "serve", "Qwen/Qwen3-8B", "-tp", "2"]
    assert read_launch_line(["vllm", "serve", "Qwen/Qwen3-8B", "-tp", "2"]) is None
    assert read_launch_line(["--tensor-parallel-size", "2"]) is None
