"""The words of vLLM's hints: how a knob is written, the verbs and the small words around
them, and the values a text gives (the vocabulary of vllm_hints' grammar, from the survey of
scripts/hint_survey.py over vLLM 0.1.2-0.33.0). Pure functions over regex matches; never raise.
"""

from __future__ import annotations

import re
from collections.abc import Container
from dataclasses import dataclass

__all__ = [
    "ABBREVIATIONS",
    "BASE_VERBS",
    "DEBUG_AID",
    "DEVELOPER",
    "EXAMPLE_WORDS",
    "GERUNDS",
    "GERUND_ADVICE",
    "HEDGE",
    "IMPERATIVE_AFTER",
    "LARGER",
    "MAX_CHARS",
    "MODALS",
    "Mention",
    "NOT_ADVICE",
    "QUOTED_SPEECH",
    "QUOTES",
    "REQUIRE",
    "SCOPE_END",
    "SENTENCE_END",
    "SILENCE",
    "SMALLER",
    "SUBJECTS",
    "TOKEN",
    "TO_REQUEST",
    "URL",
    "as_number",
    "flag_value",
    "mention_of",
    "before_article",
    "previous_word",
    "trailer",
    "value_at",
    "word_of",
]

MAX_CHARS = 4000

# --- mentions: the ways a knob is written -------------------------------------------------
_FLAG = r"--(?P<flag>[a-z][a-z0-9]*(?:[-_][a-z0-9]+)*)(?:\.[a-z_][\w.]*)?(?:=(?P<fval>\"[^\"]*\"|'[^']*'|[^\s,;)`'\"]+))?"
_ENV = r"(?P<env>[A-Z][A-Z0-9]*_[A-Z0-9_]*[A-Z0-9])(?:=(?P<eval>[^\s,;)`'\"]+))?"
_ARG = (
    r"(?P<arg>[a-z][a-z0-9]*(?:_[a-z0-9]+)+)(?:\s?=\s?(?P<aval>\"[^\"]*\"|'[^']*'|[^\s,;)`'\"]+))?"
)
_INNER = re.compile(
    rf"^\s*(?:export\s+)?(?:{_FLAG}(?:\s+(?P<fsep>[^\s`'\"]+))?|{_ENV}|{_ARG}|(?P<word>[a-z][a-z0-9]*))"
    r"(?:\s*(?P<icmp>>=|<=|>|<)\s*(?P<inum>\d+(?:\.\d+)?))?\s*$"
)
# Environment variables vLLM's texts name: its own and those of the libraries it runs on. Any
# other ALL_CAPS_NAME counts only when written as an assignment (`FLASH_ATTN` alone is a
# backend's name, `--attention-backend FLASH_ATTN` a flag's value).
_ENV_PREFIXES = ("VLLM_", "NCCL_", "CUDA_", "PYTORCH_", "TORCH_", "TORCHINDUCTOR_", "HF_", "HIP_",
                 "RAY_", "OMP_", "GLOO_", "TOKENIZERS_", "TRANSFORMERS_", "UCX_", "NVIDIA_",
                 "HUGGING_FACE_", "LD_", "MKL_", "KMP_", "CUBLAS_", "TRITON_CACHE", "NVTE_")  # fmt: skip
TOKEN = re.compile(
    rf"`(?P<tick>[^`]{{1,120}})`|(?<![A-Za-z0-9])'(?P<sq>[^'\n]{{1,400}})'(?![A-Za-z0-9])"
    rf"|\"(?P<dq>[^\"\n]{{1,400}})\"|(?<![\w-]){_FLAG}|(?<![\w.]){_ENV}|(?<![\w.]){_ARG}"
    r"|(?P<num>(?<![\w.])-?\d+(?:\.\d+)?(?!\w|\.\d))|(?P<word2>[A-Za-z][A-Za-z0-9'-]*)"
    r"|(?P<cmp><=|>=|<|>)|(?P<op>[+*/])|(?P<punct>[,:;()])"
)

