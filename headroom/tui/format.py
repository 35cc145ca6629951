"""Formatting of probe values for display. Every function takes `None` and returns "N/A":
a value a probe could not read is shown as missing, never as zero and never as a crash."""

from __future__ import annotations

import math
import re

from headroom.probes.metrics_window import Latency
from headroom.probes.safe_text import safe_text

NA = "N/A"


def _missing(value: object) -> bool:
    return value is None or (isinstance(value, float) and not math.isfinite(value))


def _known(value: float | None) -> float | None:
    """The value, or None when it is missing (None, NaN, infinite)."""
    return None if value is None or not math.isfinite(value) else value


def percent(fraction: float | None, digits: int = 0) -> str:
    """0..1 -> '42%'."""
    if (known := _known(fraction)) is None:
        return NA
    return f"{known * 100:.{digits}f}%"


def count(value: float | None) -> str:
    """Whole numbers with thin grouping: 123456 -> '123,456'; floats rounded."""
    if (known := _known(value)) is None:
        return NA
    return f"{round(known):,}"


def compact(value: float | None) -> str:
    """Large counts in few characters: 1234567 -> '1.2M'."""
    if (value := _known(value)) is None:
        return NA
    for limit, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= limit:
            return f"{value / limit:.1f}{suffix}"
    return f"{value:.0f}" if float(value).is_integer() else f"{value:.1f}"


def rate(value: float | None, unit: str = "/s") -> str:
    if _missing(value):
        return NA
    return f"{compact(value)}{unit}"


def gib(num_bytes: float | None, digits: int = 1) -> str:
    """Bytes -> GiB, the unit vLLM's own log uses."""
    if (known := _known(num_bytes)) is None:
        return NA
    return f"{known / 2**30:.{digits}f} GiB"


def seconds_as_latency(seconds: float | None) -> str:
    """Latency in the unit that reads best: 0.0123 -> '12 ms', 1.5 -> '1.50 s'."""
    if (seconds := _known(seconds)) is None:
        return NA
    if seconds < 1:
        ms = seconds * 1000
        return f"{ms:.1f} ms" if ms < 10 else f"{ms:.0f} ms"
    return f"{seconds:.2f} s" if seconds < 10 else f"{seconds:.0f} s"


def latency_pair(latency: Latency | None) -> str:
    """p50 / p95 of a `Latency`, or '< 10 ms (mean 3.2 ms)' when every observation fell
    below the first histogram bucket: vLLM's ITL buckets start at 10 ms, so a quantile
    there would be made up; the mean from _sum/_count is honest."""
    if latency is None:
        return NA
    if latency.below_first_bucket:
        mean = latency.mean
        suffix = f" (mean {seconds_as_latency(mean)})" if not _missing(mean) else ""
        return f"< 10 ms{suffix}"
    p50, p95 = latency.p50, latency.p95
    if _missing(p50) and _missing(p95):
        return NA
    return f"{seconds_as_latency(p50)} / {seconds_as_latency(p95)}"


def duration(seconds: float | None) -> str:
    """Uptime-style: 59 -> '59s', 3700 -> '1h01m'."""
    known = _known(seconds)
    if known is None or known < 0:
        return NA
    seconds = int(known)
    if seconds < 60:
        return f"{seconds}s"
    minutes, sec = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m{sec:02d}s"
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return f"{hours}h{minutes:02d}m"
    days, hours = divmod(hours, 24)
    return f"{days}d{hours:02d}h"


def watts(value: float | None) -> str:
    known = _known(value)
    return NA if known is None else f"{known:.0f} W"


def flag_value(value: object | None) -> str:
    """A vLLM flag value as the user would type it; None = flag absent (vLLM's default)."""
    if value is None:
        return "(default)"
    if value is True:
        return "on"
    if value is False:
        return "off"
    return str(value)


def bar(fraction: float | None, width: int) -> str:
    """A text bar of `width` cells using eighth blocks, for gauges in narrow terminals."""
    if width <= 0:
        return ""
    if (known := _known(fraction)) is None:
        return "·" * width
    fraction = min(max(known, 0.0), 1.0)
    eighths = round(fraction * width * 8)
    full, rest = divmod(eighths, 8)
    partial = " ▏▎▍▌▋▊▉"[rest].strip() if rest else ""
    return ("█" * full + partial).ljust(width, "·")[:width]


SPARK = "▁▂▃▄▅▆▇█"


def spark(values, width: int) -> str:
    """The last `width` values (0..1) as a text sparkline; for panels with many series,
    where a Sparkline widget per series would cost more than it shows."""
    tail = list(values)[-width:] if width > 0 else []
    out = []
    for value in tail:
        if _missing(value):
            out.append(" ")
            continue
        value = min(max(value, 0.0), 1.0)
        out.append(SPARK[min(len(SPARK) - 1, int(value * len(SPARK)))])
    return "".join(out)


_LOG_PREFIX = re.compile(
    r"^\s*(\([^)]*\)\s*)?(ERROR|WARNING|INFO|CRITICAL)\s+\d\d-\d\d \d\d:\d\d:\d\d\s+\[[^\]]*\]\s*"
)


def short_message(text: str | None, limit: int = 240) -> str | None:
    """A log line or error as a reader wants it on a dashboard: without vLLM's
    "(EngineCore pid=1) ERROR 11-29 12:35:23 [core.py:1510]" prefix, on one line, cut at
    `limit` characters (the Logs screen has the full text)."""
    if not text:
        return text
    first = _LOG_PREFIX.sub("", str(text).strip().splitlines()[0] if str(text).strip() else "")
    first = " ".join(first.split())
    return first if len(first) <= limit else first[: limit - 1] + "…"


def escape_markup(text: object) -> str:
    """`text` made safe inside Textual markup. Unlike `textual.markup.escape`, which escapes
    only what looks like a whole tag, this escapes every "[": a message cut short can end
    in an unclosed "[type=value_error, ..." that would otherwise swallow the next "[/]" and
    crash the draw (seen with pydantic errors in vLLM's start-up failures). Control
    characters (an escape sequence in a model name, a log line, a config string) are shown
    escaped by the one sanitizer, headroom.probes.safe_text."""
    return safe_text(text, multiline=True).replace("[", "\\[")
