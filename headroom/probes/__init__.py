"""Read the world: vLLM metrics, logs, NVML, topology, model config and host facts. Never imports Textual."""