# --- verbs ---------------------------------------------------------------------------------
BASE_VERBS = {
    "increase": "raise", "raise": "raise", "enlarge": "raise",
    "decrease": "lower", "reduce": "lower", "lower": "lower", "shrink": "lower",
    "set": "set", "pass": "set", "use": "set", "specify": "set", "add": "set", "provide": "set",
    "export": "set", "select": "set", "choose": "set", "adjust": "set", "change": "set",
    "try": "set", "run": "set", "launch": "set", "relaunch": "set", "start": "set",
    "enable": "enable", "disable": "disable",
    "remove": "remove", "omit": "remove", "unset": "remove", "drop": "remove",
}  # fmt: skip
GERUNDS = {
    "increasing": "raise", "raising": "raise", "decreasing": "lower", "reducing": "lower",
    "lowering": "lower", "setting": "set", "passing": "set", "using": "set", "specifying": "set",
    "adding": "set", "providing": "set", "running": "set", "launching": "set", "adjusting": "set",
    "changing": "set", "selecting": "set", "enabling": "enable", "disabling": "disable",
    "removing": "remove", "omitting": "remove", "unsetting": "remove", "switching": "set",
}  # fmt: skip
REQUIRE = {"requires", "require", "needs"}
MODALS = {"can", "could", "should", "must", "may", "might", "need", "needs", "will"}
_ADVERBS = {"explicitly", "also", "instead", "manually", "simply", "just", "then", "either",
            "additionally", "alternatively", "please", "now", "first"}  # fmt: skip
# Before an imperative: the start of a clause, a request, a modal, a conjunction.
IMPERATIVE_AFTER = {"", "please", "try", "and", "or", "then", ",", ":", "(", ";", "-", "fix",
                     "resolve", "workaround", "otherwise"} | MODALS  # fmt: skip
# "to" before a verb is a request only after these ("you need to set", "make sure to set");
# otherwise it is a purpose ("... to increase this limit").
TO_REQUEST = {"need", "needs", "want", "sure", "have", "has", "try", "recommended", "advised",
               "required", "able", "like", "consider", "please", "wish", "ought"}  # fmt: skip
# A gerund is advice only after one of these in its sentence ("Try increasing", "consider
# setting", "by setting", "via"): "Setting X to 'spawn'." alone is vLLM saying what it does.
GERUND_ADVICE = {"try", "consider", "by", "via", "recommend", "recommended", "suggest",
                  "suggested", "please"}  # fmt: skip
SUBJECTS = {"i", "we", "they", "he", "she", "it", "you", "this", "that", "which", "who"}
NOT_ADVICE = {"is", "are", "was", "were", "be", "been", "being", "has", "have", "had", "not",
               "cannot", "can't", "never", "no", "unable", "without", "already", "once"}  # fmt: skip
SCOPE_END = {"but", "because", "since", "which", "when", "if", "unless", "while", "than",
              "whereas", "although", "though", "where", "so", "otherwise", "got", "found",
             "until", "during", "after", "before"}  # fmt: skip
SMALLER = {"smaller", "lower", "less", "fewer", "shorter", "decrease", "reduce"}
LARGER = {"larger", "higher", "more", "bigger", "greater", "longer", "increase", "raise"}
EXAMPLE_WORDS = {"eg", "ie", "example", "like"}
_VALUE_STOP = {"a", "an", "the", "be", "at", "match", "it", "this", "that", "your", "its", "any",
               "true", "false", "none", "value", "values", "zero", "override", "avoid", "allow",
               "get", "make", "fix", "tune", "see", "skip", "force", "point", "help", "bypass",
               "accommodate", "suppress", "silence", "continue", "proceed", "work", "load"}  # fmt: skip
