"""One screen per module. Screens are Textual modes, switched with the number keys.

The titles live here (the status bar of every screen shows them); `headroom.tui.modes`
maps each mode to its screen class."""

from __future__ import annotations

# mode name -> title; the order gives the number keys 1..7.
SCREEN_TITLES: dict[str, str] = {
    "dashboard": "Dashboard",
    "gpus": "GPUs",
    "topology": "Topology",
    "doctor": "Doctor",
    "logs": "Logs",
    "runs": "Runs",
    "bench": "Bench",
}
