"""Rules for the loading texts of the catalog (probes/vllm_catalog/loading.py): the model's config,
tokenizer and weights, before any memory is sized.

- A model whose code lives in its repository (a custom architecture, tokenizer or config class):
  transformers refuses to run it unless asked; --trust-remote-code (after reading that code:
  it runs on the host).
- A checkpoint weight the model class has no module for: a bare base-model name ('embed_tokens',
  'layers', 'norm', with no 'model.' in front) in a *ForCausalLM is a checkpoint saved without
  its LM head, an embedding model: serve it as one (--task embed; --runner pooling from 0.10,
  where --task is deprecated and, from 0.14, gone). Any other name is a checkpoint for another
  class or release: named, no knob.
- --tokenizer-mode mistral on a repository in Hugging Face format (no tekken.json): the default
  modes (auto) read it.
- The environment (probes/vllm_catalog/environment.py): no GPU visible to the process, a driver
  older than the wheels' CUDA, a build without kernels for this GPU: named, no knob.
"""

from __future__ import annotations

from headroom.doctor.findings import Action, Finding
from headroom.doctor.versions import parse_version

# Top-level module names of a transformers base model (AutoModel) checkpoint.
_BASE_MODEL_NAMES = frozenset(
    {"embed_tokens", "layers", "norm", "embeddings", "encoder", "wte", "h"}
)
_RUNNER_SINCE = (0, 10, 0)  # --runner pooling (arg_utils.py 0.10.2); --task before it


def remote_code_required(ctx) -> list[Finding]:
    events = ctx.of("remote_code_required")
    if not events:
        return []
    act = Action(
        "trust_remote_code",
        "set",
        True,
        "the model's config, tokenizer or modelling code is in its repository, not in "
        "transformers: loading it runs that code",
        "the repository's Python code runs on this host: read it first",
    )
    title = "The model's code is in its repository: it needs --trust-remote-code"
    return [
        Finding(
            "remote-code-required", None, "error", title, (events[0].line.strip()[:400],), (act,)
        )
    ]


def checkpoint_weights_mismatch(ctx) -> list[Finding]:
    events = ctx.of("checkpoint_weights_mismatch")
    if not events:
        return []
    event = events[0]
    prefix = str(event.fields.get("prefix") or "")
    model_class = str(event.fields.get("model_class") or "")
    evidence = [event.line.strip()[:400]]
    if prefix.split(".")[0] in _BASE_MODEL_NAMES and model_class.endswith("ForCausalLM"):
        release = parse_version(ctx.version) if ctx.version else None
        runner = release is not None and release >= _RUNNER_SINCE
        knob, value = ("runner", "pooling") if runner else ("task", "embed")
        evidence.append(
            f"'{prefix}' without 'model.' in front is a base model's weight: the checkpoint has no "
            "LM head, as embedding models are saved"
        )
        act = Action(
            knob,
            "set",
            value,
            f"serve it as an embedding (pooling) model, not as a {model_class} generator",
            "the server answers /v1/embeddings, not completions",
        )
        title = "An embedding checkpoint is being loaded as a text generator"
        return [
            Finding("checkpoint-weights-mismatch", None, "error", title, tuple(evidence), (act,))
        ]
    evidence.append(
        "not a configuration problem: the checkpoint's weights are for another model class or "
        "another release of it (check the model path, or upgrade vLLM)"
    )
    title = f"The checkpoint's weights do not fit {model_class or 'the model class'}"
    return [Finding("checkpoint-weights-mismatch", None, "error", title, tuple(evidence), ())]


def mistral_format_mismatch(ctx) -> list[Finding]:
    """--tokenizer-mode mistral (with --config-format / --load-format mistral) reads a Mistral
    repository's own files (tekken.json, params.json, consolidated weights); a repository in
    Hugging Face format has none: the default modes read it."""
    events = ctx.of("mistral_format_mismatch")
    if not events:
        return []
    act = Action(
        "tokenizer_mode",
        "set",
        "auto",
        "the repository is in Hugging Face format: it has no Mistral tokenizer file for the "
        "mistral mode (drop --config-format/--load-format mistral with it)",
        "none for an HF-format repository",
    )
    title = "A Mistral-format tokenizer was asked of a repository that has none"
    return [
        Finding(
            "mistral-format-mismatch", None, "error", title, (events[0].line.strip()[:400],), (act,)
        )
    ]


_ENVIRONMENT = {
    "device_type_unknown": (
        "vLLM sees no GPU: it could not tell which device to run on",
        "no GPU is visible to the process: in a container pass the GPUs in (docker --gpus all, "
        "the NVIDIA runtime, the pod's GPU limit); check CUDA_VISIBLE_DEVICES and that "
        "nvidia-smi works there; a CPU-only torch or vLLM install sees none either",
    ),
    "no_cuda_gpus": (
        "PyTorch sees no CUDA GPU",
        "no GPU is visible to the process (container GPUs, CUDA_VISIBLE_DEVICES, the NVIDIA "
        "driver), or this torch was built without CUDA",
    ),
    "driver_too_old": (
        "The NVIDIA driver is older than the CUDA this PyTorch was built for",
        "update the driver, or install torch/vLLM wheels built for the CUDA the driver supports "
        "(nvidia-smi's 'CUDA Version')",
    ),
    "no_kernel_image": (
        "This build has no CUDA kernels for this GPU's architecture",
        "the installed wheel or image was not compiled for this GPU (an older GPU, or a build "
        "without its SM): a build or release that supports it; no engine setting adds kernels",
    ),
}


def environment_problem(ctx) -> list[Finding]:
    events = ctx.of("environment_problem")
    if not events:
        return []
    event = events[0]
    title, advice = _ENVIRONMENT.get(event.signature or "", ("The environment cannot run vLLM", ""))
    driver = event.fields.get("driver_version")
    evidence = [event.line.strip()[:400], "not a configuration problem: " + advice]
    if driver:
        evidence.append(f"the driver reports CUDA version {driver}")
    return [Finding("environment-problem", None, "error", title, tuple(evidence), ())]


RULES = (
    remote_code_required,
    checkpoint_weights_mismatch,
    mistral_format_mismatch,
    environment_problem,
)
