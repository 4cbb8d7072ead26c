#!/usr/bin/env python3
"""Where a running process's resident memory is (issue 31; docs/benchmarks.md, "Idle RSS: where it is").

    deploy/rss-breakdown.py PID [LABEL]
    deploy/rss-breakdown.py --page-out PID...

Reads /proc/PID/smaps (and, for the executable's own mappings, /proc/PID/pagemap with the ELF section headers
of /proc/PID/exe) and prints the resident KiB by kind: the executable by section (.text, .rodata, .eh_frame,
Swift metadata, .data, .bss…), each shared library, the brk heap, glibc malloc arenas, thread stacks, the main
stack, other anonymous memory. Needs root (pagemap's present bits are readable by any user, smaps by the owner).
With --page-out it instead asks the kernel to page out every file-backed mapping of each PID
(process_madvise(MADV_PAGEOUT), Linux >= 5.10: a lever's measurement) and prints VmRSS before and after.
"""
import ctypes
import collections
import os
import struct
import sys


def sections(path):
    """The ELF64 section headers of `path`: (name, file offset, size, flags) of each SHF_ALLOC section."""
    with open(path, "rb") as f:
        data = f.read(64)
        if data[:4] != b"\x7fELF" or data[4] != 2:
            return []
        shoff, = struct.unpack_from("<Q", data, 0x28)
        shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
        f.seek(shoff)
        raw = f.read(shentsize * shnum)
        headers = [struct.unpack_from("<IIQQQQIIQQ", raw, i * shentsize) for i in range(shnum)]
        names_header = headers[shstrndx]
        f.seek(names_header[4])
        names = f.read(names_header[5])
    result = []
    for name_at, kind, flags, address, offset, size, *_ in headers:
        if not flags & 0x2 or size == 0:  # SHF_ALLOC only
            continue
        name = names[name_at:names.index(b"\0", name_at)].decode()
        result.append((name, address, size, kind))
    return result


def mappings(pid):
    """Each mapping of smaps: (start, end, perms, offset, path, fields)."""
    result = []
    current = None
    with open(f"/proc/{pid}/smaps") as f:
        for line in f:
            head = line.split()
            if "-" in head[0] and len(head) >= 5 and not head[0].endswith(":"):
                start, end = (int(x, 16) for x in head[0].split("-"))
                current = (start, end, head[1], int(head[2], 16), " ".join(head[5:]), {})
                result.append(current)
            elif current is not None and head[0].endswith(":") and len(head) >= 2 and head[1].isdigit():
                current[5][head[0][:-1]] = int(head[1])
    return result


