"""How long one engine step takes on the simulated hardware: honest, simple physics.

- Prefill is compute-bound: 2 x parameters-per-GPU FLOPs per token at ~50% of dense BF16 peak.
- Decode is bandwidth-bound: every step reads this GPU's weights once, plus the KV of every
  running sequence, at ~80% of HBM bandwidth.
- Tensor parallelism adds two ring all-reduces per layer of (tokens x hidden) activations;
  their cost depends on the weakest link in the TP group (NVLink, PCIe, or the network).
- Pipeline parallelism runs stages in turn; with fewer sequences in flight than stages the
  pipeline cannot fill, so a step costs up to PP x a stage (the bubble).
"""

from __future__ import annotations

from dataclasses import dataclass

from headroom.simulator.accounting import StartupPlan, kv_bytes_per_token
from headroom.simulator.hardware import Machine

MFU = 0.5  # achieved fraction of peak tensor throughput in prefill
MBU = 0.8  # achieved fraction of peak memory bandwidth in decode
LINK_LATENCY_S = {"NV": 8e-6, "PCIE": 15e-6, "NET": 30e-6}


@dataclass(frozen=True)
class StepTimer:
    """Precomputed per-GPU costs for one deployment."""

    weights_bytes: int
    params_per_gpu: float
    kv_bytes_per_token: int
    layers_per_stage: int
    hidden_size: int
    dtype_bytes: int
    tp: int
    pp: int
    bandwidth_bps: float
    flops: float
    tp_link_code: str
    tp_link_bps: float
    pp_link_bps: float
    overhead_s: float

    @classmethod
    def for_plan(cls, plan: StartupPlan, machine: Machine) -> StepTimer:
        model, s = plan.model, plan.settings
        worker = max(plan.workers, key=lambda w: w.weights_bytes)
        code, link_gbs = machine.weakest_link_gbs(s.tp)
        return cls(
            weights_bytes=worker.weights_bytes,
            params_per_gpu=worker.weights_bytes / model.dtype_bytes,
            kv_bytes_per_token=kv_bytes_per_token(model, s.tp, worker.layers, s.kv_cache_dtype),
            layers_per_stage=worker.layers,
            hidden_size=model.hidden_size,
            dtype_bytes=model.dtype_bytes,
            tp=s.tp,
            pp=s.pp,
            bandwidth_bps=machine.gpu.bandwidth_gbs * 1e9 * MBU,
            flops=machine.gpu.bf16_tflops * 1e12 * MFU,
            tp_link_code=code,
            tp_link_bps=link_gbs * 1e9,
            pp_link_bps=machine.pp_link_gbs(s.tp, s.pp) * 1e9,
            # Python-side scheduling and sampling per step; the CPU backend is far slower.
            overhead_s=0.015 if machine.device == "cpu" else 0.002,
        )

    def allreduce_s(self, tokens: int) -> float:
        if self.tp <= 1 or tokens <= 0:
            return 0.0
        size = tokens * self.hidden_size * self.dtype_bytes
        kind = (
            "NV"
            if self.tp_link_code.startswith("NV")
            else ("NET" if self.tp_link_code == "NET" else "PCIE")
        )
        ring = 2 * (self.tp - 1) / self.tp * size / self.tp_link_bps
        per_layer = 2 * (ring + LINK_LATENCY_S[kind] * (self.tp - 1))
        return per_layer * self.layers_per_stage

    def step_s(self, prefill_tokens: int, decode_seqs: int, context_tokens: int) -> float:
        """One scheduler step: `prefill_tokens` new prompt tokens, `decode_seqs` one-token
        decodes, `context_tokens` tokens of KV already held by the scheduled sequences."""
        tokens = prefill_tokens + decode_seqs
        if tokens <= 0:
            return 0.0
        compute = 2 * self.params_per_gpu * tokens / self.flops
        memory = (
            self.weights_bytes + context_tokens * self.kv_bytes_per_token
        ) / self.bandwidth_bps
        stage = max(compute, memory) + self.allreduce_s(tokens)
        if self.pp > 1:
            in_flight = max(1, decode_seqs + (1 if prefill_tokens else 0))
            bubble = self.pp / min(self.pp, in_flight)
            hop = tokens * self.hidden_size * self.dtype_bytes / self.pp_link_bps
            stage = stage * bubble + hop * (self.pp - 1)
        return stage + self.overhead_s
