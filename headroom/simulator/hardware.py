"""Simulated GPUs and the machine they sit in.

Memory sizes are what NVML reports as `memory.total` on real boards (MiB, as `nvidia-smi`
prints them), because that is the number vLLM multiplies by `--gpu-memory-utilization`.
Bandwidth and dense BF16 tensor throughput are the vendor datasheet figures; the timing model
derates them itself. Link bandwidths are per direction, per GPU (see gpu-facts.md §2.4).
"""

from __future__ import annotations

from dataclasses import dataclass, field

MIB = 1024**2
GIB = 1024**3


@dataclass(frozen=True)
class GpuModel:
    """One GPU product as the simulator needs it."""

    key: str
    name: str  # what nvmlDeviceGetName returns
    memory_mib: int  # NVML memory.total
    bandwidth_gbs: float  # HBM/GDDR bandwidth, GB/s
    bf16_tflops: float  # dense BF16 tensor throughput
    nvlink_count: int  # links per GPU (0 = none)
    nvlink_gbs_per_link: float  # per direction
    pcie_gen: int
    power_limit_w: int
    idle_power_w: int
    sm_clock_max_mhz: int
    mem_clock_max_mhz: int
    consumer: bool = False  # GeForce: ECC and several calls are NotSupported

    @property
    def memory_bytes(self) -> int:
        return self.memory_mib * MIB

    @property
    def cuda_total_bytes(self) -> int:
        """What torch.cuda.mem_get_info calls total (NVML's total less driver-reserved memory):
        the number vLLM multiplies by --gpu-memory-utilization."""
        return int(CUDA_TOTAL_GIB[self.key] * GIB)


GPU_MODELS: dict[str, GpuModel] = {
    g.key: g
    for g in [
        GpuModel("H200", "NVIDIA H200", 143771, 4800, 989, 18, 26.562, 5, 700, 75, 1980, 3201),
        GpuModel(
            "H100-SXM",
            "NVIDIA H100 80GB HBM3",
            81559,
            3350,
            989,
            18,
            26.562,
            5,
            700,
            70,
            1980,
            2619,
        ),
        GpuModel("H100-PCIe", "NVIDIA H100 PCIe", 81559, 2000, 756, 0, 0.0, 5, 350, 50, 1755, 1593),
        GpuModel(
            "A100-80G-SXM",
            "NVIDIA A100-SXM4-80GB",
            81920,
            2039,
            312,
            12,
            25.0,
            4,
            400,
            60,
            1410,
            1593,
        ),
        GpuModel(
            "A100-40G", "NVIDIA A100-SXM4-40GB", 40960, 1555, 312, 12, 25.0, 4, 400, 55, 1410, 1215
        ),
        GpuModel("L40S", "NVIDIA L40S", 46068, 864, 362, 0, 0.0, 4, 350, 35, 2520, 9001),
        GpuModel("A10", "NVIDIA A10", 23028, 600, 125, 0, 0.0, 4, 150, 20, 1695, 6251),
        GpuModel(
            "RTX4090",
            "NVIDIA GeForce RTX 4090",
            24564,
            1008,
            165,
            0,
            0.0,
            4,
            450,
            25,
            2520,
            10501,
            consumer=True,
        ),
        GpuModel(
            "RTX3090",
            "NVIDIA GeForce RTX 3090",
            24576,
            936,
            71,
            4,
            14.0625,
            4,
            350,
            25,
            1695,
            9751,
            consumer=True,
        ),
    ]
}

# CUDA-visible totals. From real logs in tests/fixtures/gpu-startup-logs: H200 139.72,
# H100 79.11, A100-80G 79.15, RTX 3090 23.58. The others are the totals PyTorch's
# out-of-memory messages commonly print for those boards (not checked against a fixture).
CUDA_TOTAL_GIB = {
    "H200": 139.72,
    "H100-SXM": 79.11,
    "H100-PCIe": 79.11,
    "A100-80G-SXM": 79.15,
    "A100-40G": 39.39,
    "L40S": 44.53,
    "A10": 22.06,
    "RTX4090": 23.65,
    "RTX3090": 23.58,
}

# Accept the spellings people actually type.
_ALIASES = {
    "h100": "H100-SXM",
    "h100sxm": "H100-SXM",
    "h100pcie": "H100-PCIe",
    "h200": "H200",
    "a10080g": "A100-80G-SXM",
    "a10080gsxm": "A100-80G-SXM",
    "a100": "A100-80G-SXM",
    "a10040g": "A100-40G",
    "l40s": "L40S",
    "a10": "A10",
    "rtx4090": "RTX4090",
    "4090": "RTX4090",
    "rtx3090": "RTX3090",
    "3090": "RTX3090",
}

