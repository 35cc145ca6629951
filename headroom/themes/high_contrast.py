"""headroom-high-contrast: pure black and saturated colours for low-vision use and
terminals with poor colour rendering. State is never carried by colour alone: widgets
also print a word (ok / warn / fail)."""

from textual.theme import Theme

THEME = Theme(
    name="headroom-high-contrast",
    primary="#00BFFF",
    secondary="#FFFFFF",
    accent="#FFFF00",
    warning="#FFD700",
    error="#FF4040",
    success="#00FF66",
    foreground="#FFFFFF",
    background="#000000",
    surface="#000000",
    panel="#1A1A1A",
    dark=True,
    luminosity_spread=0.3,
    text_alpha=1.0,
    variables={
        "link-nvlink": "#00FF66",
        "link-pcie-switch": "#00BFFF",
        "link-host-bridge": "#FFD700",
        "link-cross-socket": "#FF4040",
        "gauge-ok": "#00FF66",
        "gauge-warn": "#FFD700",
        "panel-border": "#9A9A9A",
        "gauge-full": "#FF4040",
        "footer-key-foreground": "#FFFF00",
    },
)
