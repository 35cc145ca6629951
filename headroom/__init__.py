"""Headroom: watch, explain and fix vLLM servers from the terminal."""

__version__ = "0.1.0"
