"""The fleet: many vLLM servers and their GPUs, read through Prometheus or scraped directly.

Layer: between the doctor and the supervisor. It imports probes and doctor only; the TUI
and the CLI import it. `model` (snapshot types), `prom_source` / `direct_source` (the two
ways to read), `assemble` + `join` (GPUs to servers), `doctor` (fleet findings), `report`
(JSON/CSV/text), `export` (Headroom's own state as Prometheus metrics).
"""
