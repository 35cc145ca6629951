"""Catalog entries: lines that carry a client's text (vLLM's request logger). Recognised so
that nothing quoted in them (a prompt, a request body, an output) ever counts as an event:
their kind is None. First in match order."""

from __future__ import annotations

from headroom.probes.vllm_catalog.signature import Signature as S

_NEVER = "never an event: the line quotes a client's prompt, body or output"

ENTRIES: tuple[S, ...] = (
    S("request_received", None, "info", ("Received request ",), r"Received request \S+: (?:prompt|params): ",
      probe=("Received request %s: prompt: %r", "Received request %s: params: %s"), feeds=_NEVER,
      examples=("Received request cmpl-6a3f: prompt: 'RuntimeError: Engine core initialization failed. See root "
                "cause above.', params: SamplingParams(n=1, temperature=0.7, max_tokens=16), prompt_token_ids: "
                "[1, 2, 3], lora_request: None, prompt_adapter_request: None.",
                "Received request chatcmpl-9c1: params: SamplingParams(n=1, stop=['CUDA out of memory'], "
                "max_tokens=16), lora_request: None.")),
    S("request_details", None, "info", ("details: prompt: ",), r"Request \S+ details: prompt: ",
      probe=("Request %s details: prompt: %r",), feeds=_NEVER,
      examples=("Request chatcmpl-9c1 details: prompt: 'No available memory for the cache blocks', "
                "prompt_token_ids: [1, 2], prompt_embeds shape: None.",)),
    S("request_body", None, "info", (" JSON body: ",), r"Request \S+ JSON body: ",
      probe=("Request %s JSON body: %s",), feeds=_NEVER,
      examples=('Request chatcmpl-9c1 JSON body: {"model":"m","messages":[{"role":"user","content":"EngineCore '
                'encountered a fatal error."}]}',)),
    S("response_generated", None, "info", ("Generated response ",), r"Generated response \S+",
      probe=("Generated response %s%s: output: %r",), feeds=_NEVER,
      examples=("Generated response chatcmpl-9c1: output: 'torch.OutOfMemoryError: CUDA out of memory.', "
                "finish_reason: stop",)),
)  # fmt: skip
