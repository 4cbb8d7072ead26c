#!/usr/bin/env bash
# Builds the Debian packages of this checkout: rouse (the CLI with the mock), rouse-gateway and rouse-agent (with
# the example handler, the handler protocol's specification and its C and Python client libraries: clients/) and
# rouse-pushd. Release binaries with the Swift runtime linked statically (--static-swift-stdlib), so the machines
# they are installed on need no Swift toolchain; their dependencies are Debian 12's libraries, computed by
# dpkg-shlibdeps, except libcurl4, libsystemd0 and libpq5, which the binaries load with dlopen when they make a
# transfer (the agent's device channel, `--transport curl`), open a D-Bus connection (the agent) or a PostgreSQL
# store (the gateway), and which are named here by hand. rouse,
# rouse-gateway, rouse-agent and rouse-pushd are one multi-call binary, /usr/bin/rouse in the rouse package (the
# others are symlinks to it in their packages, which depend on rouse of the same version): the runtime,
# FoundationEssentials and the shared modules are installed once instead of four times (deploy/debian/multicall.c;
# the measurements behind the choice: docs/benchmarks.md, "Footprint").
# Units under /lib/systemd/system (enabled at installation, started once `rouse gateway init` / `rouse agent enroll`
# configured them) and the agent's per-user unit under /usr/lib/systemd/user (started by each user who enrolled
# with `rouse agent enroll --user`), man pages and bash/zsh/fish completions generated from the argument parsers.
#
#   deploy/package.sh [--out DIR] [--lintian]
#
# The packages land in .build/debs (or DIR). The release build is cached outside the checkout, in
# $ROUSE_PACKAGE_CACHE (default ~/.cache/rouse-package): a copy of the tree updated file by file (only changed
# files are rewritten, so a fresh clone rebuilds only what changed), its build directory and the man page tool.
# The version is 0.1.0~git<commits>.<commit> (+dirty with uncommitted changes) and every binary's --version
# prints it with the full commit.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
export PATH="/opt/swift/usr/bin:$PATH"

upstream_version=0.1.0
maintainer="Rouse developers <rouse-dev@example.org>"
out="$repo/.build/debs"
run_lintian=0
while [ $# -gt 0 ]; do
    case "$1" in
        --out) out=$(realpath -m "$2"); shift 2 ;;
        --lintian) run_lintian=1; shift ;;
        *) echo "usage: deploy/package.sh [--out DIR] [--lintian]" >&2; exit 64 ;;
    esac
done
for tool in swift dpkg-deb dpkg-shlibdeps git gzip strip cc make pkg-config; do
    command -v "$tool" >/dev/null || { echo "package.sh: $tool is missing (deploy/install-deps.sh)" >&2; exit 1; }
done
git rev-parse --verify -q HEAD >/dev/null || { echo "package.sh: not a git checkout with a commit" >&2; exit 1; }

cache=${ROUSE_PACKAGE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rouse-package}
mkdir -p "$cache"
exec 9>"$cache/lock"
flock 9 # one packaging run per cache at a time

# --- version ---------------------------------------------------------------------------------------------------
commit=$(git rev-parse HEAD)
dirty=""
if [ -n "$(git status --porcelain --untracked-files=normal)" ]; then dirty="+dirty"; fi
version="${upstream_version}~git$(git rev-list --count HEAD).${commit:0:7}${dirty}"
commit_text="$commit${dirty:+-dirty}"
commit_epoch=$(git log -1 --format=%ct HEAD)
export SOURCE_DATE_EPOCH=$commit_epoch
arch=$(dpkg --print-architecture)
echo "package.sh: version $version ($arch)" >&2
started=$SECONDS

# --- the tree, copied file by file where it changed ------------------------------------------------------------
src="$cache/src"
stamp_file=Sources/RouseBuildInfo/BuildStamp.swift
mkdir -p "$src"
declare -A wanted=()
while IFS= read -r -d '' file; do
    [ -f "$file" ] || continue # deleted but not committed
    [ "$file" = "$stamp_file" ] && continue
    wanted["$file"]=1
    if ! cmp -s "$file" "$src/$file"; then
        mkdir -p "$src/$(dirname "$file")"
        cp "$file" "$src/$file"
    fi
