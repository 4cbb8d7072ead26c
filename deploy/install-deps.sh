#!/usr/bin/env bash
# Installs the Debian packages Rouse needs to build, test and benchmark. Idempotent; runs as root or
# through sudo. Swift itself (6.x, at /opt/swift or on PATH) is expected to be present.
set -euo pipefail

packages=(
    pkg-config
    libcurl4-openssl-dev # libcurl (device channel, curl transport, test client)
    libnghttp2-dev       # HTTP/2 kernel
    libssl-dev           # TLS
    libsqlite3-dev       # SQLite's C API (CSQLite): the gateway's one-node store
    libpq-dev            # libpq: the gateway's PostgreSQL store
    postgresql-15        # the PostgreSQL server the tests start (throwaway clusters) and benchmarks use
    nghttp2-client       # h2load and nghttp: independent HTTP/2 peers for tests and benchmarks
    nghttp2-server       # nghttpd: the benchmark's reference server
    curl                 # the curl CLI (one-shot comparisons)
    time                 # /usr/bin/time: whole-process CPU and peak RSS in rouse-bench send --versus-floor
    gcc                  # cc: rouse-bench send --versus-floor compiles its plain C libcurl client
    openssl              # the certs/ generator
    iproute2             # ip netns / veth for the network tests
    procps               # ps, used by benchmarks for RSS
    python3-venv         # the interop tests' venv with third-party APNs clients (aioapns, kalyke-apns from PyPI)
    systemd              # systemd-analyze verify (unit tests), systemd-creds (the agent's state key)
    dpkg-dev             # dpkg-shlibdeps: the Debian packages' library dependencies (deploy/package.sh)
    lintian              # checks the Debian packages
    mmdebstrap           # the clean Debian 12 root the packages are installed into (deploy/package-test.sh)
    systemd-container    # systemd-nspawn boots that root, so the units run under systemd
    hyperfine            # one-shot `rouse send` vs `curl --http2` (deploy/package-bench.sh)
    make                 # builds clients/c (librouse-handler.so.0) in the tests and deploy/package.sh
    python3              # the Python client library's tests and the SIP handler (deploy/sip)
    kamailio             # SIP registrar/proxy of the SIP end-to-end test, rouse-bench sip and the demo (deploy/sip)
    kamailio-utils-modules  # http_client: Kamailio sends its VoIP push through rouse-pushd (deploy/sip, issue 30)
    baresip-core         # the headless softphone woken by a push (not `baresip`: it recommends a desktop stack)
    linphone-cli         # linphone-daemon: the RFC 8599 softphone (its REGISTER carries the push token; deploy/sip)
    sip-tester           # SIPp, the caller
    pulseaudio           # the headless audio server of AgentAudioServerTests (a call mutes, a ducker lowers)
    pulseaudio-utils     # pactl (the activation hook deploy/hooks/pactl-roles.sh, the tests) and pacat (a stream)
    libsystemd-dev       # sd-bus: RouseDBus, the D-Bus binding (logind, notifications, UPower)
    dbus-daemon          # the tests' private buses
    dbus-bin             # dbus-run-session, dbus-send (the tests and the demo)
    python3-dbusmock     # logind, the notification server and UPower stood in on the tests' buses
    python3-dbus-fast    # the UnifiedPush connectors (apps) of AgentUnifiedPushTests (Tests/Interop/unifiedpush_connector.py)
)

missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
    exit 0
fi

sudo=()
if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "install-deps: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
    sudo=(sudo)
fi
echo "install-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
