"""TLS contexts of Headroom's HTTP clients: one verifying context shared by the https ones,
and for plain-HTTP clients a context that loads no CA bundle yet still fails closed."""

from __future__ import annotations

import ssl

import httpx
import pytest

from headroom.probes.tls import tls_context, tls_context_for


def test_https_clients_share_one_verifying_context_with_the_ca_bundle() -> None:
    first = tls_context_for("https://gpu-box.example:8000")
    assert first is tls_context_for("HTTPS://other.example") is tls_context()
    assert first.verify_mode == ssl.CERT_REQUIRED and first.check_hostname
    assert first.cert_store_stats()["x509_ca"] > 0  # the authorities httpx would trust


def test_trust_env_is_kept_apart() -> None:
    assert tls_context(trust_env=False) is tls_context(trust_env=False)
    assert tls_context(trust_env=False) is not tls_context(trust_env=True)


@pytest.mark.parametrize("url", ["http://127.0.0.1:8000", " HTTP://localhost:8000/metrics"])
def test_plain_http_loads_no_authority_and_would_refuse_any_certificate(url: str) -> None:
    context = tls_context_for(url, trust_env=False)
    assert context is not tls_context(trust_env=False)
    assert context.cert_store_stats()["x509_ca"] == 0  # nothing loaded: nothing trusted
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname


@pytest.mark.parametrize("url", ["gpu-box:8000", "", "ftp://x"])
def test_anything_but_plain_http_gets_the_verifying_context(url: str) -> None:
    assert tls_context_for(url) is tls_context()


def test_a_client_built_with_it_scrapes_a_plain_http_server() -> None:
    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, text="ok")

    url = "http://127.0.0.1:9/metrics"
    with httpx.Client(verify=tls_context_for(url), transport=httpx.MockTransport(answer)) as c:
        assert c.get(url).text == "ok"