done < <(git ls-files -z --cached --others --exclude-standard)
while IFS= read -r -d '' file; do
    relative=${file#"$src/"}
    case "$relative" in "$stamp_file" | Package.resolved) continue ;; esac
    [ -n "${wanted[$relative]:-}" ] || rm -f "$file"
done < <(find "$src" -path "$src/.build" -prune -o -path "$src/.swiftpm" -prune -o -type f -print0)
mkdir -p "$src/$(dirname "$stamp_file")"
cat >"$cache/BuildStamp.swift" <<EOF
// Written by deploy/package.sh for the Debian packages.
enum BuildStamp {
    static let version: String? = "$version"
    static let commit: String? = "$commit_text"
    static let build = "release build, Swift runtime linked statically"
}
EOF
cmp -s "$cache/BuildStamp.swift" "$src/$stamp_file" || cp "$cache/BuildStamp.swift" "$src/$stamp_file"

# --- release build ---------------------------------------------------------------------------------------------
# -z now: every symbol bound at start, so the GOT is read-only after relocation (full RELRO with -z relro, the
# linker's default here); lintian's hardening-no-bindnow. The static Swift runtime resolves nothing lazily that
# this would break (the package test runs every binary). lld (the Swift toolchain's) with -z pack-relative-relocs: the
# position-independent binaries' ~110,000 relative relocations as a DT_RELR bitmap (16 KB) instead of RELA entries
# (1.6 MB the loader read at every start and kept resident); glibc 2.36 (Debian 12) applies it, and the packages say
# so. --icf=safe folds functions whose code is identical and whose address is never taken; lld folds little of
# Swift's code with it (swiftc writes no address-significance table, so every Swift function counts as
# address-taken), gold folded 410 KB of the multi-call binary, but gold cannot pack relocations, which saves more
# (1.4 MB stripped; docs/benchmarks.md, "Start-up").
linker=(-use-ld=lld -Xlinker -z -Xlinker pack-relative-relocs)
build=(swift build -c release --static-swift-stdlib -Xswiftc "${linker[0]}" "${linker[@]:1}"
    -Xlinker -z -Xlinker now -Xlinker --icf=safe
    --package-path "$src" --scratch-path "$cache/build")
products=(rouse rouse-gateway rouse-agent rouse-example-handler rouse-pushd)
for product in "${products[@]}"; do
    echo "package.sh: building $product (release, static Swift runtime)" >&2
    if ! "${build[@]}" --product "$product" >"$cache/build-$product.log" 2>&1; then
        grep -v -E "^\[[0-9]+/[0-9]+\] " "$cache/build-$product.log" | tail -n 40 >&2
        echo "package.sh: building $product failed (log: $cache/build-$product.log)" >&2
        exit 1
    fi
done
bin=$("${build[@]}" --show-bin-path)
# No shipped object refers to _StringProcessing: one call to its `contains(_: String)`, `firstRange(of:)` or
# `replacing(_:with:)` links the regex engine (1.4 MB) into a program that uses no regular expression. RouseText has
# `includes`, `firstRange(ofText:)` and `replacingAll` instead.
regex_users=$(for product in "${products[@]}"; do cat "$bin/$product.product/Objects.LinkFileList"; done | sort -u |
    while read -r object; do
        if nm -u "$object" 2>/dev/null | grep -q 17_StringProcessing; then echo "  $object"; fi
    done)
if [ -n "$regex_users" ]; then
    printf 'package.sh: these objects call _StringProcessing (use RouseText'"'"'s includes, firstRange(ofText:),\n' >&2
    printf 'replacingAll):\n%s\n' "$regex_users" >&2
    exit 1
fi
# The C client library of the handler protocol (libc only), with the system cc, hardened like Debian's builds.
clients="$cache/clients-c"
rm -rf "$clients" && mkdir -p "$clients"
make -s -C clients/c OUT="$clients" CFLAGS="-O2 -g -D_FORTIFY_SOURCE=2 -fstack-protector-strong" >&2

