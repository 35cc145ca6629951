"""How a launcher's table of its own names for vLLM's engine args is written (the tables
are `launcher_tables` and `launcher_tables_rl`; their docstring says what each `how` means)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True, eq=False)  # one object per launcher: compared by identity
class Launcher:
    key: str
    name: str  # "FastChat's vllm_worker", as the doctor's note names it
    settings: Mapping[str, tuple[str, str]]  # the launcher's name -> (engine arg, how)
    source: str
    vllm_flags: bool = False  # the launcher hands vLLM's own flags through (add_cli_args)
    own: frozenset[str] = frozenset()
    defaults: Mapping[str, object] = field(default_factory=dict)
    defaults_note: str = ""
    prefixes: tuple[str, ...] = ()  # Hydra/OmegaConf key prefixes read as vLLM's (engine_kwargs)
    aliases: Mapping[str, str] = field(default_factory=dict)  # short option -> its long name
    engine_keys: bool = False  # `key: value` / `key=value` named as vLLM's engine args are read

    def engine_args_named(self) -> frozenset[str]:
        """Every engine arg this table can give (the property tests hold reading to it)."""
        named = {arg for arg, how in self.settings.values() if how not in ("length", "gpus")}
        return frozenset(named | set(self.defaults) | {"tensor_parallel_size", "max_model_len"})
