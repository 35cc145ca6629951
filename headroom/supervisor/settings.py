"""The supervisor's settings: one frozen object instead of two dozen constructor arguments.

Everything here is fixed for the life of a Supervisor; what changes between runs (the
command line, the environment) lives on the Supervisor itself. Vary a setting with
`dataclasses.replace(settings, poll_interval_s=0.1)`.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

from headroom.supervisor.launcher import LauncherConfig, describe, resolve_template
from headroom.supervisor.paths import data_dir as default_data_dir


@dataclass(frozen=True)
class SupervisorSettings:
    """How one Supervisor launches, watches, stops and restarts its server.

    launcher: a name from LAUNCHERS or the config file, or a template with {model} {flags}.
    launchers: what the config file says ([serve] and [launchers]).
    data_dir: journal and per-run logs (default: paths.data_dir()); state_dir: state files
    of running servers (default: paths.state_dir()).
    ready_timeout_s: seconds without log progress before a start counts as hung (None: at
    least 10 minutes or twice the last good start).
    """

    launcher: str = "vllm"
    launchers: LauncherConfig = field(default_factory=LauncherConfig)
    python: str | None = None
    data_dir: Path | None = None
    state_dir: Path | None = None
    ready_timeout_s: float | None = None
    poll_interval_s: float = 0.5
    health_timeout_s: float = 2.0
    degraded_after_failures: int = 3
    failure_exit_grace_s: float = 15.0
    grace_int_s: float = 20.0
    grace_term_s: float = 10.0
    memory_timeout_s: float = 60.0
    preflight: bool = True
    max_crash_restarts: int = 3
    crash_backoff_s: float = 5.0
    metrics_interval_s: float = 5.0
    scrape_metrics: bool = True
    log_ring: int = 5000
    keep_logs: int = 200  # per-run logs kept in the data dir (oldest go first)
    # --distributed-executor-backend ray: the cluster's GCS address (None: RAY_ADDRESS, else
    # Ray's discovery), its dashboard for the state API (None: not read), how often it is
    # read while the server starts.
    ray_address: str | None = None
    ray_dashboard: str | None = None
    ray_poll_s: float = 2.0

    @property
    def template(self) -> str:
        """The launcher template (raises launcher.LauncherError for an unknown name)."""
        return resolve_template(self.launcher, self.launchers)

    @property
    def launcher_name(self) -> str:
        return describe(self.template)

    @property
    def interpreter(self) -> str:
        """What {python} in a launcher template means."""
        return self.python or self.launchers.python or sys.executable

    def data_folder(self) -> Path:
        return self.data_dir or default_data_dir()
