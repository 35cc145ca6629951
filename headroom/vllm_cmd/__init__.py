"""vLLM command lines: the shared vocabulary of every layer that reads or writes one.

`command` parses, changes and renders a command line; `flags` is the table of vLLM's
flags (taken from vLLM 0.32's own parser); `scan` tells flags from values; `secrets`
redacts API keys and tokens. The public names are re-exported here.
"""

from headroom.vllm_cmd.command import (
    REMOVE,
    STARS,
    CommandLineError,
    FlagChange,
    VllmCommand,
    apply_changes,
    diff_flags,
    parse_command,
    parse_human_int,
    redact_argv,
    redact_env,
    render,
)
from headroom.vllm_cmd.secrets import is_secret_name, redact_text, secret_values

__all__ = [
    "REMOVE",
    "STARS",
    "CommandLineError",
    "FlagChange",
    "VllmCommand",
    "apply_changes",
    "diff_flags",
    "parse_command",
    "parse_human_int",
    "redact_argv",
    "redact_env",
    "redact_text",
    "render",
    "is_secret_name",
    "secret_values",
]
