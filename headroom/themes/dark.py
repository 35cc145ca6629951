"""headroom-dark: the default. Calm slate background; colour is kept for state."""

from textual.theme import Theme

THEME = Theme(
    name="headroom-dark",
    primary="#5FA8D3",
    secondary="#3E6A8A",
    accent="#C9A227",
    warning="#E0A23A",
    error="#E0645C",
    success="#5DBB7A",
    foreground="#D8DEE6",
    background="#141A21",
    surface="#1B232C",
    panel="#24303B",
    dark=True,
    variables={
        "link-nvlink": "#5DBB7A",
        "link-pcie-switch": "#5FA8D3",
        "link-host-bridge": "#E0A23A",
        "link-cross-socket": "#E0645C",
        "gauge-ok": "#5DBB7A",
        "gauge-warn": "#E0A23A",
        "panel-border": "#45515D",
        "gauge-full": "#E0645C",
        "footer-key-foreground": "#C9A227",
    },
)