# --- one multi-call binary for rouse, rouse-gateway, rouse-agent and rouse-pushd -------------------------------
# Linked from the object files SwiftPM compiled for the four products (each product's Objects.LinkFileList, in
# the order SwiftPM gives, each object once) and deploy/debian/multicall.c, which picks the program's
# <module>_main by the name it was started under; the same link as SwiftPM's (static Swift runtime, the system
# libraries of the C modules from pkg-config, --gc-sections, -z now, lld with relative relocations packed). The
# symlinks beside it are the names the man page tool and the completion scripts run it under.
multi="$cache/multi"
rm -rf "$multi" && mkdir -p "$multi"
multi_programs=(rouse rouse-gateway rouse-agent rouse-pushd)
for program in "${multi_programs[@]}"; do cat "$bin/$program.product/Objects.LinkFileList"; done |
    awk '!seen[$0]++' >"$multi/objects"
cc -O2 -D_FORTIFY_SOURCE=2 -fstack-protector-strong -c deploy/debian/multicall.c -o "$multi/multicall.o"
# shellcheck disable=SC2046 # pkg-config's flags are words
if ! swiftc -static-stdlib "${linker[@]}" -emit-executable -module-name rouse_multicall -L "$bin" \
    $(pkg-config --libs libnghttp2 openssl) -lstdc++ -Xlinker --gc-sections -Xlinker -z -Xlinker now \
    -Xlinker --icf=safe "$multi/multicall.o" @"$multi/objects" -o "$multi/rouse" >"$cache/link-multicall.log" 2>&1; then
    grep -v "the use of .mktemp. is dangerous" "$cache/link-multicall.log" | tail -n 40 >&2
    echo "package.sh: linking the multi-call binary failed (log: $cache/link-multicall.log)" >&2
    exit 1
fi
for program in "${multi_programs[@]:1}"; do ln -s rouse "$multi/$program"; done
built=$SECONDS

