"""More launcher forms read as vLLM engine args: evaluation and fine-tuning tools, container
specs pasted as YAML, a script of several lines.

Texts, quoted from where they were published:
- lm-evaluation-harness README (commit 4e7e0d47f) `lm_eval --model vllm --model_args
  pretrained={model_name},tensor_parallel_size=...,gpu_memory_utilization=0.8,
  data_parallel_size=...` (the braces' model filled in) and docs/interface.md;
- ms-swift examples/infer/vllm/dp_tp.sh (commit 3602360a5);
- a Kubernetes Deployment and a docker-compose file from public write-ups (found through
  the code index): vllm/vllm-openai:v0.5.0.post1 with `command: ["python3", "-m",
  "vllm.entrypoints.openai.api_server"]` and an args list; vllm/vllm-openai:v0.6.3 with a
  folded `command: >`;
- EasyR1 examples/qwen2_5_vl_7b_geo3k_grpo.sh (commit b44b311), whole, with its
  `MODEL_PATH=...` line and `${MODEL_PATH}`;
- Ray Serve LLM: the fields of LLMConfig (docs.ray.io serve/llm configuration reference)
  with the quickstart's values (qwen-0.5b, Qwen/Qwen2.5-0.5B-Instruct, A10G,
  tensor_parallel_size 2);
- SkyPilot's task keys (`resources: accelerators: NAME:COUNT`, `run: |`).
"""

from __future__ import annotations

from headroom.vllm_cmd import parse_command
from headroom.vllm_cmd.launchers import read_launch_line


def _read(text: str, **kw):
    reading = read_launch_line(text, **kw)
    assert reading is not None
    return reading, parse_command(list(reading.argv), strict=False)


def test_lm_eval_model_args_are_llm_kwargs():
    reading, cmd = _read(
        "lm_eval --model vllm \\\n    --model_args pretrained=meta-llama/Llama-3.1-8B,"
        "tensor_parallel_size=2,dtype=auto,gpu_memory_utilization=0.8,data_parallel_size=2 \\\n"
        "    --tasks lambada_openai \\\n    --batch_size auto"
    )
    assert cmd.model == "meta-llama/Llama-3.1-8B"
    assert cmd.get("tensor_parallel_size") == 2 and cmd.get("gpu_memory_utilization") == 0.8
    # lm-eval's data_parallel_size starts that many engines through Ray, each TP 2
    assert not cmd.has("data_parallel_size") and not cmd.has("batch_size")


def test_lm_eval_new_cli_and_a_backend_that_is_not_vllm():
    _, cmd = _read(
        "lm-eval run --model vllm --model_args pretrained=EleutherAI/gpt-j-6B --tasks "
        "arc_easy arc_challenge --num_fewshot 5"
    )
    assert cmd.model == "EleutherAI/gpt-j-6B"
    reading, cmd = _read("lm-eval run --model hf --model_args pretrained=gpt2 dtype=float32")
    assert cmd.model is None and "not vLLM" in reading.note()


def test_ms_swift_vllm_prefixed_arguments():
    reading, cmd = _read(
        "NPROC_PER_NODE=4 \\\nCUDA_VISIBLE_DEVICES=0,1,2,3 \\\nswift infer \\\n"
        "    --model Qwen/Qwen2.5-7B-Instruct \\\n    --infer_backend vllm \\\n"
        "    --val_dataset AI-ModelScope/alpaca-gpt4-data-zh#2000 \\\n"
        "    --vllm_gpu_memory_utilization 0.9 \\\n    --vllm_max_model_len 8192 \\\n"
        "    --vllm_tensor_parallel_size 2 \\\n    --max_new_tokens 2048 \\\n"
        "    --write_batch_size 1000"
    )
    assert cmd.model == "Qwen/Qwen2.5-7B-Instruct"
    assert (cmd.get("tensor_parallel_size"), cmd.get("max_model_len")) == (2, 8192)
    assert reading.visible_gpus == 4 and "NPROC_PER_NODE" not in " ".join(reading.argv)


def test_a_kubernetes_deployment_appends_args_to_its_command():
    reading, cmd = _read(
        """      containers:
      - name: vllm
        image: vllm/vllm-openai:v0.5.0.post1
        command: ["python3", "-m", "vllm.entrypoints.openai.api_server"]
        args:
        - "--model"
        - "casperhansen/llama-3-8b-instruct-awq"
        - "--quantization"
        - "awq"
        - "--gpu-memory-utilization"
        - "0.85"
        - "--max-model-len"
        - "4096"
        env:
        - name: HUGGING_FACE_HUB_TOKEN
          valueFrom:
            secretKeyRef:
              name: hf-token-secret
        resources:
          limits:
            nvidia.com/gpu: "1"
            memory: "32Gi\""""
    )
    assert cmd.launcher[-1] == "vllm.entrypoints.openai.api_server"
    assert cmd.model == "casperhansen/llama-3-8b-instruct-awq"
    assert (cmd.get("quantization"), cmd.get("max_model_len")) == ("awq", 4096)
    assert (reading.release, reading.visible_gpus) == ("0.5.0.post1", 1)


