"""The fix a vLLM message names, in whatever words the release wrote it.

Many of vLLM's own errors end in their cure: "Try increasing `gpu_memory_utilization` or
decreasing `max_model_len`", "consider setting `trust_remote_code=True` in LLM or using the
`--trust-remote-code` flag in the CLI", "You can use float16 instead by explicitly setting the
`dtype` flag in CLI, for example: --dtype=half", "set VLLM_WORKER_MULTIPROC_METHOD to spawn",
"Consider reducing tensor_parallel_size to 8 or less". `fixes_in_message` reads such a text
into `NamedFix`es: the knob (a `--flag`, an engine-arg name in backticks, quotes or bare, an
environment variable), the way the verb turns it (raise / lower / set) and the value when
the text gives one. The grammar follows how vLLM writes hints in every release read (the
survey of scripts/hint_survey.py over 0.1.2-0.33.0: "Try/Please/Consider" + a gerund or an
imperative, "You can/should/must ...", "To increase this limit, set X", "X must be set",
"This model requires `--x v`", "(e.g. `--x 0.5`)"), and refuses what is not advice: vLLM
narrating what it does ("Setting X to 'spawn'.", "Using ..."), a statement about a flag
("--x is not supported with ...", "You set ... in `--limit-mm-per-prompt`, but ..."),
"cannot set", advice to silence a warning or to see more (`VLLM_LOGGING_LEVEL=DEBUG`), and a
question, a hedge or words quoted whole ("Maybe set ...?", 'It says "Try increasing ..."').

Which lines are vLLM's own messages (not a person's words, a client's quoted text or a
source line) is vllm_hint_lines' business. Never raises; the work is bounded by the length
read (`MAX_CHARS`) and the fixes kept (`_MAX_FIXES`).
"""

from __future__ import annotations

from collections.abc import Container
from dataclasses import dataclass, replace

from headroom.probes.vllm_hint_words import (
    ABBREVIATIONS,
    BASE_VERBS,
    DEBUG_AID,
    DEVELOPER,
    EXAMPLE_WORDS,
    GERUND_ADVICE,
    GERUNDS,
    HEDGE,
    IMPERATIVE_AFTER,
    MAX_CHARS,
    MODALS,
    NOT_ADVICE,
    QUOTED_SPEECH,
    QUOTES,
    REQUIRE,
    SCOPE_END,
    SENTENCE_END,
    SILENCE,
    SUBJECTS,
    TO_REQUEST,
    TOKEN,
    URL,
    Mention,
    as_number,
    before_article,
    flag_value,
    mention_of,
    previous_word,
    trailer,
    value_at,
    word_of,
)

__all__ = ["NamedFix", "fixes_in_message"]

_MAX_FIXES = 16


@dataclass(frozen=True)
class NamedFix:
    """One change a message names. `knob`: an engine-arg name with underscores (from a flag,
    `--no-x` gives x with value "false") or an environment variable's name; `form`: how it
    was written ("flag", "env", "arg"); `value`: the text's value as written, None when it
    gives none; `remove`: the text says to drop the setting."""

    knob: str
    form: str
    direction: str  # "raise" | "lower" | "set"
    value: str | None
    verb: str
    sentence: str
    spelled: str = ""  # the knob as the text wrote it ("--trust-remote-code")
    remove: bool = False
    numbers: tuple[float, ...] = ()