# PCIe per-direction x16 bandwidth by generation, GB/s (gpu-facts.md §2.4).
PCIE_GBS = {3: 15.75, 4: 31.5, 5: 63.0}
# Inter-node network per GPU when nodes > 1 (one 200 Gb/s NIC per GPU is typical), GB/s.
NETWORK_GBS = 25.0

INTERCONNECTS = ("nvswitch", "nvlink-pairs", "pcie")


def gpu_model(name: str) -> GpuModel:
    """Look a GPU up by key or a loose spelling ("h100", "A100-80G-SXM", "rtx 4090")."""
    if name in GPU_MODELS:
        return GPU_MODELS[name]
    squashed = "".join(ch for ch in name.lower() if ch.isalnum())
    for key in GPU_MODELS:
        if "".join(ch for ch in key.lower() if ch.isalnum()) == squashed:
            return GPU_MODELS[key]
    if squashed in _ALIASES:
        return GPU_MODELS[_ALIASES[squashed]]
    known = ", ".join(GPU_MODELS)
    raise ValueError(f"unknown GPU model {name!r}; known: {known}")


@dataclass(frozen=True)
class Machine:
    """The simulated hardware: GPUs per node, how they connect, and how many nodes.

    `other_process_bytes` is memory already held on each GPU by someone else (index -> bytes);
    vLLM treats it as a gate at start-up, not as a deduction.
    """

    gpu: GpuModel
    gpus_per_node: int = 1
    interconnect: str = "nvswitch"  # nvswitch | nvlink-pairs | pcie
    nodes: int = 1
    other_process_bytes: dict[int, int] = field(default_factory=dict)
    device: str = "cuda"  # "cpu" replays the vLLM-CPU captures (block size 128, "CPU KV cache")

    def __post_init__(self) -> None:
        if self.interconnect not in INTERCONNECTS:
            raise ValueError(
                f"interconnect must be one of {', '.join(INTERCONNECTS)}, not {self.interconnect!r}"
            )
        if self.gpus_per_node < 1 or self.nodes < 1:
            raise ValueError("a machine needs at least one GPU and one node")

    @property
    def total_gpus(self) -> int:
        return self.gpus_per_node * self.nodes

    def link_code(self, a: int, b: int) -> str:
        """The `nvidia-smi topo -m` code between two GPUs of one node."""
        if a == b:
            return "X"
        if self.interconnect == "nvswitch" and self.gpu.nvlink_count:
            return f"NV{self.gpu.nvlink_count}"
        if self.interconnect == "nvlink-pairs" and self.gpu.nvlink_count and a // 2 == b // 2:
            return f"NV{self.gpu.nvlink_count}"
        half = max(1, self.gpus_per_node // 2)
        if self.gpus_per_node > 2 and (a // half) != (b // half):
            return "SYS"  # the two halves sit on different CPU sockets
        return "PHB" if self.gpus_per_node <= 2 else "NODE"

    def link_gbs(self, code: str) -> float:
        """Per-direction bandwidth of one GPU over a link of this code."""
        if code.startswith("NV"):
            return int(code[2:]) * self.gpu.nvlink_gbs_per_link * 0.8  # ~80% of peak in practice
        pcie = PCIE_GBS.get(self.gpu.pcie_gen, 31.5) * 0.8
        return pcie * (0.6 if code == "SYS" else 1.0)

    def weakest_link_gbs(self, tp: int) -> tuple[str, float]:
        """The slowest link inside one tensor-parallel group of `tp` GPUs (ranks 0..tp-1)."""
        if tp <= 1:
            return "X", float("inf")
        if tp > self.gpus_per_node:
            return "NET", NETWORK_GBS
        codes = [self.link_code(a, b) for a in range(tp) for b in range(tp) if a != b]
        worst = min(codes, key=self.link_gbs)
        return worst, self.link_gbs(worst)

    def pp_link_gbs(self, tp: int, pp: int) -> float:
        """Bandwidth between pipeline stages (activations hop once per stage)."""
        if tp * pp > self.gpus_per_node:
            return NETWORK_GBS
        return self.link_gbs(self.link_code(0, min(tp, self.gpus_per_node - 1)))
