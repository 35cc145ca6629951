"""Scenarios: small TOML files naming the simulated hardware, the model, the vLLM flags the
demo launches with (and the flags that fix it), a built-in load and simulation settings.

The files live in `headroom/simulator/scenarios/`. `serve` reads only the hardware from the
scenario named by HEADROOM_SIM_SCENARIO (its command line stays exactly vLLM's); the demo
uses the rest. With no scenario, the machine is one H100 SXM.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from headroom.simulator.hardware import MIB, Machine, gpu_model

SCENARIO_DIR = Path(__file__).parent / "scenarios"
DEFAULT_SCENARIO = "kv-story"


@dataclass(frozen=True)
class LoadProfile:
    """A closed-loop load: `concurrency` clients, each sending the next request when its
    previous one finishes; `requests` = 0 means until stopped."""

    concurrency: int = 16
    requests: int = 0
    prompt_tokens: tuple[int, int] = (200, 500)
    max_tokens: tuple[int, int] = (200, 400)
    ignore_eos: bool = True


@dataclass(frozen=True)
class Scenario:
    name: str
    description: str
    machine: Machine
    model: str
    args: tuple[str, ...] = ()
    fix: tuple[str, ...] = ()
    load: LoadProfile = field(default_factory=LoadProfile)
    time_scale: float = 1.0
    log_format: str = "0.32"
    path: Path | None = None

    def env(self, state_path: str | None = None) -> dict[str, str]:
        """The HEADROOM_SIM_* variables that make `serve` simulate this scenario."""
        env = {
            "HEADROOM_SIM_SCENARIO": str(self.path) if self.path else self.name,
            "HEADROOM_SIM_TIME_SCALE": str(self.time_scale),
            "HEADROOM_SIM_LOG_FORMAT": self.log_format,
        }
        if state_path:
            env["HEADROOM_SIM_STATE"] = state_path
        return env

    def serve_argv(self, *, with_fix: bool = False, port: int | None = None) -> list[str]:
        """`serve MODEL [flags]` for this scenario (the fix's flags replace same-named ones)."""
        flags = list(self.args)
        if with_fix:
            fix = list(self.fix)
            names = {fix[i] for i in range(0, len(fix), 2)}
            kept: list[str] = []
            i = 0
            while i < len(flags):
                if flags[i] in names:
                    i += 2
                    continue
                kept.append(flags[i])
                i += 1
            flags = kept + fix
        if port is not None:
            flags += ["--port", str(port)]
        return ["serve", self.model, *flags]


def _pair(value, default: tuple[int, int]) -> tuple[int, int]:
    if value is None:
        return default
    if isinstance(value, int):
        return (value, value)
    lo, hi = (int(v) for v in value)
    return (min(lo, hi), max(lo, hi))


def scenario_from_toml(data: dict, name: str, path: Path | None = None) -> Scenario:
    hw = data.get("hardware", {})
    others = {int(k): int(v) * MIB for k, v in (hw.get("other_process_mib") or {}).items()}
    machine = Machine(
        gpu=gpu_model(str(hw.get("gpu", "H100-SXM"))),
        gpus_per_node=int(hw.get("count", 1)),
        interconnect=str(hw.get("interconnect", "nvswitch")),
        nodes=int(hw.get("nodes", 1)),
        other_process_bytes=others,
        device=str(hw.get("device", "cuda")),
    )
    load = data.get("load", {})
    sim = data.get("sim", {})
    vllm = data.get("vllm", {})
    return Scenario(
        name=str(data.get("name", name)),
        description=str(data.get("description", "")),
        machine=machine,
        model=str(data.get("model", {}).get("name", "meta-llama/Llama-3.1-8B-Instruct")),
        args=tuple(str(a) for a in vllm.get("args", [])),
        fix=tuple(str(a) for a in vllm.get("fix", [])),
        load=LoadProfile(
            concurrency=int(load.get("concurrency", 16)),
            requests=int(load.get("requests", 0)),
            prompt_tokens=_pair(load.get("prompt_tokens"), (200, 500)),
            max_tokens=_pair(load.get("max_tokens"), (200, 400)),
            ignore_eos=bool(load.get("ignore_eos", True)),
        ),
        time_scale=float(sim.get("time_scale", 1.0)),
        log_format=str(sim.get("log_format", "0.32")),
        path=path,
    )


def list_scenarios() -> list[Scenario]:
    """Every packaged scenario, the default first."""
    found = [load_scenario(p.stem) for p in sorted(SCENARIO_DIR.glob("*.toml"))]
    return sorted(found, key=lambda s: (s.name != DEFAULT_SCENARIO, s.name))


def load_scenario(name_or_path: str | None = None) -> Scenario:
    """A packaged scenario by name, or a TOML file by path; ValueError with the choices."""
    if not name_or_path:
        return default_machine_scenario()
    path = Path(name_or_path).expanduser()
    if not (path.suffix == ".toml" and path.is_file()):
        path = SCENARIO_DIR / f"{name_or_path}.toml"
    if not path.is_file():
        known = ", ".join(sorted(p.stem for p in SCENARIO_DIR.glob("*.toml")))
        raise ValueError(f"unknown scenario {name_or_path!r}; known: {known}")
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"{path}: not valid TOML: {exc}") from exc
    packaged = path.parent == SCENARIO_DIR
    return scenario_from_toml(data, path.stem, None if packaged else path)


def default_machine_scenario() -> Scenario:
    """No scenario: one H100 SXM, as the issue asks."""
    return Scenario(
        name="default", description="one H100 SXM", model="", machine=Machine(gpu_model("H100-SXM"))
    )