def fixes_in_message(message: object, names: Container[str] | None = None) -> tuple[NamedFix, ...]:
    """Every fix vLLM's `message` names, in its order, one per knob (empty for a text that
    advises nothing). `names`: the engine-arg names a bare or quoted lower-case name may be
    (the flag table's); None accepts any snake_case name. Never raises."""
    if not isinstance(message, str) or not message.strip():
        return ()
    try:
        text = QUOTED_SPEECH.sub(' "..." ', message[:MAX_CHARS].translate(QUOTES))
        text = URL.sub(" ", text)
        text = ABBREVIATIONS.sub(lambda m: "eg" if m.group(1) else "ie", text)
        found: dict[str, NamedFix] = {}
        for sentence in SENTENCE_END.split(text):
            if len(found) >= _MAX_FIXES:
                break
            if not sentence.strip() or SILENCE.search(sentence) or DEVELOPER.search(sentence):
                continue
            if DEBUG_AID.search(sentence) or HEDGE.search(sentence):
                continue
            for fix in _sentence_fixes(sentence.strip(), names):
                seen = found.get(fix.knob)
                # the same knob named twice ("requires `--tensor-parallel-size` ... Increase
                # `--tensor-parallel-size`"): the naming that says which way or to what wins
                if seen is None or (seen.direction == "set" and seen.value is None and
                                    (fix.direction != "set" or fix.value is not None)):  # fmt: skip
                    found[fix.knob] = fix
        return tuple(found.values())[:_MAX_FIXES]
    except (RecursionError, MemoryError, ValueError, TypeError, IndexError):
        return ()


@dataclass
class _Verb:
    direction: str  # raise / lower / set / enable / disable / remove
    word: str
    remove: bool = False


_LAUNCH = ("run", "launch", "relaunch", "start", "running", "launching", "restart")


def _sentence_fixes(sentence: str, names) -> list[NamedFix]:
    tokens = list(TOKEN.finditer(sentence))
    numbers = tuple(float(t.group("num")) for t in tokens if t.group("num"))
    words = [word_of(t) for t in tokens]
    out: list[NamedFix] = []
    verb: _Verb | None = None
    listed: list[int] = []  # the fixes the current verb governs, in out
    advised = False  # an advice marker seen earlier in the sentence (for gerunds)
    purpose = _purpose(words)
    i = 0
    while i < len(tokens):
        t, w = tokens[i], words[i]
        prev = previous_word(words, i)
        mention = mention_of(t, names)
        if mention is not None:
            if prev in EXAMPLE_WORDS or (
                prev == ":" and previous_word(words, i - 1) in EXAMPLE_WORDS
            ):
                _fill_example(out, mention)
            elif verb is not None:
                governed, i = _governed(mention, verb, tokens, words, i, sentence, numbers)
                if governed is not None:
                    _share_way(out, listed, governed)
                    listed.append(len(out))
                    out.append(governed)
            else:
                fix, i = _after_mention(mention, tokens, words, i, sentence, numbers)
                if fix is not None:
                    out.append(fix)
            i += 1
            continue
        if w in GERUND_ADVICE:
            advised = True
        found = _verb_at(words, i, prev, advised)
        if found is None and w == "without" and verb is not None and verb.word in _LAUNCH:
            found = _Verb("remove", w, remove=True)  # "Run this model without `enable_lora`."
        if found is not None:
            verb, listed = found, []
            advised = True
        elif w == "instead":
            if verb is not None and names is not None:
                fix = _instead_of(tokens, words, i, verb, names, sentence, numbers)
                if fix is not None:
                    out.append(fix)
            verb = None
        elif w in SCOPE_END or (w == "to" and _purpose_at(words, i)):
            verb = None
        elif w in ("like", "eg", "example") and out and t.group("word2"):
            _fill_number(out, tokens, i)
        i += 1
    if purpose is not None:
        out = [replace(f, direction=purpose) if f.direction == "set" and f.value is None and
               not f.remove else f for f in out]  # fmt: skip
    return out


