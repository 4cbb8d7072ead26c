#!/usr/bin/env bash
# The installation test, run by deploy/test.sh: builds the Debian packages (deploy/package.sh, lintian
# included), installs them with apt (chroot) into a clean Debian 12 minbase root that has no Swift toolchain, boots
# that root with systemd-nspawn (systemd as PID 1, loopback-only network) and runs deploy/debian/root-test.sh in
# it: --version, ldd, the examples in /etc/rouse against the parsers, mock-apns + send, a closed pipe, the units
# enabled but not started, gateway init + migrate + systemctl start + a push to a device channel, agent enroll +
# handlers + systemctl enable --now + a push to a handler, the same in the per-user mode (a user's own systemd
# manager, enroll --user), systemd-analyze verify (system and user units), idle RSS, purge.
#
# The minbase root (plus what the test needs that the packages do not: systemd to boot it, dbus and
# libpam-systemd for users' managers, netbase) is created once with mmdebstrap from this machine's apt sources and
# kept as a tarball in $ROUSE_PACKAGE_CACHE (default ~/.cache/rouse-package, with the release build and apt's
# downloaded packages), named by a hash of the sources and that package list, so a change to either makes a new
# one; each run unpacks it afresh under .build/package-root and lets apt resolve the packages' own dependencies.
# Needs root and Debian's mirror: without them it fails, saying why (it never skips).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
started=$SECONDS
fail() {
    echo "package-test: FAILED: $*" >&2
    exit 1
}
[ "$(id -u)" -eq 0 ] || fail "needs root (chroot, mounts, a network namespace)"
for tool in mmdebstrap systemd-nspawn nsenter chroot lintian pgrep; do
    command -v "$tool" >/dev/null || fail "$tool is missing (deploy/install-deps.sh installs it)"
done
cache=${ROUSE_PACKAGE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rouse-package}
mkdir -p "$cache"

