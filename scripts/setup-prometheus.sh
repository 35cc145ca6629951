#!/usr/bin/env bash
# Install (once) Debian's `prometheus` package for the fleet tests, which start their own
# Prometheus on 127.0.0.1 with a generated config and a temp storage directory. Debian 12
# ships 2.42.0 (fleet-facts.md §2); the tests use only 2.42's API parameters.
# The package's own system service must not start: a policy-rc.d that refuses every start
# is in place during the install (invoke-rc.d honours it), and no service is enabled later.
# Prints HEADROOM_PROMETHEUS=<path> on success; exits non-zero when it cannot install.
set -euo pipefail
if command -v prometheus >/dev/null 2>&1; then
    echo "HEADROOM_PROMETHEUS=$(command -v prometheus)"
    exit 0
fi
if [ "$(id -u)" != "0" ]; then
    echo "setup-prometheus: not root, cannot apt-get install prometheus" >&2
    exit 1
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "setup-prometheus: no apt-get on this machine" >&2
    exit 1
fi
POLICY=/usr/sbin/policy-rc.d
CREATED_POLICY=0
if [ ! -e "$POLICY" ]; then
    printf '#!/bin/sh\nexit 101\n' >"$POLICY"
    chmod 755 "$POLICY"
    CREATED_POLICY=1
fi
cleanup() { if [ "$CREATED_POLICY" = "1" ]; then rm -f "$POLICY"; fi; }
trap cleanup EXIT
echo "setup-prometheus: apt-get install prometheus (Debian's package; service not started)" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
apt-get install -y -qq --no-install-recommends prometheus >/dev/null
# Belt and braces: a running init may still have started it on some images.
if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
    systemctl disable --now prometheus >/dev/null 2>&1 || true
fi
command -v prometheus >/dev/null
echo "HEADROOM_PROMETHEUS=$(command -v prometheus)"