SILENCE = re.compile(r"\b(?:silence|suppress)\s+this\s+warning|\bto\s+silence\b", re.I)
# Words in quotes (three or more): someone's speech quoted, never advice of the text itself
# ('It says "Try increasing ..."'); a quoted name or value ('trust_remote_code=true') stays.
QUOTED_SPEECH = re.compile(
    r"\"(?=[^\"\n]*\s[^\"\n]*\s)[^\"\n]{1,400}\"|(?<![A-Za-z0-9])'(?=[^'\n]*\s[^'\n]*\s)[^'\n]{1,400}'(?![A-Za-z0-9])"
)
# A link: its "--" and "?" are no flag and no question (the "?" that ends the sentence stays).
URL = re.compile(r"\b\w+://\S*?(?=[?.,;)]*(?:\s|$))")
QUOTES = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"', "\u00a0": " "})
# A sentence ends at ". ", ";" or a line break, and where vLLM's string pieces were joined
# without the space ("... is not enabled.Use --enable-prefix-caching to enable.", 0.9.0).
SENTENCE_END = re.compile(r"(?<=[.!?;])\s+|\n+|(?<=[a-z]{3}\.)(?=[A-Z][a-z]+\s)")
ABBREVIATIONS = re.compile(r"\b(e)\.g\.|\b(i)\.e\.", re.I)
# Developer texts (an internal check, a bug report request) advise no user.
DEVELOPER = re.compile(r"\bby this point\b|\bshould not happen\b|\bplease open an issue\b", re.I)
# A way to see more, not a fix: "(run with NCCL_DEBUG=WARN for details)", "set the environment
# variable `VLLM_LOGGING_LEVEL=DEBUG` to turn on verbose logging to help debug the issue",
# PyTorch's "For debugging consider passing CUDA_LAUNCH_BLOCKING=1".
DEBUG_AID = re.compile(
    r"(?i:\bfor (?:more )?details\b|\bfor more info|\bverbose\b|\bto (?:help )?debug\b|\bto see\b"
    r"|\bfor debugging\b|\bdevice-side assertions\b)"
    r"|_DEBUG\b|LOGGING_LEVEL|=(?:DEBUG|TRACE|INFO)\b"
)
# A question or a hedge: a person wondering, never vLLM's advice ("Should I increase
# --max-model-len?", "maybe set VLLM_USE_V1=0", "I think --enforce-eager helps").
HEDGE = re.compile(
    r"\?\s*$|\b(?:maybe|perhaps|possibly|probably|i think|i guess|not sure|i wonder|wondering"
    r"|is it|does it|would it|shall i|should i|can i|do i)\b",
    re.I,
)
# Words that never are a flag's value ("--enforce-eager is set", "--x flag in the CLI").
_NOT_VALUE = {"a", "an", "the", "to", "is", "are", "was", "be", "in", "on", "of", "or", "and",
              "for", "with", "as", "at", "if", "when", "instead", "flag", "flags", "argument",
              "arguments", "option", "parameter", "engine", "cli", "command", "explicitly",
              "appropriately", "only", "not", "also", "which", "that", "this", "so", "by",
              "from", "into", "set", "enabled", "disabled", "here", "there", "it", "unless",
              "while", "because", "but", "then", "since", "where", "whether"}  # fmt: skip


@dataclass
class Mention:
    knob: str
    form: str
    spelled: str
    value: str | None
    end: int
    remove: bool = False
    way: str | None = None  # a comparison written with it: `x > 0`


def mention_of(m: re.Match[str], names: Container[str] | None) -> Mention | None:
    """The knob a token names, or None (a quoted value, a word)."""
    inner = m.group("tick") or m.group("sq") or m.group("dq")
    if inner is not None:
        parsed = _INNER.match(inner)
        if parsed is None:
            return None
        word = parsed.group("word")
        if word is not None:
            # `dtype` (backticks): a knob when the flag table names it; a quoted "device" is a
            # key or a value far more often than a knob
            known = names is not None and word in names and m.group("tick") is not None
            return Mention(word, "arg", inner.strip(), None, m.end()) if known else None
        found = _from_groups(parsed, names, m.end(), inner.strip())
        way, number = _compared(parsed)
        if found is not None and way is not None:
            found.way, found.value = way, found.value or number
        return found
    if m.group("flag") or m.group("env") or m.group("arg"):
        return _from_groups(m, names, m.end(), m.group(0))
    return None


