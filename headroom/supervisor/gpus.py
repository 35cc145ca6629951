"""The supervisor's view of the GPUs: one NVML probe, looked for once and kept (a host
without NVML is asked again only before the next start, when a driver may have appeared),
and the GPU indices the server's CUDA_VISIBLE_DEVICES selects."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

from headroom.probes.nvml import GpuSnapshot, NvmlProbe
from headroom.supervisor.preflight import make_nvml_probe, visible_gpu_indices


class GpuAccess:
    """probe: an NvmlProbe (or a stand-in with read()), False for "no GPUs here", or None for
    "not looked yet"."""

    def __init__(self, probe: NvmlProbe | object | None = None) -> None:
        self._probe = probe
        self._looked = probe is not None

    def probe(self) -> NvmlProbe | None:
        if not self._looked:
            self._probe = make_nvml_probe() or False
            self._looked = True
        return self._probe or None  # type: ignore[return-value]

    def forget(self) -> None:
        """Look again next time (a driver may be loaded by then)."""
        self._probe, self._looked = None, False

    async def read(self) -> GpuSnapshot | None:
        probe = self.probe()
        if probe is None:
            return None
        return await asyncio.to_thread(probe.read)

    @property
    def nvml_module(self) -> object | None:
        """The pynvml-like module the probe uses (the topology reader shares it)."""
        return getattr(self._probe, "nvml", None) if self._probe else None

    @staticmethod
    def indices(env: Mapping[str, str]) -> list[int] | None:
        return visible_gpu_indices(env, None)