# --- man pages: swift-argument-parser's generate-manual, compiled against the ArgumentParser just built ---------
manual_tool="$cache/generate-manual"
parser_checkout="$cache/build/checkouts/swift-argument-parser"
if [ ! -x "$manual_tool" ] || [ -n "$(find "$parser_checkout/Tools/generate-manual" "$bin/ArgumentParser.build" \
    \( -name '*.swift' -o -name '*.o' \) -newer "$manual_tool" -print -quit)" ]; then
    echo "package.sh: compiling generate-manual (swift-argument-parser's man page generator)" >&2
    swiftc -O -parse-as-library -module-name generate_manual -static-stdlib -I "$bin/Modules" \
        $(find "$parser_checkout/Tools/generate-manual" -name '*.swift') \
        "$bin"/ArgumentParser.build/*.o "$bin"/ArgumentParserToolInfo.build/*.o -o "$manual_tool.new"
    mv "$manual_tool.new" "$manual_tool"
fi

# --- the packages of these inputs may exist already ------------------------------------------------------------
# The key covers what goes into the packages: the binaries, the packaging files, the units, the docs, the version.
key=$( {
    echo "$version $commit_text $arch"
    sha256sum "$multi/rouse" "$bin"/rouse-example-handler "$manual_tool"
    git ls-files -z --cached --others --exclude-standard -- deploy/package.sh deploy/debian deploy/hooks \
        deploy/rouse-gateway.json 'deploy/*.service' deploy/rouse-agent.sysusers.conf docs README.md \
        Sources/rouse-example-handler clients deploy/sip deploy/debian/multicall.c \
        ':(exclude)deploy/debian/root-test.sh' |
        xargs -0 sha256sum
    echo "lintian=$run_lintian"
} | sha256sum | cut -c1-16)
stored="$cache/debs/$key"
if [ -f "$stored/complete" ]; then
    echo "package.sh: packages of these inputs were built (and checked) before: $stored" >&2
    mkdir -p "$out"
    for deb in "$stored"/*.deb; do
        rm -f "$out/$(basename "$deb" | cut -d_ -f1)"_*_"$arch".deb
        cp "$deb" "$out/"
        echo "$out/$(basename "$deb")"
    done
    exit 0
fi

# --- package trees ---------------------------------------------------------------------------------------------
manual=$SECONDS
work="$cache/trees"
rm -rf "$work"
mkdir -p "$work" "$out"
date_rfc=$(date -u -R -d "@$commit_epoch")
date_manual=$(date -u -d "@$commit_epoch" +%Y-%m-%d)

# install_binary PACKAGE SOURCE DESTINATION: stripped, 0755.
install_binary() {
    install -D -m 0755 "$2" "$work/$1$3"
    strip --strip-unneeded --remove-section=.comment --remove-section=.note "$work/$1$3"
}

# install_program_link PACKAGE PROGRAM: /usr/bin/PROGRAM, a symlink to the multi-call binary of the rouse package.
install_program_link() {
    install -d "$work/$1/usr/bin"
    ln -s rouse "$work/$1/usr/bin/$2"
}

# install_interface PACKAGE PROGRAM: its man pages (one per command) and its bash, zsh and fish completions.
install_interface() {
    local package=$1 program=$2 binary="$multi/$2" pages="$cache/man/$2"
    rm -rf "$pages" && mkdir -p "$pages"
    # One page per program, every subcommand in it (whatis needs a one-word name); blank lines of the help
    # texts become paragraph breaks.
    "$manual_tool" "$binary" --output-directory "$pages" --date "$date_manual" --authors "Rouse developers" \
        --section 1 >/dev/null
    install -d "$work/$package/usr/share/man/man1"
    for page in "$pages"/*.1; do
        sed 's/^$/.Pp/' "$page" | gzip -9n >"$work/$package/usr/share/man/man1/$(basename "$page").gz"
    done
    install -d "$work/$package/usr/share/bash-completion/completions" \
        "$work/$package/usr/share/zsh/vendor-completions" "$work/$package/usr/share/fish/vendor_completions.d"
    # bash-completion sources the file: no #! line.
    "$binary" --generate-completion-script bash | sed '1{/^#!/d}' \
        >"$work/$package/usr/share/bash-completion/completions/$program"
    "$binary" --generate-completion-script zsh >"$work/$package/usr/share/zsh/vendor-completions/_$program"
    "$binary" --generate-completion-script fish >"$work/$package/usr/share/fish/vendor_completions.d/$program.fish"
}

# install_docs PACKAGE FILE...: /usr/share/doc/PACKAGE with copyright and changelog.
install_docs() {
    local package=$1
    shift
    local doc="$work/$package/usr/share/doc/$package"
    install -d "$doc"
    install -m 0644 deploy/debian/copyright "$doc/copyright"
    printf '%s (%s) unstable; urgency=medium\n\n  * Built by deploy/package.sh from commit\n    %s.\n\n -- %s  %s\n' \
        "$package" "$version" "$commit_text" "$maintainer" "$date_rfc" | gzip -9n >"$doc/changelog.gz"
    for file in "$@"; do install -m 0644 "$file" "$doc/"; done
    if [ -f "deploy/debian/lintian/$package" ]; then
        install -D -m 0644 "deploy/debian/lintian/$package" "$work/$package/usr/share/lintian/overrides/$package"
    fi
}

# install_unit PACKAGE NAME: the unit from deploy/ with the packaged paths, and the package's drop-in.
install_unit() {
    local package=$1 name=$2
    install -d "$work/$package/lib/systemd/system/$name.service.d"
    sed -e "s|/usr/local/bin/|/usr/bin/|g" -e "s|file:///usr/share/doc/rouse/|file:///usr/share/doc/$package/|g" \
        "deploy/$name.service" >"$work/$package/lib/systemd/system/$name.service"
    install -m 0644 "deploy/debian/units/$name.conf" "$work/$package/lib/systemd/system/$name.service.d/debian.conf"
}

install_binary rouse "$multi/rouse" /usr/bin/rouse
install_interface rouse rouse
install_docs rouse README.md docs/send.md docs/mock-apns.md

# install_user_unit PACKAGE NAME SOURCE: a systemd user unit (/usr/lib/systemd/user) and the package's drop-in.
install_user_unit() {
    local package=$1 name=$2 source=$3
    install -d "$work/$package/usr/lib/systemd/user/$name.service.d"
    sed -e "s|/usr/local/bin/|/usr/bin/|g" -e "s|file:///usr/share/doc/rouse/|file:///usr/share/doc/$package/|g" \
        "$source" >"$work/$package/usr/lib/systemd/user/$name.service"
    install -m 0644 "deploy/debian/units/$name-user.conf" \
        "$work/$package/usr/lib/systemd/user/$name.service.d/debian.conf"
}

install_program_link rouse-gateway rouse-gateway
install_interface rouse-gateway rouse-gateway
install_docs rouse-gateway docs/gateway.md docs/webpush.md docs/security.md
install -d "$work/rouse-gateway/usr/share/doc/rouse-gateway/examples"
install -m 0644 deploy/rouse-gateway.json "$work/rouse-gateway/usr/share/doc/rouse-gateway/examples/gateway.json"
install -D -m 0644 deploy/debian/gateway.json.example "$work/rouse-gateway/etc/rouse/gateway.json.example"
install_unit rouse-gateway rouse-gateway

install_program_link rouse-agent rouse-agent
install_binary rouse-agent "$bin/rouse-example-handler" /usr/libexec/rouse/rouse-example-handler
install_interface rouse-agent rouse-agent
install_docs rouse-agent docs/agent.md docs/activations.md docs/state.md docs/handler-protocol.md docs/softphone.md
# Handlers in other languages (docs/handler-protocol.md): the C library with its header and pkg-config file, the
# Python module, their example handlers, and the SIP recipe (Kamailio fragment, push script, baresip handler).
multiarch=$(cc -dumpmachine)
# The library in a directory of its own, outside ld.so's path (it speaks this agent's protocol version; linked with
# the run path that its pkg-config file adds); the Python module likewise (PYTHONPATH=/usr/share/rouse/python): no
# python3 dependency for devices whose handlers are not written in Python.
make -s -C clients/c OUT="$clients" install DESTDIR="$work/rouse-agent" PREFIX=/usr LIBDIR=/usr/lib/rouse \
    PCDIR="/usr/lib/$multiarch/pkgconfig" >&2
strip --strip-unneeded --remove-section=.comment --remove-section=.note \
    "$work/rouse-agent/usr/lib/rouse/librouse-handler.so.0"
install -D -m 0644 clients/python/rouse_handler.py "$work/rouse-agent/usr/share/rouse/python/rouse_handler.py"
install -d "$work/rouse-agent/usr/share/doc/rouse-agent/examples/sip"
install -m 0644 clients/c/example-handler.c clients/python/example_handler.py \
    "$work/rouse-agent/usr/share/doc/rouse-agent/examples/"
install -m 0644 deploy/sip/* "$work/rouse-agent/usr/share/doc/rouse-agent/examples/sip/"
install -d "$work/rouse-agent/usr/share/doc/rouse-agent/examples"
install -m 0644 Sources/rouse-example-handler/main.swift \
    "$work/rouse-agent/usr/share/doc/rouse-agent/examples/rouse-example-handler.swift"
install -m 0755 deploy/hooks/pactl-roles.sh "$work/rouse-agent/usr/share/doc/rouse-agent/examples/pactl-roles.sh"
install -D -m 0644 deploy/debian/example.toml.example "$work/rouse-agent/etc/rouse/handlers.d/example.toml.example"
install_unit rouse-agent rouse-agent
install_user_unit rouse-agent rouse-agent deploy/rouse-agent-user.service
# The system agent's --handler-user, created by the postinst with systemd-sysusers.
install -D -m 0644 deploy/rouse-agent.sysusers.conf "$work/rouse-agent/usr/lib/sysusers.d/rouse-agent.conf"

install_program_link rouse-pushd rouse-pushd
install_interface rouse-pushd rouse-pushd
install_docs rouse-pushd docs/push-service.md docs/push-api.yaml
install -D -m 0644 deploy/debian/pushd.json.example "$work/rouse-pushd/etc/rouse/pushd.json.example"
install_unit rouse-pushd rouse-pushd

# --- dependencies: dpkg-shlibdeps over every ELF file of each package ------------------------------------------
shlibs_depends() {
    local package=$1 dir="$cache/shlibs"
    rm -rf "$dir" && mkdir -p "$dir/debian"
    printf 'Source: rouse\n\nPackage: %s\nArchitecture: any\n' "$package" >"$dir/debian/control"
    local files=()
    while IFS= read -r -d '' file; do
        if [ "$(head -c 4 "$file" | od -An -c | tr -d ' ')" = '177ELF' ]; then files+=("-e$file"); fi
    done < <(find "$work/$package" -type f -perm -u+x -print0)
    # rouse-gateway and rouse-pushd have no ELF file of their own (their program is rouse's multi-call binary).
    [ ${#files[@]} -gt 0 ] || return 0
    (cd "$dir" && dpkg-shlibdeps -O "${files[@]}" 2>/dev/null) | sed -n 's/^shlibs:Depends=//p'
}

# depends LIST...: the non-empty ones joined with ", ".
depends() {
    local joined="" item
    for item in "$@"; do [ -z "$item" ] || joined="${joined:+$joined, }$item"; done
    echo "$joined"
}

# --- control files and the .deb --------------------------------------------------------------------------------
build_deb() {
    local package=$1 depends=$2 recommends=$3 summary=$4 description=$5
    local control="$work/$package/DEBIAN"
    install -d -m 0755 "$control"
    {
        echo "Package: $package"
        echo "Version: $version"
        echo "Architecture: $arch"
        echo "Maintainer: $maintainer"
        echo "Installed-Size: $(du -sk --exclude=DEBIAN "$work/$package" | cut -f1)"
        echo "Depends: $depends"
        [ -z "$recommends" ] || echo "Recommends: $recommends"
        echo "Section: net"
        echo "Priority: optional"
        echo "Description: $summary"
        printf '%s\n' "$description" | fold -s -w 76 | sed -e 's/ *$//' -e 's/^/ /' -e 's/^ $/ ./'
    } >"$control/control"
    for script in config postinst prerm postrm; do
        if [ -f "deploy/debian/scripts/$package.$script" ]; then
            install -m 0755 "deploy/debian/scripts/$package.$script" "$control/$script"
        fi
    done
    if [ -f "deploy/debian/scripts/$package.templates" ]; then
        install -m 0644 "deploy/debian/scripts/$package.templates" "$control/templates"
    fi
    if [ -d "$work/$package/etc" ]; then
        (cd "$work/$package" && find etc -type f | sed 's|^|/|' | sort) >"$control/conffiles"
        chmod 0644 "$control/conffiles"
    fi
    (cd "$work/$package" && find . -path ./DEBIAN -prune -o -type f -print0 | sort -z | xargs -0 md5sum |
        sed 's|  \./|  |') >"$control/md5sums"
    chmod 0644 "$control/md5sums" "$control/control"
    find "$work/$package" -exec touch -h -d "@$commit_epoch" {} +
    local deb="$out/${package}_${version}_${arch}.deb"
    rm -f "$out/${package}"_*_"$arch".deb
    dpkg-deb --root-owner-group -Zxz --build "$work/$package" "$deb" >/dev/null
    echo "$deb"
}

# without_libc6 LIST: the list without its libc6 entry (the packages with binaries name libc6 (>= 2.36), below).
without_libc6() { sed -E 's/(^|, )libc6 \([^)]*\)//; s/^, //' <<<"$1"; }
rouse_depends=$(without_libc6 "$(shlibs_depends rouse)")
gateway_depends=$(shlibs_depends rouse-gateway)
agent_depends=$(without_libc6 "$(shlibs_depends rouse-agent)")
debs=()
# libcurl4, libsystemd0 and libpq5: loaded with dlopen (Sources/CRouseCurl, CRouseSystemd, CRousePQ), so
# dpkg-shlibdeps cannot see them; libcurl 7.85 for CURLOPT_PROTOCOLS_STR, libsystemd 241 for sd_bus_close_unref (its
# symbol version). The agent needs libcurl for its device channel and sd-bus for the session, rouse libcurl only for
# `rouse send --transport curl`; the gateway needs libpq for a PostgreSQL store (the default store, SQLite, is linked).
libcurl="libcurl4 (>= 7.85.0)"
libsystemd="libsystemd0 (>= 241)"
libpq="libpq5"
# libc6 2.36: the relative relocations are packed (DT_RELR, lld's -z pack-relative-relocs above), which only glibc
# 2.36's loader applies (the binaries need the version GLIBC_ABI_DT_RELR); dpkg-shlibdeps looks only at the functions
# called, so it says 2.35.
libc="libc6 (>= 2.36)"
debs+=("$(build_deb rouse "$(depends "$rouse_depends" "$libc")" "$libcurl, $libpq, openssl, curl" \
    "VoIP push tools for Linux: APNs sender, mock APNs, reachability" \
    "rouse sends VoIP, background and alert pushes to Apple's APNs or anything speaking its provider API (token or certificate authentication, HTTP/2), runs a mock APNs endpoint that checks what Apple checks (rouse mock-apns), watches network reachability with SCNetworkReachability semantics (rouse reach), and sets up and administers rouse-gateway (rouse gateway init, keys, devices, tokens) and rouse-agent (rouse agent enroll, handlers, status).")")
gateway_depends=$(depends "$gateway_depends" "$libpq, adduser, debconf (>= 0.5) | debconf-2.0, rouse (= $version)")
debs+=("$(build_deb rouse-gateway "$gateway_depends" "openssl" \
    "APNs-compatible push gateway for Linux devices" \
    "rouse-gateway accepts pushes from VoIP backends with the APNs provider API (same requests, JWT keys or client certificates, same reasons), stores them durably (SQLite, or PostgreSQL shared by several gateways) and delivers them to Linux devices running rouse-agent over one long-lived HTTP/2 device channel. The unit is enabled at installation and starts once 'rouse gateway init' has written /etc/rouse/gateway.json.")")
# procps: the agent unit's ExecReload= is /bin/kill -HUP (handler files reloaded on SIGHUP).
# systemd | systemd-sysusers: the postinst creates the handler user from sysusers.d (as debhelper's
# dh_installsysusers does).
debs+=("$(build_deb rouse-agent "$(depends "$agent_depends" "$libc, $libcurl, $libsystemd, debconf (>= 0.5) | debconf-2.0, procps, systemd | systemd-sysusers, rouse (= $version)")" "" \
    "Push agent for Linux devices: wakes VoIP handlers with iOS's rules" \
    "rouse-agent keeps the device channel to rouse-gateway open while the network allows, and launches, suspends and arbitrates handler programs for the pushes it receives with iOS's PushKit rules (a VoIP push must be reported as a call), with audio-session-like activations and sealed state at rest. Includes an example handler, the handler protocol's specification, its client libraries for C (librouse-handler.so.0, rouse-handler.h) and Python (rouse_handler), and a Kamailio recipe for push-woken SIP softphones. The system unit (headless devices) is enabled at installation and starts once 'rouse agent enroll' has enrolled the device; the per-user unit (desktops: handlers are the user's programs in the user's session) starts for a user who ran 'rouse agent enroll --user'.")")
pushd_depends=$(shlibs_depends rouse-pushd)
# rouse (= version): /usr/bin/rouse-pushd is a symlink to rouse's multi-call binary.
debs+=("$(build_deb rouse-pushd "$(depends "$pushd_depends" "adduser, rouse (= $version)")" "" \
    "Push service: warm APNs connections behind a local API" \
    "rouse-pushd keeps warm HTTP/2 connections to APNs (or rouse-gateway) for several apps, teams, keys and certificates, and answers each push's outcome synchronously (delivered with apns-id, rejected with the exact APNs reason, failed with whether APNs may have processed it) over a local HTTP API on a Unix socket (peer uid/gid checked) and optionally TCP with a bearer token. A VoIP endpoint takes the push type and app from the path, so a SIP proxy can call it with a body and one header. The unit is enabled at installation and starts once /etc/rouse/pushd.json exists.")")
packaged=$SECONDS
if [ "$run_lintian" = 1 ]; then
    echo "package.sh: lintian" >&2
    # Tags that remain are overridden in the packages, each with its reason (deploy/debian/lintian/PACKAGE).
    lintian --fail-on error,warning --display-info --show-overrides "${debs[@]}" >&2
fi
echo "package.sh: release build $((built - started)) s, man page tool $((manual - built)) s, packages" \
    "$((packaged - manual)) s, lintian $((SECONDS - packaged)) s" >&2
rm -rf "$cache/debs" # only the newest set is kept
mkdir -p "$stored"
cp "${debs[@]}" "$stored/"
touch "$stored/complete"
printf '%s\n' "${debs[@]}"
