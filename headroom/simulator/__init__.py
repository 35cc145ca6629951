"""A vLLM stand-in on simulated GPUs. Imports nothing else of Headroom.

Launched exactly like vLLM, with vLLM's own flags:

    python -m headroom.simulator serve MODEL [--tensor-parallel-size N] [--max-model-len L] ...

MODEL is a known name (`python -m headroom.simulator serve --help` lists none; see
`headroom.simulator.models.known_models()`: Llama-3.1-8B/70B, Qwen2.5-7B/72B, Mistral-7B,
headroom-sim/Wide-52H, tiny-llama) or a local directory holding a config.json. Unknown flags
are rejected like vLLM's argparse (exit status 2, "unrecognized arguments").

Settings of the simulation itself come only from the environment, so the command line stays
exactly vLLM's:

- `HEADROOM_SIM_SCENARIO`: a packaged scenario name (`python -m headroom.simulator scenarios`)
  or a path to a scenario TOML; `serve` takes the hardware from it. Unset: one H100 SXM.
- `HEADROOM_SIM_TIME_SCALE`: simulated seconds per wall second (default 1; 10 runs ten times
  faster than real time, start-up included).
- `HEADROOM_SIM_LOG_FORMAT`: `0.32` (default; the vLLM 0.32/0.33 log lines) or `0.10` (the
  older 0.10-0.25 wording, and the accounting of vLLM before CUDA-graph memory was budgeted).
- `HEADROOM_SIM_STATE`: a path; the simulated GPUs' state (memory, utilisation, power,
  clocks, PCIe/NVLink, processes, `nvidia-smi topo -m` text) is written there atomically
  every 0.25 s. Headroom's probes read it through `headroom.simulator.nvml_standin` when
  `HEADROOM_NVML_STANDIN` names the same file.

- `HEADROOM_SIM_HOSTNAME`, `HEADROOM_SIM_DCGM_HOSTNAME_LABEL`, `HEADROOM_SIM_GPU_FAULTS`: the
  simulated GPUs are also served at `/dcgm-metrics` in NVIDIA dcgm-exporter's format, with
  this host name, label spelling and injected XID/thermal/power faults (see `dcgm.py`).

- `HEADROOM_SIM_DIE_AFTER_REQUESTS=N`, `HEADROOM_SIM_DIE_AFTER_S=S`: the engine dies at run
  time as vLLM's does (EngineCore fatal error and EngineDeadError in the log, /health 503,
  500s, then an exit with status 0 after `HEADROOM_SIM_DEATH_EXIT_S`, default 5 s) at the
  N-th generation request or S simulated seconds after ready (see `runtime_death.py`).

`VLLM_LOG_STATS_INTERVAL` (seconds, default 10), `VLLM_API_KEY` and
`VLLM_KEEP_ALIVE_ON_ENGINE_DEATH` are honoured as in vLLM.
Also: `python -m headroom.simulator load URL --model NAME ...` (a closed-loop load) and
`python -m headroom.simulator scenarios`.
"""
