"""Build the tiny Llama model the real-vLLM tests serve: random weights, no download.

Shape (the one known to run on vLLM's CPU backend): hidden 256, intermediate 512, 2 layers,
4 attention heads, 2 KV heads (head_dim 64), max_position_embeddings 2048, bfloat16, and a
byte-level BPE tokenizer of 512 tokens trained on a few sentences, with a chat template.
head_dim 16 crashes the CPU attention kernels, so do not shrink the heads further.
Run with the vLLM environment's Python: python make_tiny_model.py OUTPUT_DIR
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch
from tokenizers import ByteLevelBPETokenizer
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

SENTENCES = [
    "The quick brown fox jumps over the lazy dog.",
    "vLLM serves large language models with paged attention and continuous batching.",
    "Headroom watches the KV cache, the GPUs and the links between them.",
    "Tensor parallelism splits every layer; pipeline parallelism splits the stack.",
    "Hello, how are you today? I am fine, thank you for asking.",
    "0123456789 !?.,;:'\"()[]{}<>/\\|@#$%^&*-+=_~`",
] * 20

CHAT_TEMPLATE = (
    "{% for message in messages %}<|{{ message['role'] }}|>{{ message['content'] }}\n"
    "{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}"
)


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(
        SENTENCES, vocab_size=512, min_frequency=1, special_tokens=["<s>", "</s>", "<unk>", "<pad>"]
    )
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=bpe._tokenizer,
        bos_token="<s>",
        eos_token="</s>",
        unk_token="<unk>",
        pad_token="<pad>",
    )
    tokenizer.chat_template = CHAT_TEMPLATE
    tokenizer.save_pretrained(out)
    config = LlamaConfig(
        vocab_size=512,
        hidden_size=256,
        intermediate_size=512,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=64,
        max_position_embeddings=2048,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        torch_dtype="bfloat16",
        tie_word_embeddings=False,
    )
    model = LlamaForCausalLM(config).to(torch.bfloat16)
    model.save_pretrained(out, safe_serialization=True)
    print(out)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
