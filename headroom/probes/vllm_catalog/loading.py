"""Catalog entries: loading the model's config, tokenizer and weights (before any memory is
sized): a model whose code lives in its repository and needs --trust-remote-code, and a
checkpoint whose weight names do not fit the model class vLLM picked. In match order after
`config_checks`, before `failures` (generic "Value error, ").
"""

from __future__ import annotations

from headroom.probes.vllm_catalog.signature import Signature as S

ENTRIES: tuple[S, ...] = (
    # --- model code in the repository: --trust-remote-code ---------------------------------------
    # vllm/transformers_utils/config.py and tokenizer.py (0.2.7+, later tokenizers/hf.py) re-raise
    # transformers' refusal with their own advice.
    S("config_needs_remote_code", "remote_code_required", "error",
      ("Failed to load the model config. If the model is a custom model",
       "If the tokenizer is a custom tokenizer not yet available"), origin="raise",
      probe=("Failed to load the model config. If the model ", "If the tokenizer is a custom "),
      feeds="remote-code-required: --trust-remote-code",
      examples=("RuntimeError: Failed to load the model config. If the model is a custom model not yet available in "
                "the HuggingFace transformers library, consider setting `trust_remote_code=True` in LLM or using "
                "the `--trust-remote-code` flag in the CLI.",
                "RuntimeError: Failed to load the tokenizer. If the tokenizer is a custom tokenizer not yet available "
                "in the HuggingFace transformers library, consider setting `trust_remote_code=True` in LLM or using "
                "the `--trust-remote-code` flag in the CLI.")),
    # transformers' own texts (dynamic_module_utils.resolve_trust_remote_code, older
    # configuration/tokenization auto classes), which vLLM prints when it does not re-raise them
    # (vllm#9531: InternVL2).
    S("hf_needs_remote_code", "remote_code_required", "error",
      ("requires you to execute the configuration file in that repo",
       "requires you to execute the tokenizer file in that repo",
       "contains custom code which must be executed to correctly load the model"),
      origin="transformers", library="Hugging Face transformers (trust_remote_code checks)",
      feeds="remote-code-required: --trust-remote-code",
      examples=("ValueError: Loading moonshotai/Kimi-K2.5 requires you to execute the configuration file in that "
                "repo on your local machine. Make sure you have read the code there to avoid malicious use, then set "
                "the option `trust_remote_code=True` to remove this error.",
                "ValueError: The repository for microsoft/phi-2 contains custom code which must be executed to "
                "correctly load the model. You can inspect the repository content at https://hf.co/microsoft/phi-2.")),
    # --- a Mistral-format tokenizer asked of a repository in Hugging Face format -------------------
    # vllm/transformers_utils/tokenizers/mistral.py find_tokenizer_file (0.6.4-0.11.0): with
    # --tokenizer-mode mistral the repository must hold tekken.json or tokenizer.model.v*
    # (vllm#17210: an HF-format GGUF repo, answered by dropping the mistral modes).
    S("mistral_tokenizer_missing", "mistral_format_mismatch", "error", ("Make sure that a Mistral tokenizer is present",),
      origin="raise", quoted=True, probe=("Make sure that a Mistral ",),
      feeds="mistral-format-mismatch: --tokenizer-mode auto (and config/load format auto)",
      examples=("OSError: Found 0 files matching the pattern: `^tokenizer\\.model\\.v.*$|^tekken\\.json$|"
                "^tokenizer\\.mm\\.model\\.v.*$`. Make sure that a Mistral tokenizer is present in "
                "['Mistral-Small-3.1-24B-Instruct-2503-Q6_K.gguf', 'config.json', 'params.json'].",)),
    # --- weights the model class has no place for ------------------------------------------------
    # vllm/model_executor/models/utils.py AutoWeightsLoader (0.7.3+): a checkpoint weight with no
    # module of that name. A bare base-model name ('embed_tokens', 'layers', not 'model.…') in a
    # *ForCausalLM is a checkpoint saved without its LM head: an embedding model
    # (gpustack/gpustack#2170: Qwen3-Embedding on 0.8.5, answered with --task embed).
    S("no_module_for_weight", "checkpoint_weights_mismatch", "error", ("There is no module or parameter named",),
      r"There is no module or parameter named '(?P<prefix>[^']+)' in (?P<model_class>\w+)", origin="raise",
      quoted=True, probe=("There is no module or parameter named ",), fields=("prefix", "model_class"),
      feeds="checkpoint-weights-mismatch: an embedding checkpoint run as a generator wants --task embed "
            "(--runner pooling from 0.10); else the checkpoint is for another class or release",
      examples=("ValueError: There is no module or parameter named 'embed_tokens' in Qwen3ForCausalLM",)),
)  # fmt: skip
