#!/usr/bin/env bash
# The guard rails of docs/architecture.md that the compiler does not check, checked on Sources/ (part of
# deploy/test.sh; run it alone as deploy/check-rules.sh):
#   libc     libc is called only through RouseSystem's `Sys` (allowed: RouseSystem itself, the C shims, rouse-bench,
#            and rouse-example-handler, which is the model of a handler linking RouseAgentClient alone, on purpose);
#   clock    the time is read only through RouseClock (allowed: RouseClock, rouse-bench, rouse-example-handler);
#            `Date()`, `ContinuousClock`, `SuspendingClock`, `clock_gettime` on a real-time or monotonic clock,
#            `Thread.sleep`, `DispatchTime.now()`, `Sys.wallClockSeconds`… A timed wait (a semaphore's or poll's
#            timeout) is not a read; `Sys.sleep`/`Sys.pause` are RouseSystem's own wrappers;
#   thread   threads start one way, through `Sys.startThread`/`Sys.detachedThread`/`Sys.startJoinableThread`
#            (plain named pthreads): no Foundation `Thread`, no `pthread_create` elsewhere (allowed as for libc);
#   public   `public` only in the targets of library products and the targets they expose (everything else says
#            `package` or nothing);
#   import   a target imports only modules it declares (its targets and products in Package.swift) and the
#            toolchain's own (Glibc, Foundation, Dispatch, Synchronization, Testing, …);
#   foundation  no target linked into a shipped program (rouse, rouse-gateway, rouse-agent, rouse-pushd,
#            rouse-reach, rouse-example-handler) imports Foundation's full module (`Foundation`, which brings its
#            internationalisation and ICU's data, ~40 MB of the binary), only `FoundationEssentials`; RouseText
#            has what the full module gave them (trimming, percent-encoding, fixed decimals, JSONValue); and the
#            targets of the example handler and of the agent client library (what a handler links) import no
#            Foundation module at all, not even `FoundationEssentials` (RouseText's JSONCoding and Base64 instead).
# Each finding is printed as file:line: rule: what; the exit status is 1 when there is any.
# Calls are found by name: a bare name (`close(`, `pthread_create(`), or `Glibc.name(`. A bare call with no argument
# or a labelled first one (`close()`, `read(into:`) is Swift's, as is one of a name the module itself declares with an
# unlabelled first parameter (`func close(_`) or as an enum case; so is an `errno` the module declares.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/opt/swift/usr/bin:$PATH"
# --ignore-lock: describing reads the manifest only, it may run beside a build.
json=$(swift package --ignore-lock describe --type json 2>/dev/null)
python3 - "$json" <<'PY'
import glob, json, os, re, sys

d = json.loads(sys.argv[1])
targets = {t["name"]: t for t in d["targets"]}

LIBC_ALLOWED = {"RouseSystem", "rouse-bench", "rouse-example-handler"}
CLOCK_ALLOWED = {"RouseClock", "rouse-bench", "rouse-example-handler"}
TOOLCHAIN_MODULES = {
    "Glibc", "Foundation", "FoundationEssentials", "FoundationNetworking", "Dispatch", "Synchronization",
    "Testing", "_Concurrency", "Observation", "RegexBuilder",
}

LIBC = """
open openat close read write pread pwrite readv writev lseek socket socketpair bind listen accept accept4 connect
shutdown send sendto sendmsg recv recvfrom recvmsg setsockopt getsockopt getsockname getpeername pipe pipe2 dup dup2
dup3 fcntl ioctl unlink unlinkat rename renameat mkdir mkdirat rmdir chmod fchmod chown fchown stat fstat lstat
fstatat access ftruncate fsync fdatasync poll ppoll select eventfd eventfd_read eventfd_write signalfd timerfd_create
timerfd_settime signal sigaction sigprocmask sigemptyset sigaddset sigfillset sigwait kill killpg raise getpid
getppid gettid getuid geteuid getgid getegid setuid setgid setgroups setsid setpgid fork vfork execve execv execvp
waitpid waitid wait4 mmap munmap mprotect mlock madvise prctl setrlimit getrlimit malloc calloc realloc free
posix_memalign strerror getenv setenv unsetenv getaddrinfo freeaddrinfo inet_pton inet_ntop if_nametoindex
if_indextoname sendfile splice copy_file_range realpath readlink opendir readdir closedir chdir umask isatty _exit
exit abort syscall getpwnam getpwnam_r getpwuid getpwuid_r getgrnam getgrnam_r getgrouplist setns unshare sched_yield
usleep nanosleep sleep clock_nanosleep
""".split()
libc_call = re.compile(
    r"(?<![\w.])(" + "|".join(map(re.escape, LIBC)) + r"|pthread_\w+|epoll_\w+|posix_spawn\w*)\s*\("
    r"|\bGlibc\.(\w+)\s*\(|(?<![\w.])errno\b(?!\s*:)"
)
clock_read = re.compile(
    r"\bDate\(\)|\bDate\.now\b|\bContinuousClock\b|\bSuspendingClock\b|\bThread\.sleep\b|\bDispatchTime\.now\b"
    r"|\bDispatchWallTime\b|\bgettimeofday\s*\(|(?<![\w.])time\(nil\)|\bwallClockSeconds\b"
    r"|\bclock_gettime\s*\(\s*CLOCK_(?:REALTIME|MONOTONIC|BOOTTIME|TAI)"
)
public_decl = re.compile(r"^\s*(?:@[\w.]+(?:\([^)]*\))?\s+)*public\b")
import_line = re.compile(
    r"^\s*(?:@[\w.]+(?:\([^)]*\))?\s+)*(?:public |package |internal |private |fileprivate )?import\s+"
    r"(?:(?:struct|class|enum|protocol|typealias|func|var|let)\s+)?(\w+)"
)
own_unlabelled = re.compile(r"\bfunc\s+(\w+)\s*(?:<[^>]*>)?\(\s*_\s")
own_case = re.compile(r"\bcase\s+(\w+)\s*\(")
own_errno = re.compile(r"\b(?:let|var)\s+errno\b|\berrno\s*:\s*(?:Int32|CInt)")
thread_start = re.compile(r"\bThread\s*\{|\bThread\s*\(|\bThread\.detachNewThread\b|\bpthread_create\b")