def _verb_at(words: list[str], i: int, prev: str, advised: bool) -> _Verb | None:
    w = words[i]
    before = words[i - 1] if i > 0 else ""
    negated = before in ("not", "don't", "never") and previous_word(words, i - 1) in (
        "do",
        "please",
        "",
        "and",
        "or",
        ",",
    )
    if negated and (w in BASE_VERBS or w in GERUNDS):
        return _Verb("remove", w, remove=True)
    if before in ("not",) and w in ("specifying", "setting", "passing", "using"):
        return _Verb("remove", w, remove=True)
    if w in BASE_VERBS:
        if prev in NOT_ADVICE or prev in SUBJECTS:
            return None
        if prev == "to":
            if previous_word(words, i - 1) not in TO_REQUEST:
                return None
        elif prev not in IMPERATIVE_AFTER and not (prev in SUBJECTS and before in MODALS):
            return None
        if w in ("run", "launch", "relaunch", "start") and not {"with", "without"} & set(
            words[i + 1 : i + 6]
        ):
            return None
        if w == "try" and i + 1 < len(words) and words[i + 1] in GERUNDS:
            return None  # "try increasing": the gerund is the verb
        return _Verb(BASE_VERBS[w], w, remove=BASE_VERBS[w] == "remove")
    if w in GERUNDS and advised and prev not in NOT_ADVICE:
        return _Verb(GERUNDS[w], w, remove=GERUNDS[w] == "remove")
    hedged = before in ("may", "might", "could", "would")  # "which may require lowering ..."
    if w in REQUIRE and not hedged and prev not in NOT_ADVICE and words[i + 1 : i + 2] != ["to"]:
        return _Verb("set", w)
    if w == "without" and prev in ("run", "running", "launch", "start", "restart", "or"):
        return _Verb("remove", w, remove=True)
    return None


def _purpose_at(words: list[str], i: int) -> bool:
    """'to' before a verb that is a purpose ("... to increase this limit")."""
    nxt = words[i + 1] if i + 1 < len(words) else ""
    return (nxt in BASE_VERBS or nxt in ("provide", "avoid", "get", "make", "allow")) and (
        previous_word(words, i) not in TO_REQUEST
    )


def _purpose(words: list[str]) -> str | None:
    """The way a purpose turns the knob a sentence sets: "To increase this limit, set X",
    "Set X to increase.", "set X to allow more"."""
    for i, w in enumerate(words[:-1]):
        if w == "to" and previous_word(words, i) not in TO_REQUEST:
            nxt = words[i + 1]
            if nxt in ("increase", "raise", "allow", "extend"):
                return "raise" if nxt != "allow" or "more" in words[i + 2 : i + 5] else None
            if nxt in ("decrease", "reduce", "lower", "limit"):
                return "lower"
    return None


def _governed(mention, verb, tokens, words, i, sentence, numbers):
    """The fix for a mention under a verb (None when the mention is only where the change
    goes: "drop "device" from --mm-processor-kwargs"), and the index of the last token read."""
    value, direction, j = mention.value, verb.direction, i
    remove = verb.remove or mention.remove
    container = before_article(words, i) in ("in", "inside", "within", "into", "from")
    if container and (verb.remove or verb.word in REQUIRE):
        return None, i
    if value is None and mention.form == "flag":
        value, j = flag_value(tokens, words, i)
    if direction in ("enable", "disable"):
        on = direction == "enable"
        if value is None and not container:
            value = ("1" if on else "0") if mention.form == "env" else ("true" if on else "false")
        direction = "set"
    if direction == "remove":
        direction = "set"
    extra_value, extra_way, j = trailer(tokens, words, j)
    if value is None and extra_value is not None and not remove:
        value = extra_value
    if extra_way is not None and direction == "set" and not remove:
        direction = extra_way
    if mention.way is not None and direction == "set" and not remove:
        direction = mention.way
    fix = NamedFix(mention.knob, mention.form, direction, value, verb.word, sentence[:400],
                   mention.spelled, remove, numbers)  # fmt: skip
    return fix, j


def _share_way(out: list[NamedFix], listed: list[int], last: NamedFix) -> None:
    """ "requires tensor_parallel_size or data_parallel_size to be greater than 1": the way
    the list's last knob is given goes for the knobs listed with it under the same verb."""
    if last.direction == "set" or last.remove:
        return
    for n in listed:
        if out[n].direction == "set" and out[n].value is None and not out[n].remove:
            out[n] = replace(out[n], direction=last.direction)


