"""Built-in table of common NVIDIA GPUs, for when NVML is not there (`--gpus 8xH100`).

`memory_gib` is what NVML reports as total memory (nvidia-smi's "MiB" column / 1024), not the
marketing figure. `cuda_gib` is the total CUDA/PyTorch reports, which is what vLLM multiplies
by gpu_memory_utilization; it is a little smaller because the driver keeps some memory back.
Where a real vLLM/PyTorch log gave it, the source is named; otherwise it is estimated as
`memory_gib` minus ~1.6 % (the gap seen on the cards we have numbers for).
Bandwidth is HBM/GDDR bandwidth in GB/s; nvlink_gbps is per-GPU NVLink bandwidth, both
directions, in GB/s (0 = no NVLink on that part).
"""

from __future__ import annotations

from dataclasses import dataclass

_CUDA_SHARE = 0.984  # 23.58/24.00 (RTX 3090), 79.15/80.00 (A100), 79.11/79.65 (H100)


@dataclass(frozen=True)
class GpuModel:
    """One row of the table."""

    name: str
    aliases: tuple[str, ...]
    memory_gib: float
    bandwidth_gbps: float
    nvlink_gbps: float
    generation: str
    datacenter: bool
    cuda_gib: float | None = None  # None: estimated from memory_gib

    @property
    def usable_gib(self) -> float:
        return (
            self.cuda_gib if self.cuda_gib is not None else round(self.memory_gib * _CUDA_SHARE, 2)
        )

    @property
    def has_nvlink(self) -> bool:
        return self.nvlink_gbps > 0


def _g(name, aliases, mib, bw, nvl, gen, dc, cuda=None) -> GpuModel:
    return GpuModel(name, tuple(aliases), round(mib / 1024, 2), bw, nvl, gen, dc, cuda)


# MiB totals as nvidia-smi prints them. Sources for the exact numbers: H100 81559 MiB and
# RTX 4090 24564 MiB (nvidia-smi pastes in LMCache #259 and vllm #7553); CUDA totals from
# PyTorch OOM messages and V0 profiles: H200 139.72 (vllm #10702), H100 79.11 (vllm #27508), A100-80 79.15 (vllm #4408), RTX 4090 23.65
# (sglang #6082), RTX 3090 23.58 (vllm #10517). Others: vendor spec sheets.
GPUS: tuple[GpuModel, ...] = (
    # datacenter, newest first
    _g("B200", ["B200-SXM", "B200 SXM"], 183359, 8000, 1800, "Blackwell", True),
    _g("H200", ["H200-SXM", "H200 SXM", "H200-141GB"], 143771, 4800, 900, "Hopper", True, 139.72),
    _g("H200-NVL", ["H200 NVL"], 143771, 4800, 900, "Hopper", True),
    _g(
        "H100",
        ["H100-SXM", "H100 SXM", "H100-80GB", "H100 80GB HBM3"],
        81559,
        3350,
        900,
        "Hopper",
        True,
        79.11,
    ),
    _g("H100-PCIe", ["H100 PCIe", "H100-PCIE"], 81559, 2000, 600, "Hopper", True),
    _g("H100-NVL", ["H100 NVL"], 95830, 3900, 600, "Hopper", True),
    _g("H800", ["H800-SXM"], 81559, 3350, 400, "Hopper", True),
    _g("H20", [], 97871, 4000, 900, "Hopper", True),
    _g("GH200", [], 97871, 4000, 900, "Hopper", True),
    _g(
        "A100",
        ["A100-80GB", "A100-SXM4-80GB", "A100 80GB", "A100-SXM"],
        81920,
        2039,
        600,
        "Ampere",
        True,
        79.15,
    ),
    _g(
        "A100-40GB",
        ["A100-SXM4-40GB", "A100 40GB", "A100-PCIE-40GB"],
        40960,
        1555,
        600,
        "Ampere",
        True,
        39.38,
    ),
    _g("A800", ["A800-80GB"], 81920, 2039, 400, "Ampere", True),
    _g("L40S", ["L40S-48GB"], 46068, 864, 0, "Ada", True),
    _g("L40", [], 46068, 864, 0, "Ada", True),
    _g("L4", [], 23034, 300, 0, "Ada", True),
    _g("A40", [], 46068, 696, 112.5, "Ampere", True),
    _g("A10", ["A10G"], 23028, 600, 0, "Ampere", True),
    _g("A6000", ["RTX-A6000", "RTX A6000"], 49140, 768, 112.5, "Ampere", False),
    _g("RTX6000-Ada", ["RTX 6000 Ada", "RTX6000ADA"], 49140, 960, 0, "Ada", False),
    _g("RTX-PRO-6000", ["RTX PRO 6000", "RTXPRO6000"], 97887, 1792, 0, "Blackwell", False),
    _g("V100", ["V100-32GB", "V100-SXM2-32GB"], 32768, 900, 300, "Volta", True),
    _g("V100-16GB", ["V100-SXM2-16GB"], 16384, 900, 300, "Volta", True),
    _g("T4", [], 15360, 320, 0, "Turing", True),
    # consumer
    _g("RTX5090", ["RTX 5090", "5090"], 32607, 1792, 0, "Blackwell", False),
    _g("RTX5080", ["RTX 5080", "5080"], 16303, 960, 0, "Blackwell", False),
    _g("RTX4090", ["RTX 4090", "4090"], 24564, 1008, 0, "Ada", False, 23.65),
    _g("RTX4080", ["RTX 4080", "4080"], 16376, 717, 0, "Ada", False),
    _g(
        "RTX3090",
        ["RTX 3090", "3090", "RTX3090Ti", "RTX 3090 Ti"],
        24576,
        936,
        112.5,
        "Ampere",
        False,
        23.58,
    ),
    _g("RTX3080", ["RTX 3080", "3080"], 10240, 760, 0, "Ampere", False),
    _g("RTX2080Ti", ["RTX 2080 Ti", "2080Ti"], 11264, 616, 100, "Turing", False),
)


def _key(text: str) -> str:
    return "".join(ch for ch in text.upper() if ch.isalnum())


_BY_KEY: dict[str, GpuModel] = {}
for _gpu in GPUS:
    for _name in (_gpu.name, *_gpu.aliases):
        _BY_KEY.setdefault(_key(_name), _gpu)


def find_gpu(name: str) -> GpuModel | None:
    """Look a GPU up by name or alias, ignoring case, spaces and dashes; also accepts NVML
    names like "NVIDIA H100 80GB HBM3" or "NVIDIA GeForce RTX 4090"."""
    key = _key(name)
    for prefix in ("NVIDIA", "GEFORCE", "TESLA"):
        if key.startswith(prefix) and key[len(prefix) :]:
            key = key[len(prefix) :]
    for prefix in ("GEFORCE", "TESLA"):
        if key.startswith(prefix):
            key = key[len(prefix) :]
    if key in _BY_KEY:
        return _BY_KEY[key]
    # NVML names carry suffixes ("H100 80GB HBM3", "A100-SXM4-80GB"): take the longest table
    # key the name starts with.
    best = None
    for table_key, gpu in _BY_KEY.items():
        if key.startswith(table_key) and (best is None or len(table_key) > len(best[0])):
            best = (table_key, gpu)
    return best[1] if best else None