def interpolations(line):
    """The code inside the line's string interpolations (`\\( … )`, parentheses balanced)."""
    found, start = [], line.find("\\(")
    while start >= 0:
        depth, i = 1, start + 2
        while i < len(line) and depth:
            depth += {"(": 1, ")": -1}.get(line[i], 0)
            i += 1
        found.append(line[start + 2 : i - 1])
        start = line.find("\\(", i)
    return found


def code(line):
    """The line without string literals and comments (roughly: enough for names), its interpolations kept."""
    kept = " ".join(interpolations(line))
    line = re.sub(r'"(?:\\.|[^"\\])*"', '""', line)
    return line.split("//", 1)[0] + " " + kept


def linked(products):
    """The targets of `products` and, transitively, the targets they depend on."""
    found, stack = set(), [n for p in products for n in p["targets"]]
    while stack:
        name = stack.pop()
        if name in found or name not in targets:
            continue
        found.add(name)
        stack.extend(targets[name].get("target_dependencies", []))
    return found


# The targets whose `public` reaches users: the library products' targets and, transitively, their targets.
exposed = linked(p for p in d["products"] if "library" in p["type"])

# The targets linked into the programs the packages ship.
SHIPPED_PROGRAMS = {"rouse", "rouse-gateway", "rouse-agent", "rouse-pushd", "rouse-reach", "rouse-example-handler"}
FULL_FOUNDATION = {"Foundation", "FoundationNetworking", "FoundationXML", "FoundationInternationalization"}
shipped = linked(p for p in d["products"] if p["name"] in SHIPPED_PROGRAMS)
# What a handler links: no Foundation module at all.
ANY_FOUNDATION = FULL_FOUNDATION | {"FoundationEssentials"}
handler_side = linked(p for p in d["products"] if p["name"] in {"rouse-example-handler", "RouseAgentClient"})

problems = []
for name, t in sorted(targets.items()):
    if t["type"] == "system-target":
        continue
    files = sorted(glob.glob(os.path.join(t["path"], "**", "*.swift"), recursive=True))
    if not files:
        continue
    declared = set(t.get("target_dependencies", [])) | set(t.get("product_dependencies", [])) | {name}
    sources = {f: open(f).read().split("\n") for f in files}
    text = "\n".join(code(line) for lines in sources.values() for line in lines)
    own_names = set(own_unlabelled.findall(text)) | set(own_case.findall(text))
    declares_errno = bool(own_errno.search(text))
    is_source = t["type"] != "test" and not t["path"].startswith("Tests")
    for f, lines in sources.items():
        rel = os.path.relpath(f)
        comment = False
        literal = False
        for number, raw in enumerate(lines, 1):
            stripped = raw.strip()
            if stripped.startswith("/*"):
                comment = True
            if comment:
                comment = "*/" not in stripped
                continue
            if raw.count('"""') % 2 == 1:  # a multi-line string literal opens or closes (its text is no code)
                literal = not literal
                continue
            if literal:
                continue
            line = code(raw)
            m = import_line.match(line)
            if m and m.group(1) not in declared and m.group(1) not in TOOLCHAIN_MODULES:
                problems.append(f"{rel}:{number}: import: {m.group(1)} is not a dependency of {name} in Package.swift")
            if m and m.group(1) in ANY_FOUNDATION and name in handler_side:
                problems.append(
                    f"{rel}:{number}: foundation: {name} is linked into the example handler or the agent client"
                    f" library, which link no Foundation; use RouseText (JSONCoding, Base64), not {m.group(1)}"
                )
            elif m and m.group(1) in FULL_FOUNDATION and name in shipped:
                problems.append(
                    f"{rel}:{number}: foundation: {name} is linked into a shipped program; import FoundationEssentials"
                    f" (and RouseText), not {m.group(1)}"
                )
            if not is_source:
                continue
            if public_decl.match(line) and name not in exposed:
                problems.append(f"{rel}:{number}: public: {name} is in no library product; say `package`")
            if name not in LIBC_ALLOWED:
                for m in libc_call.finditer(line):
                    called = m.group(1) or m.group(2) or "errno"
                    if called.startswith("clock_gettime"):
                        continue  # the clock rule's
                    if m.group(1):
                        after = line[m.end():].lstrip()
                        swift_style = after.startswith(")") or re.match(r"\w+\s*:(?!:)", after)
                        before = line[: m.start()].rstrip()
                        if swift_style or called in own_names or before.endswith("case") or before.endswith("func"):
                            continue
                    if called == "errno" and declares_errno:
                        continue
                    problems.append(f"{rel}:{number}: libc: {called} outside RouseSystem (use Sys)")
                for m in thread_start.finditer(line):
                    problems.append(f"{rel}:{number}: thread: {m.group(0).strip()} (start threads with Sys.startThread)")
            if name not in CLOCK_ALLOWED:
                for m in clock_read.finditer(line):
                    problems.append(f"{rel}:{number}: clock: {m.group(0).strip()} outside RouseClock")
for p in problems:
    print(p)
if problems:
    print(f"check-rules: {len(problems)} finding(s); the rules are in deploy/check-rules.sh", file=sys.stderr)
sys.exit(1 if problems else 0)
PY