def resident_pages(pid, start, end):
    """The virtual addresses of the resident pages in [start, end), from pagemap's present bit."""
    page = os.sysconf("SC_PAGE_SIZE")
    with open(f"/proc/{pid}/pagemap", "rb") as f:
        f.seek(start // page * 8)
        raw = f.read((end - start) // page * 8)
    return [start + i * page for i in range(len(raw) // 8) if struct.unpack_from("<Q", raw, i * 8)[0] >> 63]


def vm_rss(pid):
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))


def page_out(pid):
    """process_madvise(MADV_PAGEOUT) on each file-backed mapping of `pid` (pages other processes map stay)."""
    libc = ctypes.CDLL(None, use_errno=True)
    sys_pidfd_open, sys_process_madvise, madv_pageout = 434, 440, 21

    class IOVec(ctypes.Structure):
        _fields_ = [("base", ctypes.c_void_p), ("length", ctypes.c_size_t)]

    before = vm_rss(pid)
    pidfd = libc.syscall(sys_pidfd_open, pid, 0)
    if pidfd < 0:
        sys.exit(f"rss-breakdown: pidfd_open({pid}): {os.strerror(ctypes.get_errno())}")
    for start, end, _, _, path, _ in mappings(pid):
        if path.startswith("/"):
            vector = IOVec(start, end - start)
            if libc.syscall(sys_process_madvise, pidfd, ctypes.byref(vector), 1, madv_pageout, 0) < 0:
                print(f"rss-breakdown: process_madvise {path}: {os.strerror(ctypes.get_errno())}", file=sys.stderr)
    os.close(pidfd)
    print(f"pid {pid}: VmRSS {before} -> {vm_rss(pid)} KiB after MADV_PAGEOUT of its file mappings")


def main():
    if sys.argv[1] == "--page-out":
        for pid in sys.argv[2:]:
            page_out(int(pid))
        return
    pid = int(sys.argv[1])
    label = sys.argv[2] if len(sys.argv) > 2 else str(pid)
    exe = os.readlink(f"/proc/{pid}/exe")
    maps = mappings(pid)
    totals = collections.Counter()
    dirty = collections.Counter()
    exe_maps = [m for m in maps if m[4] == exe]
    load_base = min(m[0] - m[3] for m in exe_maps) if exe_maps else 0
    exe_end = max(m[1] for m in exe_maps) if exe_maps else 0
    elf = sections(f"/proc/{pid}/exe") if exe_maps else []
    page = os.sysconf("SC_PAGE_SIZE")
    threads = len(os.listdir(f"/proc/{pid}/task"))
    for index, (start, end, perms, offset, path, fields) in enumerate(maps):
        rss = fields.get("Rss", 0)
        private_dirty = fields.get("Private_Dirty", 0)
        previous = maps[index - 1] if index > 0 else None
        following = maps[index + 1] if index + 1 < len(maps) else None
        if path == exe or (not path and start == exe_end and "w" in perms):
            # The executable (and its .bss, the anonymous mapping right after it): split by ELF section.
            for address in resident_pages(pid, start, end):
                virtual = address - load_base
                name = next((n for n, a, s, _ in elf if a <= virtual < a + s), None)
                if name is None:  # a page shared by two sections, or padding: the section it ends in
                    name = next((n for n, a, s, _ in elf if virtual <= a < virtual + page), "(between sections)")
                if name.startswith("swift5_") or name.startswith(".swift"):
                    name = "Swift metadata (swift5_*)"
                key = "exe " + name
                totals[key] += page // 1024
            continue
        if path == "[heap]":
            key = "brk heap (main arena)"
        elif path == "[stack]":
            key = "main thread stack"
        elif path.startswith("/"):
            key = "lib " + os.path.basename(path).split(".so")[0]
        elif path:
            key = path
        elif previous and not previous[4] and previous[2] == "---p" and previous[1] == start \
                and previous[1] - previous[0] <= 64 * 1024:
            key = "thread stacks"
        elif following and not following[4] and following[2] == "---p" and following[0] == end \
                and (end - start) + (following[1] - following[0]) in (64 << 20, 128 << 20):
            key = "malloc arenas (threads')"
        else:
            key = "other anonymous"
        totals[key] += rss
        dirty[key] += private_dirty
    with open(f"/proc/{pid}/smaps_rollup") as f:
        rollup = {line.split()[0][:-1]: int(line.split()[1]) for line in f if line.split()[1].isdigit()}
    print(f"{label} (pid {pid}, {threads} threads): Rss {rollup.get('Rss', 0)} KiB, Pss {rollup.get('Pss', 0)} KiB,"
          f" Anonymous {rollup.get('Anonymous', 0)} KiB, Private_Dirty {rollup.get('Private_Dirty', 0)} KiB")
    for key, kib in sorted(totals.items(), key=lambda item: -item[1]):
        if kib >= 64:
            print(f"  {kib:7d} KiB  {key}" + (f" ({dirty[key]} KiB private dirty)" if dirty[key] else ""))
    rest = sum(kib for kib in totals.values() if kib < 64)
    print(f"  {rest:7d} KiB  the rest (each under 64 KiB)")


main()
