"""TLS contexts for the HTTP clients Headroom builds: one per process, and none loaded at all
for a client that only ever speaks plain HTTP.

httpx builds a fresh SSLContext for every client and loads the whole CA bundle into it:
15-25 ms of CPU each time, even for a plain-HTTP scrape of a loopback server that never
speaks TLS. The TUI builds two clients before its first data (the /metrics scrape and the
server's /v1/models + /version), and the Ray probe builds one per read (every 2 s), so that
load sat on the path to the first painted dashboard (benchmarks/startup.py) and in the
watching overhead (benchmarks/overhead.py).

- `tls_context`: the verifying context httpx would build (its CA bundle; SSL_CERT_FILE /
  SSL_CERT_DIR only when the client trusts the environment), built once, on first use, and
  shared (an SSLContext serves any number of clients and connections).
- `tls_context_for(url)`: that context for an https:// URL; for an http:// URL, a context
  that verifies certificates and host names but trusts no authority at all. Such a client
  never needs TLS (Headroom's clients follow no redirects, or same-origin ones only, so the
  scheme cannot change), and if it ever tried, the handshake would fail: closed, not open.
"""

from __future__ import annotations

import functools
import ssl
from urllib.parse import urlsplit

import httpx

__all__ = ["tls_context", "tls_context_for"]


def tls_context(*, trust_env: bool = True) -> ssl.SSLContext:
    """The shared, verifying context: pass it as `verify=` with the client's own trust_env."""
    return _verifying(bool(trust_env))  # one cache key per value, however it was passed


@functools.cache
def _verifying(trust_env: bool) -> ssl.SSLContext:
    return httpx.create_ssl_context(trust_env=trust_env)


@functools.cache
def _trusts_nothing() -> ssl.SSLContext:
    return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # CERT_REQUIRED, hostname checked, no CAs


def tls_context_for(url: str, *, trust_env: bool = True) -> ssl.SSLContext:
    """The context for a client that talks to `url`'s origin only (see the module's note)."""
    if urlsplit(url.strip()).scheme.lower() == "http":
        return _trusts_nothing()
    return tls_context(trust_env=trust_env)