def test_a_compose_file_with_a_folded_command_and_comments():
    reading, cmd = _read(
        """services:
  vllm:
    image: vllm/vllm-openai:v0.6.3           # pin the version
    runtime: nvidia
    environment:
      - HF_TOKEN=${HF_TOKEN}
    command: >
      --model meta-llama/Llama-3.1-8B-Instruct
      --dtype float16
      --max-model-len 8192
      --gpu-memory-utilization 0.90
      --served-model-name llama3-8b           # the name the API uses
    deploy:
      resources:
        reservations:
          devices:
            - driver: nvidia
              count: 2
              capabilities: [gpu]"""
    )
    assert cmd.model == "meta-llama/Llama-3.1-8B-Instruct" and cmd.get("dtype") == "float16"
    assert cmd.get("served_model_name") == ["llama3-8b"]
    assert (reading.release, reading.visible_gpus) == ("0.6.3", 2)
    assert "HF_TOKEN" not in " ".join(reading.argv)


def test_a_whole_script_sets_the_variables_its_command_uses():
    _, cmd = _read(
        "#!/bin/bash\n\nset -x\n\nMODEL_PATH=Qwen/Qwen2.5-VL-7B-Instruct  # replace it with "
        "your local file path\n\npython3 -m verl.trainer.main \\\n    config=examples/config.yaml"
        " \\\n    data.train_files=hiyouga/geometry3k@train \\\n    worker.actor.model.model_path"
        "=${MODEL_PATH} \\\n    trainer.n_gpus_per_node=8\n"
    )
    assert cmd.model == "Qwen/Qwen2.5-VL-7B-Instruct"


def test_a_variable_the_line_does_not_set_keeps_the_launchers_default_out():
    reading, cmd = _read("python3 -m verl.trainer.main worker.rollout.tensor_parallel_size=$TP")
    assert not cmd.has("tensor_parallel_size")  # EasyR1's default 2 is not what ran
    assert "$TP, a variable the line does not set" in reading.note()


def test_a_ray_serve_llm_config():
    reading, cmd = _read(
        """applications:
- args:
    llm_configs:
      - model_loading_config:
          model_id: qwen-0.5b
          model_source: Qwen/Qwen2.5-0.5B-Instruct
        accelerator_type: A10G
        engine_kwargs:
          tensor_parallel_size: 2
  import_path: ray.serve.llm:build_openai_app"""
    )
    assert (cmd.model, cmd.get("tensor_parallel_size")) == ("Qwen/Qwen2.5-0.5B-Instruct", 2)
    assert reading.gpus == "2xA10G"  # TP 2 x PP 1 GPUs of its accelerator_type


def test_a_yaml_of_vllms_own_engine_args():
    _, cmd = _read(
        "model: meta-llama/Llama-3.1-8B-Instruct\ntensor_parallel_size: 2\n"
        "max_model_len: 16384\ngpu_memory_utilization: 0.85"
    )
    assert cmd.model == "meta-llama/Llama-3.1-8B-Instruct"
    assert (cmd.get("max_model_len"), cmd.get("gpu_memory_utilization")) == (16384, 0.85)


def test_a_skypilot_task_runs_its_run_block():
    reading, cmd = _read(
        "resources:\n  accelerators: L4:4 # four L4\nrun: |\n  conda activate vllm\n"
        "  vllm serve Qwen/Qwen2.5-7B-Instruct --tensor-parallel-size 4 --max-model-len 8192"
    )
    assert (cmd.model, cmd.get("tensor_parallel_size")) == ("Qwen/Qwen2.5-7B-Instruct", 4)
    assert reading.visible_gpus == 4 and reading.gpus == "4xL4"


def test_a_node_selectors_gpu_product_names_the_kind():
    # GPU feature discovery's node label (nvidia.com/gpu.product) beside the GPU request
    reading, _ = _read(
        """    spec:
      nodeSelector:
        nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB
      containers:
      - name: vllm
        image: vllm/vllm-openai:v0.8.5
        args: ["--model", "Qwen/Qwen2.5-72B-Instruct", "--tensor-parallel-size", "2"]
        resources:
          limits:
            nvidia.com/gpu: 2"""
    )
    assert reading.gpus == "2xA100-SXM4-80GB" and reading.release == "0.8.5"


def test_exec_into_a_running_container_or_pod():
    # `docker exec [OPTIONS] CONTAINER COMMAND` and `kubectl exec POD -- COMMAND`, as their
    # own docs write them: the command inside is vLLM's own line
    reading, cmd = _read(
        "docker exec -it vllm-container vllm serve Qwen/Qwen3-8B --max-model-len 8192"
    )
    assert (cmd.model, cmd.get("max_model_len"), reading.release) == ("Qwen/Qwen3-8B", 8192, None)
    reading, cmd = _read(
        "kubectl exec -it vllm-pod-0 -n llm -- python3 -m vllm.entrypoints.openai.api_server "
        "--model Qwen/Qwen3-8B -tp 2"
    )
    assert not reading.translated and cmd.get("tensor_parallel_size") == 2
