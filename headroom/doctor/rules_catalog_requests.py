"""A request the engine refuses for its length (the catalog's prompt_too_long family, other
than V0's scheduler text that rules_lengths.prompt_too_long answers).

vLLM checks each request against max_model_len before it schedules it, and refuses one that
does not fit; the engine keeps serving. The texts (probes/vllm_catalog, with their releases):
- "The decoder prompt (length 17772) is longer than the maximum model length of 16384. Make
  sure that `max_model_len` is no smaller than the number of text tokens." (V1
  engine/processor.py _validate_model_input, 0.7.3-0.33; V0 llm_engine.py the same);
- "Prompt length of 5016 is longer than the maximum model length of 4096" (0.7.3 V1);
- the OpenAI server's "This model's maximum context length is 16384 tokens. However, you
  requested 122946 tokens" (serving_engine.py 0.2.7-0.33: HTTP 400);
- "max_tokens must be at least 1, got -344." (sampling_params.py: the 0.2-0.4 OpenAI server
  derived max_tokens as max_model_len minus the prompt: a prompt longer than max_model_len).

The field's answer (xorbitsai/inference#3785, unslothai/unsloth#2666, hiyouga/LlamaFactory#7723,
vllm#20409): the prompt (plus the tokens asked for) is longer than max_model_len. vLLM's text
names max_model_len: raise it when the command line set it below what the model allows (an
eval or a trainer passing a small --max-model-len); when max_model_len is already the model's
own context, the client must shorten the prompt or ask for fewer tokens: no engine knob. Raising
max_model_len costs KV cache per sequence, never more memory for activations.
"""

from __future__ import annotations

from headroom.doctor.findings import Action, Finding

# rules_lengths answers V0's scheduler text (prompt-too-long) and, when the command sets
# max_model_len to its limit, the OpenAI refusal (context-length-exceeded)
_ANSWERED_ELSEWHERE = frozenset({"v0_prompt_exceeds_limit"})


def _int(value: object) -> int | None:
    try:
        return int(str(value))
    except (TypeError, ValueError):
        return None


def request_above_max_model_len(ctx) -> list[Finding]:
    events = [e for e in ctx.of("prompt_too_long") if e.signature not in _ANSWERED_ELSEWHERE]
    if not events:
        return []
    event = events[0]
    tokens = _int(event.fields.get("prompt_tokens") or event.fields.get("tokens"))
    limit = _int(event.fields.get("limit"))
    set_len = ctx.knobs.max_model_len
    if event.signature == "openai_context_length" and limit is not None and set_len == limit:
        return []  # context-length-exceeded turns the knob (rules_lengths)
    model_limit = getattr(ctx.model, "max_position_embeddings", None) if ctx.model else None
    evidence = [event.line.strip()[:400]]
    acts: tuple[Action, ...] = ()
    # a knob only where the command's max_model_len is the limit and the model holds the
    # request: a prompt longer than the model's own context is the client's to shorten
    fits_model = tokens is not None and (model_limit is None or tokens <= model_limit)
    if tokens and limit and set_len == limit and fits_model:
        acts = (
            Action(
                "max_model_len",
                "raise",
                tokens,
                f"--max-model-len {limit} is the limit the request hit (vLLM: make sure "
                "max_model_len is no smaller than the number of tokens)",
                "more KV cache per sequence; never beyond the model's trained context",
            ),
        )
    else:
        evidence.append(
            "a request longer than max_model_len is refused and the engine keeps serving: "
            "shorten the prompt (or the tokens asked for) on the client's side; raise "
            "--max-model-len only where it is below the model's own context length"
        )
    size = f" of {tokens:,} tokens" if tokens else ""
    above = f" (max_model_len {limit:,})" if limit else ""
    title = f"A request{size} is longer than the engine allows{above}: the request's length"
    return [Finding("request-above-max-model-len", None, "warning", title, tuple(evidence), acts)]


RULES = (request_above_max_model_len,)