def _after_mention(mention, tokens, words, i, sentence, numbers):
    """A mention with no verb before it: "X must be set", "X must be 'V'", "X should be
    enabled", "make sure X is set", "is only enabled for `--task embed`" (the verb after)."""
    look = words[i + 1 : i + 5]
    before = words[max(0, i - 4) : i]
    j = i
    value = mention.value
    if look[:2] in (["must", "be"], ["should", "be"], ["needs", "to"], ["has", "to"]):
        k = i + 3 if look[1] == "be" else i + 4
        nxt = words[k] if k < len(words) else ""
        if nxt in ("set", "enabled", "specified", "provided", "passed", "given", "true"):
            if nxt == "enabled" or nxt == "true":
                value = value or ("1" if mention.form == "env" else "true")
            return _fix(mention, "set", value, "must be " + nxt, sentence, numbers), k
        said = tokens[k] if k < len(tokens) else None
        if said is not None and (
            said.group("sq") or said.group("dq") or said.group("tick") or said.group("num")
        ):  # "'load_format' must be 'runai_streamer'", "data_parallel_size_local must be 1"
            return _fix(mention, "set", value_at(tokens, k), "must be", sentence, numbers), k
        return None, j
    if before[-1:] == ["without"] and look[:2] == ["set", "to"]:
        # "torch_shm is known to fail without VLLM_WORKER_MULTIPROC_METHOD set to spawn" (0.20.2)
        return _fix(
            mention, "set", value_at(tokens, i + 3), "without set", sentence, numbers
        ), i + 3
    if before[-1:] == ["leave"] and look[:1] == ["unset"]:  # "leave --all2all-backend unset."
        return NamedFix(mention.knob, mention.form, "set", None, "leave unset", sentence[:400],
                        mention.spelled, True, numbers), i + 1  # fmt: skip
    if ("sure" in before or "ensure" in before) and look[:1] in (["is"], ["are"]):
        nxt = look[1] if len(look) > 1 else ""
        if nxt in ("set", "enabled", "given"):
            return _fix(mention, "set", value or "true", "make sure", sentence, numbers), i + 2
    if (
        len(before) >= 2
        and before[-1] in ("for", "with")
        and before[-2] in ("enabled", "supported", "available", "allowed")
        and "only" in before
    ):
        return _fix(mention, "set", value, "only " + before[-2], sentence, numbers), j
    return None, j


def _instead_of(tokens, words, i, verb, names, sentence, numbers) -> NamedFix | None:
    """ "use 'hf-internal-testing/llama-tokenizer' instead of the original tokenizer" (0.1.2
    tokenizer.py): the quoted value before "instead of the <knob>" is the knob's value."""
    if words[i + 1 : i + 2] != ["of"] or verb.direction != "set":
        return None
    k = i + 2
    while k < len(words) and words[k] in ("the", "original", "default", "current", "model's"):
        k += 1
    knob = words[k] if k < len(words) else ""
    if knob not in names or words[k + 1 : k + 2] not in ([], [","], [";"], [")"], [":"]):
        return None
    value = next(
        (value_at(tokens, n) for n in range(i - 1, max(-1, i - 4), -1) if words[n] == "#"), None
    )
    if value is None:
        return None
    mention = Mention(knob, "arg", knob, value, tokens[k].end())
    return _fix(mention, "set", value, verb.word, sentence, numbers)


def _fix(mention, direction, value, verb, sentence, numbers) -> NamedFix:
    return NamedFix(mention.knob, mention.form, direction, value, verb, sentence[:400],
                    mention.spelled, False, numbers)  # fmt: skip


def _fill_example(out: list[NamedFix], mention: Mention) -> None:
    """ "(e.g. `--gpu-memory-utilization 0.5`)", "for example: --dtype=half": the example's
    value goes to the fix of the same knob before it that has none."""
    for n in range(len(out) - 1, -1, -1):
        if out[n].knob == mention.knob:
            if out[n].value is None and mention.value is not None and not out[n].remove:
                out[n] = replace(out[n], value=mention.value)
            return


def _fill_number(out: list[NamedFix], tokens, i: int) -> None:
    """ "to a smaller value, like 8": the number after "like"/"e.g." is the value."""
    value = value_at(tokens, i + 1)
    if value is not None and as_number(value) is not None and out[-1].value is None:
        out[-1] = replace(out[-1], value=value)
