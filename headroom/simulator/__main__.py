"""`python -m headroom.simulator serve MODEL [vLLM flags]` (a vLLM stand-in),
`python -m headroom.simulator load URL ...` (a built-in load) and
`python -m headroom.simulator scenarios` (the packaged scenarios)."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time

from headroom.simulator.accounting import EngineSettings, StartupPlan, plan_startup
from headroom.simulator.args import bool_flag, non_default_args, parse_serve_args
from headroom.simulator.dcgm import DcgmRenderer
from headroom.simulator.loadgen import load_main
from headroom.simulator.logs import VllmLog
from headroom.simulator.models import load_model
from headroom.simulator.runtime_death import EngineDeath
from headroom.simulator.scenario import list_scenarios, load_scenario
from headroom.simulator.server import SimServer
from headroom.simulator.serving import Runtime, memory_in_use
from headroom.simulator.startup import StartupPrinter, print_preamble
from headroom.simulator.state import build_state, write_state
from headroom.simulator.topo import topo_m_text


def _env_float(name: str, default: float) -> float:
    try:
        return float(os.environ.get(name, "") or default)
    except ValueError:
        return default


def serve(argv: list[str]) -> int:
    ns = parse_serve_args(argv)  # exits 2 on an unknown flag, like vLLM
    try:
        scenario = load_scenario(os.environ.get("HEADROOM_SIM_SCENARIO") or None)
    except ValueError as exc:
        print(f"headroom simulator: {exc}", file=sys.stderr)
        return 2
    machine = scenario.machine
    try:
        dcgm = DcgmRenderer.from_env()
    except ValueError as exc:
        print(f"headroom simulator: {exc}", file=sys.stderr)
        return 2
    log = VllmLog(os.environ.get("HEADROOM_SIM_LOG_FORMAT", "0.32"))
    scale = max(1e-3, _env_float("HEADROOM_SIM_TIME_SCALE", 1.0))
    state_path = os.environ.get("HEADROOM_SIM_STATE") or None
    version = "0.10.1.1" if log.old else "0.33.0"
    served = (ns.served_model_name or [ns.model])[0]
    topo = topo_m_text(machine)

    def publish(plan: StartupPlan | None, phase: str) -> None:
        if not state_path:
            return
        used = memory_in_use(plan, phase) if plan and phase != "idle" else {}
        try:
            write_state(state_path, build_state(machine, os.getpid(), used, 0.0, phase, topo))
        except OSError:
            pass

    publish(None, "idle")
    print_preamble(log, version, ns.model, non_default_args(ns))
    try:
        model = load_model(ns.model)
    except ValueError as exc:
        print(f"OSError: {exc}", file=sys.stderr)
        return 1
    settings = EngineSettings(
        tp=ns.tensor_parallel_size or 1,
        pp=ns.pipeline_parallel_size or 1,
        gpu_memory_utilization=ns.gpu_memory_utilization or (0.9 if log.old else 0.92),
        max_model_len=ns.max_model_len,
        max_num_seqs=ns.max_num_seqs,
        max_num_batched_tokens=ns.max_num_batched_tokens,
        kv_cache_dtype=ns.kv_cache_dtype or "auto",
        kv_cache_memory_bytes=ns.kv_cache_memory_bytes,
        enforce_eager=bool_flag(ns, "enforce_eager"),
        block_size=ns.block_size,
        num_gpu_blocks_override=ns.num_gpu_blocks_override,
        cudagraph_estimate=not log.old,
        nnodes=ns.nnodes or 1,
        ray=(ns.distributed_executor_backend == "ray"),
    )
    plan = plan_startup(model, settings, machine)
    printer = StartupPrinter(
        log,
        plan,
        machine.device,
        lambda s: time.sleep(s / scale),
        lambda phase: publish(plan, phase),
    )
    printer.config_lines()
    rc = printer.run(version, ns.model, served)
    if rc:
        publish(None, "idle")
        return rc
    prefix = not bool_flag(ns, "disable_prefix_caching") and bool_flag(
        ns, "enable_prefix_caching", True
    )
    death = EngineDeath.from_env(log)  # HEADROOM_SIM_DIE_AFTER_*: a run-time engine death
    runtime = Runtime(
        plan,
        machine,
        served,
        log,
        time_scale=scale,
        state_path=state_path,
        prefix_caching=prefix,
        log_stats=not bool_flag(ns, "disable_log_stats"),
    )
    server = SimServer(
        runtime,
        list(ns.served_model_name or [ns.model]),
        plan.max_model_len,
        api_keys=ns.api_key
        or ([os.environ["VLLM_API_KEY"]] if os.environ.get("VLLM_API_KEY") else None),
        access_log=not bool_flag(ns, "disable_uvicorn_access_log"),
        version=version,
        root=ns.model,
        dcgm=dcgm,
        death=death,
    )
    try:
        return asyncio.run(
            _serve_forever(runtime, server, printer, ns.host, ns.port or 8000, death, scale)
        )
    except KeyboardInterrupt:
        return 0
    finally:
        publish(None, "idle")


async def _serve_forever(
    runtime: Runtime,
    server: SimServer,
    printer: StartupPrinter,
    host: str | None,
    port: int,
    death: EngineDeath,
    scale: float,
) -> int:
    try:
        await server.start(host or "0.0.0.0", port)
    except OSError as exc:
        print(
            f"OSError: [Errno {exc.errno}] error while attempting to bind on address "
            f"('{host or '0.0.0.0'}', {port}): {exc.strerror}",
            file=sys.stderr,
        )
        return 1
    printer.ready_lines(host or "0.0.0.0", port)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    engine_task = asyncio.create_task(runtime.run())
    death_task = asyncio.create_task(death.watch(scale, stop))
    await stop.wait()
    death_task.cancel()
    if not death.dead:  # a dead engine's server exits through uvicorn's should_exit instead
        printer.api("launcher.py:252", "[shutdown] API server: shutdown triggered")
    runtime.stop()
    await server.close()
    engine_task.cancel()
    try:
        await engine_task
    except asyncio.CancelledError:
        pass
    print("INFO:     Shutting down", flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        print(__doc__)
        return 0
    if args[0] == "serve":
        return serve(args[1:])
    if args[0] == "load":
        return load_main(args[1:])
    if args[0] in ("scenarios", "list"):
        for sc in list_scenarios():
            print(f"{sc.name:18} {sc.description}")
        return 0
    print(f"unknown command {args[0]!r}; use serve, load or scenarios", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