def _from_groups(m: re.Match[str], names, end: int, spelled: str) -> Mention | None:
    groups = m.groupdict()
    if groups.get("flag"):
        flag = groups["flag"].replace("_", "-")
        value = _unquote(groups.get("fval") or groups.get("fsep"))
        if flag.startswith("no-") and value is None:
            return Mention(flag[3:].replace("-", "_"), "flag", spelled, "false", end)
        return Mention(flag.replace("-", "_"), "flag", spelled, value, end)
    if groups.get("env"):
        env, value = groups["env"], _unquote(groups.get("eval"))
        if not env.startswith(_ENV_PREFIXES) and groups.get("eval") is None:
            return None
        return Mention(env, "env", spelled, value, end)
    arg = groups.get("arg")
    if arg and (names is None or arg in names):
        return Mention(arg, "arg", spelled, _unquote(groups.get("aval")), end)
    return None


def _compared(m: re.Match[str] | None) -> tuple[str | None, str | None]:
    """`mm_processor_cache_gb > 0`, "--x <= 16": (way, value) of a comparison."""
    if m is None or not m.groupdict().get("icmp"):
        return None, None
    op, number = m.group("icmp"), m.group("inum")
    if op.startswith(">"):
        return "raise", number if op == ">=" else None
    return "lower", number if op == "<=" else None


def _unquote(value: str | None) -> str | None:
    if value is None:
        return None
    value = value.strip().strip("'\"").rstrip(".")
    if not value or value.startswith(("<", "[")) or value in ("{}", "..."):
        return None  # "VLLM_ENGINE_READY_TIMEOUT_S=<seconds>": a placeholder, not a value
    return value


def word_of(t: re.Match[str]) -> str:
    if t.group("word2"):
        return t.group("word2").lower()
    if t.group("punct"):
        return t.group("punct")
    if t.group("cmp"):
        return t.group("cmp")
    if t.group("op"):
        return t.group("op")
    return "#"  # a mention, a number or a quoted value


def previous_word(words: list[str], i: int) -> str:
    j = i - 1
    while j >= 0 and words[j] in _ADVERBS:
        j -= 1
    return words[j] if j >= 0 else ""


def value_at(tokens, k: int) -> str | None:
    """A value token: a number, a quoted word, True/False, a bare lower-case word that ends
    the clause ("to spawn.", "to 'spawn'")."""
    if k >= len(tokens):
        return None
    t = tokens[k]
    if t.group("num"):
        return t.group("num")
    inner = t.group("tick") or t.group("sq") or t.group("dq")
    if inner is not None:
        inner = inner.strip()
        return inner if re.fullmatch(r"[\w.:+/-]{1,60}", inner) else None
    word = t.group("word2") or t.group("arg")
    if word is None:
        return None
    low = word.lower()
    if low in ("true", "false", "none"):
        return word
    if low in _VALUE_STOP or low in BASE_VERBS or low in GERUNDS or not word.islower():
        return None
    nxt = tokens[k + 1] if k + 1 < len(tokens) else None
    if (
        nxt is None
        or nxt.group("punct")
        or (nxt.group("word2") or "").lower()
        in ("or", "and", "instead", "explicitly", "manually", "first", "too")
    ):
        return word
    return None


