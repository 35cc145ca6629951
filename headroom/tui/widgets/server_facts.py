"""The flags that matter, on one line: TP, PP, max_model_len, gpu_memory_utilization,
kv_cache_dtype. From the command line when Headroom launched the server, otherwise from
what the server reveals: /metrics (cache_config_info) and /v1/models (max_model_len)."""

from __future__ import annotations

from textual.widgets import Static

from headroom.probes.metrics_types import EngineMetrics
from headroom.probes.server_info import ServerInfo as ReportedInfo
from headroom.tui import format as fmt
from headroom.tui.format import escape_markup as escape
from headroom.tui.widgets.cheap_update import set_markup
from headroom.vllm_cmd import VllmCommand

FLAGS = (
    ("tensor_parallel_size", "TP"),
    ("pipeline_parallel_size", "PP"),
    ("max_model_len", "max_model_len"),
    ("gpu_memory_utilization", "gpu_mem_util"),
    ("kv_cache_dtype", "kv_dtype"),
)
DEFAULTS = {"tensor_parallel_size": 1, "pipeline_parallel_size": 1}


def flag_values(
    command: VllmCommand | None,
    engine: EngineMetrics | None,
    reported: ReportedInfo | None = None,
) -> dict[str, object | None]:
    values: dict[str, object | None] = {}
    for name, _ in FLAGS:
        value = None
        if command is not None:
            try:
                value = command.get(name)
            except Exception:  # an odd command line must not break the dashboard
                value = None
            if value is None:
                value = DEFAULTS.get(name)
        values[name] = value
    # Attached without a command line: /v1/models says what max_model_len vLLM settled on.
    if command is None and reported is not None and reported.max_model_len:
        values["max_model_len"] = reported.max_model_len
    if engine is not None:
        if values["gpu_memory_utilization"] is None:
            values["gpu_memory_utilization"] = engine.gpu_memory_utilization
        if values["kv_cache_dtype"] is None:
            values["kv_cache_dtype"] = engine.cache_dtype
    return values


class ServerFacts(Static):
    """Key vLLM flags of the watched server; N/A where neither the command line nor
    /metrics says."""

    DEFAULT_CSS = """
    ServerFacts { height: 1; padding: 0 1; }
    """

    def show(
        self,
        command: VllmCommand | None,
        engine: EngineMetrics | None,
        reported: ReportedInfo | None = None,
    ) -> None:
        values = flag_values(command, engine, reported)
        parts = []
        for name, label in FLAGS:
            value = values[name]
            if value is None:
                # Known command without the flag: vLLM's default applies (the model's own
                # context length for max_model_len), which is not N/A.
                shown = "default" if command is not None else fmt.NA
            else:
                shown = fmt.flag_value(value)
            parts.append(f"[$text-muted]{label}[/] [b]{escape(shown)}[/b]")
        set_markup(self, "  ".join(parts))
