"""Textual themes: dark (default), light and high-contrast."""