def flag_value(tokens, words, i: int) -> tuple[str | None, int]:
    """A flag's value written after it with a space ("--quantization gptq.", "--block-size
    32 or ...", "--kv-cache-dtype auto to use ..."): a number, or a lower-case word that ends
    the clause; and the index of the last token read."""
    if i + 1 >= len(tokens):
        return None, i
    t = tokens[i + 1]
    if t.group("num"):
        return t.group("num"), i + 1
    if t.group("env") and not t.group("eval"):
        return t.group("env"), i + 1
    word = t.group("word2") or (t.group("arg") if not t.group("aval") else None)
    if (
        word is None
        or not word.islower()
        or word in _NOT_VALUE
        or word in BASE_VERBS
        or word in GERUNDS
    ):
        return None, i
    after = words[i + 2] if i + 2 < len(words) else ""
    if after in ("", ",", ";", ":", ")", "(", "or", "and", "to", "for", "instead", "in", "with"):
        return word, i + 1
    return None, i


def as_number(value: str | None) -> float | None:
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def before_article(words: list[str], i: int) -> str:
    """The word before a mention, past "the"/"a"/"your" ("unset X in the speculative_config")."""
    j = i - 1
    while j >= 0 and words[j] in ("the", "a", "an", "your", "its", "this"):
        j -= 1
    return words[j] if j >= 0 else ""


def trailer(tokens, words, i):
    """After a mention: "to V", "to a smaller value", "to at most N", "N or less", "from A to
    B", "to be at least N"; returns (value, way, index of the last token read)."""
    j, value, way = i, None, None
    if i + 1 < len(words) and words[i + 1] == "(":  # "`--tensor-parallel-size` (8) to be ..."
        close = next((k for k in range(i + 2, min(len(words), i + 8)) if words[k] == ")"), None)
        if close is not None:
            i = j = close
    look = words[i + 1 : i + 9]
    number = tokens[i + 2].group("num") if i + 2 < len(tokens) else None
    if look[:1] and look[0] in ("<=", ">=", "<", ">") and number:  # "--data-parallel-size > 1"
        way = "raise" if look[0].startswith(">") else "lower"
        end = i + 2
        while end + 2 < len(words) and words[end + 1] in ("+", "*", "/"):  # ">= 1 + n": no value
            number, end = None, end + 2
        return (number if "=" in look[0] else None), way, end
    if look[:1] == ["to"] or look[:2] == ["to", "be"]:
        k = i + (3 if look[:2] == ["to", "be"] else 2)
        rest = words[k : k + 4]
        if rest[:2] in (["at", "most"], ["no", "more"]):
            way, value, j = "lower", value_at(tokens, k + 2), k + 2
        elif rest[:2] in (["at", "least"], ["no", "less"]):
            way, value, j = "raise", value_at(tokens, k + 2), k + 2
        elif rest[:1] == ["a"] and len(rest) > 1 and (rest[1] in SMALLER or rest[1] in LARGER):
            way, j = ("lower" if rest[1] in SMALLER else "raise"), k + 1
        elif rest[:1] and (rest[0] in SMALLER or rest[0] in LARGER) and rest[0] not in BASE_VERBS:
            way, j = ("lower" if rest[0] in SMALLER else "raise"), k
        elif rest[:1] == ["less"] or rest[:2] == ["less", "than"]:
            way, j = "lower", k
        else:
            value = value_at(tokens, k)
            if value is not None:
                j = k
                after = words[k + 1 : k + 3]
                if after in (["or", "less"], ["or", "lower"], ["or", "fewer"], ["or", "smaller"]):
                    way, j = "lower", k + 2
                elif after in (["or", "more"], ["or", "higher"], ["or", "larger"]):
                    way, j = "raise", k + 2
    elif look[:1] == ["from"] and len(look) >= 4 and look[2] == "to":
        start, end = value_at(tokens, i + 2), value_at(tokens, i + 4)
        number_a, number_b = as_number(start), as_number(end)
        if number_b is not None:
            value, j = end, i + 4
            if number_a is not None and number_a != number_b:
                way = "raise" if number_b > number_a else "lower"
    return value, way, j
