"""One TLS context per process for the HTTP clients Headroom builds.

httpx builds a fresh SSLContext for every client and loads the whole CA bundle into it:
15-25 ms of CPU each time, even for a plain-HTTP scrape of a loopback server that never
speaks TLS. The TUI builds two clients before its first data (the /metrics scrape and the
server's /v1/models + /version), and the Ray probe builds one per read (every 2 s), so that
load sat on the path to the first painted dashboard (benchmarks/startup.py) and in the
watching overhead (benchmarks/overhead.py). An SSLContext can be shared by any number of
clients and connections, so it is built once, on first use, with the same settings httpx
would use (its CA bundle; SSL_CERT_FILE / SSL_CERT_DIR only when the client trusts the
environment).
"""

from __future__ import annotations

import functools
import ssl

import httpx

__all__ = ["tls_context"]


@functools.cache
def tls_context(*, trust_env: bool = True) -> ssl.SSLContext:
    """The shared, verifying context: pass it as `verify=` with the client's own trust_env."""
    return httpx.create_ssl_context(trust_env=trust_env)