# The commit the packages are built from (package.sh reads it as it starts, as here).
commit=$(git rev-parse HEAD)
[ -z "$(git status --porcelain --untracked-files=normal)" ] || commit="$commit-dirty"
echo "== package-test: packages (deploy/package.sh --lintian)" >&2
debs_dir="$repo/.build/debs"
mapfile -t debs < <(deploy/package.sh --out "$debs_dir" --lintian)
[ ${#debs[@]} -eq 4 ] || fail "deploy/package.sh made ${#debs[@]} packages, expected 4"
built=$SECONDS
for deb in "${debs[@]}"; do
    echo "$(basename "$deb"): $(du -k "$deb" | cut -f1) KiB, installed $(dpkg-deb -f "$deb" Installed-Size) KiB," \
        "Depends: $(dpkg-deb -f "$deb" Depends)" >&2
done
# The system libraries the programs link, from dpkg-shlibdeps (apt must bring them: the root does not have them).
# rouse, rouse-gateway, rouse-agent and rouse-pushd are one multi-call binary in the rouse package (the others ship
# symlinks to it and depend on rouse of the same version), so its package carries the libraries all four link
# (nghttp2, OpenSSL, SQLite). libcurl, libsystemd and libpq are loaded with dlopen, when a transfer is made, a D-Bus
# connection or a PostgreSQL store opens: the package of the program that needs each depends on it by name (the
# agent's device channel: libcurl; its session: libsystemd; the gateway's PostgreSQL store: libpq), and rouse, whose
# `send --transport curl` uses libcurl, recommends it.
rouse_deb=$(printf '%s\n' "${debs[@]}" | grep '/rouse_')
version=$(dpkg-deb -f "$rouse_deb" Version)
has_library() { # has_library DEB FIELD LIBRARY [VERSION]: the control field names the package LIBRARY (with VERSION)
    local field
    field=$(dpkg-deb -f "$1" "$2")
    grep -q -E "(^|, )$3( \(${4:-}|,|$)" <<<"$field" || fail "$(basename "$1") has no $3 ${4:-}in $2: $field"
}
for library in libnghttp2-14 libssl3 libsqlite3-0; do has_library "$rouse_deb" Depends "$library"; done
has_library "$rouse_deb" Recommends libcurl4
has_library "$rouse_deb" Recommends libpq5
# The binaries' relative relocations are packed (DT_RELR): glibc 2.36's loader or none.
has_library "$rouse_deb" Depends libc6 ">= 2.36)"
has_library "$(printf '%s\n' "${debs[@]}" | grep '/rouse-agent_')" Depends libc6 ">= 2.36)"
# What the dlopen is for: the multi-call binary links none of the three (each program loads what it uses).
multicall=$(mktemp)
dpkg-deb --fsys-tarfile "$rouse_deb" | tar -xO ./usr/bin/rouse >"$multicall"
multicall_needed=$(readelf -d "$multicall")
rm -f "$multicall"
grep -q "NEEDED.*libssl" <<<"$multicall_needed" || fail "readelf found no NEEDED entry in /usr/bin/rouse"
! grep -E "NEEDED.*(libcurl|libpq|libsystemd)" <<<"$multicall_needed" ||
    fail "/usr/bin/rouse links a library it should load with dlopen"
has_library "$(printf '%s\n' "${debs[@]}" | grep '/rouse-agent_')" Depends libcurl4
has_library "$(printf '%s\n' "${debs[@]}" | grep '/rouse-agent_')" Depends libsystemd0
has_library "$(printf '%s\n' "${debs[@]}" | grep '/rouse-gateway_')" Depends libpq5
for package in rouse-gateway rouse-agent rouse-pushd; do
    deb=$(printf '%s\n' "${debs[@]}" | grep "/${package}_")
    dpkg-deb -f "$deb" Depends | grep -q -F "rouse (= $version)" ||
        fail "$package does not depend on rouse (= $version): $(dpkg-deb -f "$deb" Depends)"
    # The listing in full first: grep -q ending the pipe early would fail it (SIGPIPE under pipefail).
    contents=$(dpkg-deb -c "$deb")
    grep -q -E "^l.* \./usr/bin/$package -> rouse$" <<<"$contents" ||
        fail "$package's /usr/bin/$package is not a symlink to the multi-call binary: $(grep usr/bin <<<"$contents")"
done
# Installed sizes against issue 31's targets (a size is not a timing: checked on every run). The target, all the
# packages together <= 40 MB installed (40,000 KiB: the issue's MB are Installed-Size KiB / 1000), is met since
# 2026-11-29: 39,888 KiB (the example handler with no Foundation and no regex engine, 8.8 MB; the multi-call binary
# 30.7 MB; both linked with --icf=safe; docs/benchmarks.md, "Footprint"). What is enforced is that target itself,
# so a regression (a Foundation import on the handler's side brings 1.4 MB back, a full Foundation import ~40 MB,
# a call to _StringProcessing 1.4 MB) fails here. The ceiling is the target.
total=0
for deb in "${debs[@]}"; do total=$((total + $(dpkg-deb -f "$deb" Installed-Size))); done
ceiling=40000
target=40000
if [ "$total" -le "$target" ]; then status="met"; else status="NOT met"; fi
echo "package-test: installed size of the ${#debs[@]} packages together: $total KiB (target <= $target KiB:" \
    "$status; ceiling $ceiling KiB)" >&2
[ "$total" -le "$ceiling" ] || fail "the packages together install $total KiB, above the ceiling of $ceiling KiB"

# --- the clean root ---------------------------------------------------------------------------------------------
sources=()
for file in /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
    [ -s "$file" ] && grep -q -E '^(deb |Types:.*deb)' "$file" && sources+=("$file")
done
[ ${#sources[@]} -gt 0 ] || fail "no apt sources on this machine to build the Debian 12 root from"
grep -q -E '(^|[[:space:]])bookworm([[:space:]]|$)' "${sources[@]}" ||
    fail "this machine's apt sources have no bookworm suite: the test root must be Debian 12"
# Not the packages' dependencies (none of Rouse's libraries is among them or theirs): systemd, to boot the root
# (and for systemd-analyze, systemd-creds, systemd-sysusers); dbus, libpam-systemd and dbus-user-session, which
# a desktop has and a user's systemd manager needs (logind, loginctl enable-linger); netbase, the /etc/hosts that
# every installed Debian has (minbase has none: "localhost" would not resolve).
root_packages=systemd,dbus,libpam-systemd,dbus-user-session,netbase
key=$({ cat "${sources[@]}"; echo "$root_packages"; } | sha256sum | cut -c1-12)
tarball="$cache/debian12-minbase-$key.tar"
if [ ! -f "$tarball" ]; then
    echo "== package-test: creating the Debian 12 minbase root (once; cached in $tarball)" >&2
    root_started=$SECONDS
    mmdebstrap --variant=minbase --mode=root --format=tar --quiet --include="$root_packages" bookworm \
        "$tarball.new" "${sources[@]}" ||
        fail "mmdebstrap could not create the Debian 12 root (is Debian's mirror reachable?)"
    mv "$tarball.new" "$tarball"
    echo "package-test: root created in $((SECONDS - root_started)) s" >&2
fi

root="$repo/.build/package-root"
nspawn=""
release_root() {
    if [ -n "$nspawn" ] && kill -0 "$nspawn" 2>/dev/null; then
        kill -TERM "$nspawn" # the container's systemd shuts down
        for _ in $(seq 100); do kill -0 "$nspawn" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$nspawn" 2>/dev/null || true
    fi
    nspawn=""
    # Processes still running in the chroot (a failed apt step), then its mounts, deepest first.
    for link in /proc/[0-9]*/root; do
        if [ "$(readlink "$link" 2>/dev/null)" = "$root" ]; then
            pid=${link#/proc/}
            kill -KILL "${pid%/root}" 2>/dev/null || true
        fi
    done
    awk -v r="$root" 'index($2, r "/") == 1 {print $2}' /proc/mounts | sort -r | while read -r mount; do
        umount -l "$mount" || true
    done
}
release_root
rm -rf "$root"
mkdir -p "$root"
tar -xf "$tarball" -C "$root"
trap release_root EXIT
mount -t proc proc "$root/proc"
mount --bind /dev "$root/dev"
mount -t tmpfs -o mode=0755 tmpfs "$root/run"
mount -t tmpfs -o mode=1777 tmpfs "$root/tmp"
mkdir -p "$cache/apt-archives/partial"
mount --bind "$cache/apt-archives" "$root/var/cache/apt/archives"
cp -L /etc/resolv.conf "$root/etc/resolv.conf"
mkdir -p "$root/root/debs" "$root/root/certs"
cp "${debs[@]}" "$root/root/debs/"
cp certs/*.pem certs/*.key certs/*.p8 certs/keys.json "$root/root/certs/"
install -m 0755 deploy/debian/root-test.sh "$root/root/root-test.sh"

echo "== package-test: apt installs the packages and their dependencies" >&2
in_root() { chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root DEBIAN_FRONTEND=noninteractive "$@"; }
in_root apt-get update -qq >"$root/tmp/apt.log" 2>&1 || fail "apt-get update in the root: $(tail -5 "$root/tmp/apt.log")"
debs_in_root=()
for deb in "${debs[@]}"; do debs_in_root+=("/root/debs/$(basename "$deb")"); done
in_root apt-get install -y -q "${debs_in_root[@]}" >"$root/tmp/apt.log" 2>&1 ||
    fail "apt-get install of the packages: $(tail -20 "$root/tmp/apt.log")"
grep -E "^(Setting up rouse|rouse-)" "$root/tmp/apt.log" >&2 || true
installed=$SECONDS
release_root

echo "== package-test: booting the root (systemd-nspawn)" >&2
systemd-nspawn --quiet --directory="$root" --boot --private-network --register=no --keep-unit \
    --machine=rouse-pkgtest >"$repo/.build/package-root.console" 2>&1 </dev/null &
nspawn=$!
# The container's systemd: the process below systemd-nspawn that is PID 1 in its own namespace.
leader=""
for _ in $(seq 300); do
    for child in $(pgrep -P "$nspawn"); do
        for candidate in "$child" $(pgrep -P "$child"); do
            if grep -q -P '^NSpid:\s+\d+\s+1$' "/proc/$candidate/status" 2>/dev/null; then leader=$candidate; fi
        done
    done
    [ -n "$leader" ] && break
    kill -0 "$nspawn" 2>/dev/null || break
    sleep 0.1
done
[ -n "$leader" ] || fail "systemd-nspawn did not boot the root: $(tail -20 "$repo/.build/package-root.console")"
inside() { nsenter --target "$leader" --mount --uts --ipc --net --pid --cgroup -- /usr/bin/env -i \
    PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root TERM=dumb "$@"; }
# Until its manager answers (its socket appears a moment after it starts) and the boot is over.
deadline=$((SECONDS + 90))
until state=$(inside /bin/systemctl is-system-running --wait 2>&1) || [ "$state" = degraded ]; do
    [ $SECONDS -lt $deadline ] ||
        fail "the root's systemd did not finish booting ($state): $(tail -20 "$repo/.build/package-root.console")"
    sleep 0.2
done
booted=$SECONDS

echo "== package-test: inside the booted root" >&2
inside /root/root-test.sh "$version" "$commit" || fail "the test inside the clean root failed"
echo "package-test: passed: packages $((built - started)) s, root + apt $((installed - built)) s," \
    "boot $((booted - installed)) s, inside $((SECONDS - booted)) s, total $((SECONDS - started)) s" >&2
