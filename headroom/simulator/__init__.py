"""A vLLM stand-in on simulated GPUs. Imports nothing else of Headroom."""
