"""headroom-light: for bright terminals and screenshots in documents."""

from textual.theme import Theme

THEME = Theme(
    name="headroom-light",
    primary="#1F5F8B",
    secondary="#4A7FA7",
    accent="#8A5A00",
    warning="#A86400",
    error="#B3261E",
    success="#2E7D32",
    foreground="#1C232B",
    background="#F6F7F9",
    surface="#ECEFF3",
    panel="#DDE3EA",
    dark=False,
    variables={
        "link-nvlink": "#2E7D32",
        "link-pcie-switch": "#1F5F8B",
        "link-host-bridge": "#A86400",
        "link-cross-socket": "#B3261E",
        "gauge-ok": "#2E7D32",
        "gauge-warn": "#A86400",
        "panel-border": "#A3ACB6",
        "gauge-full": "#B3261E",
    },
)
