import RouseAgentCore
import RouseSystem

/// Reads from `/proc` what a handler's processes hold when it is about to be frozen: its listening sockets (each
/// process's `/proc/PID/fd` socket inodes matched against `/proc/PID/net/{tcp,tcp6,udp,udp6,unix}` of its network
/// namespace) and the locks it holds on its declared exclusive files (`/proc/locks`). The thin shell around
/// ``FreezeDecision``; the parsers are pure and tested on text, the whole against real processes
/// (`HeldResourceProbeTests`). Everything read is bounded: a handler cannot make the agent walk without end.
package enum HeldResourceProbe {
    /// Most processes of one handler looked at.
    static let maxProcesses = 1024
    /// Most descriptors of one process looked at.
    static let maxDescriptors = 65536
    /// Most bytes read of one `/proc` table.
    static let maxTableBytes = 8 << 20

    /// What the processes `pids` hold: listening sockets, and locks on `exclusiveFiles`.
    package static func read(pids: [Int32], exclusiveFiles: [String]) -> HeldResources {
        let pids = Array(pids.prefix(maxProcesses))
        return HeldResources(
            listeningSockets: listeningSockets(pids: pids),
            lockedExclusiveFiles: lockedFiles(pids: pids, files: exclusiveFiles))
    }

    /// The handler's processes: its cgroup's `cgroup.procs` (v2 and the v1 freezer have one), else the members of
    /// its process group (the `SIGSTOP` mechanism).
    package static func pids(cgroup: String?, processGroup: Int32) -> [Int32] {
        if let cgroup, let text = Sys.readText(cgroup + "/cgroup.procs", maxBytes: maxProcesses * 12) {
            return text.split(separator: "\n").compactMap { Int32($0) }
        }
        let all = ((try? Sys.directoryEntries("/proc")) ?? []).compactMap { Int32($0) }
        return Array(all.filter { Sys.processGroup(pid: $0) == processGroup }.prefix(maxProcesses))
    }

    // MARK: Sockets

    /// The listening sockets among the processes' descriptors, each once.
    static func listeningSockets(pids: [Int32]) -> [ListeningSocket] {
        // Per network namespace (the tables are the reader's namespace's): the inodes of its processes' sockets.
        var byNamespace: [String: (reader: Int32, inodes: Set<UInt64>)] = [:]
        for pid in pids {
            let inodes = socketInodes(pid: pid)
            guard !inodes.isEmpty, let namespace = Sys.readLink("/proc/\(pid)/ns/net") else { continue }
            byNamespace[namespace, default: (pid, [])].inodes.formUnion(inodes)
        }
        var found: Set<ListeningSocket> = []
        for (_, entry) in byNamespace {
            let table = listeningTable(reader: entry.reader)
            for inode in entry.inodes { if let socket = table[inode] { found.insert(socket) } }
        }
        return found.sorted { $0.description < $1.description }
    }

    /// The socket inodes among `pid`'s descriptors (`socket:[N]` links).
    static func socketInodes(pid: Int32) -> Set<UInt64> {
        let directory = "/proc/\(pid)/fd"
        var inodes: Set<UInt64> = []
        for name in ((try? Sys.directoryEntries(directory)) ?? []).prefix(maxDescriptors) {
            guard let target = Sys.readLink(directory + "/" + name), target.hasPrefix("socket:["),
                target.hasSuffix("]"), let inode = UInt64(target.dropFirst(8).dropLast())
            else { continue }
            inodes.insert(inode)
        }
        return inodes
    }

    /// Every listening socket of the network namespace `reader` is in, by inode.
    static func listeningTable(reader: Int32) -> [UInt64: ListeningSocket] {
        var table: [UInt64: ListeningSocket] = [:]
        for proto in ["tcp", "tcp6", "udp", "udp6"] {
            guard let text = Sys.readText("/proc/\(reader)/net/\(proto)", maxBytes: maxTableBytes) else { continue }
            table.merge(parseInet(text, proto: proto)) { first, _ in first }
        }
        if let text = Sys.readText("/proc/\(reader)/net/unix", maxBytes: maxTableBytes) {
            table.merge(parseUnix(text)) { first, _ in first }
        }
        return table
    }

    /// The listening sockets of a `/proc/net/{tcp,tcp6,udp,udp6}` table by inode: TCP in `LISTEN` (`0A`), UDP bound
    /// and unconnected (state `07`, no remote port: it takes datagrams from anyone). Malformed lines are skipped.
    package static func parseInet(_ text: String, proto: String) -> [UInt64: ListeningSocket] {
        let udp = proto.hasPrefix("udp")
        var result: [UInt64: ListeningSocket] = [:]
        for line in text.split(separator: "\n").dropFirst() {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count > 9, let inode = UInt64(fields[9]), inode != 0 else { continue }
            let state = fields[3]
            let listening = udp ? state == "07" && fields[2].hasSuffix(":0000") : state == "0A"
            guard listening, let local = inetAddress(fields[1]) else { continue }
            result[inode] = ListeningSocket(proto: proto, local: local)
        }
        return result
    }

    /// `0100007F:1F90` → `127.0.0.1:8080`; IPv6 (32 hex digits, four host-order words) → `[0:0:…:1]:8080`.
    static func inetAddress(_ field: Substring) -> String? {
        let parts = field.split(separator: ":")
        guard parts.count == 2, let port = UInt16(parts[1], radix: 16) else { return nil }
        let hex = Array(parts[0].utf8)
        guard hex.count == 8 || hex.count == 32 else { return nil }
        var bytes: [UInt8] = []
        for word in stride(from: 0, to: hex.count, by: 8) {
            guard let value = UInt32(String(decoding: hex[word..<word + 8], as: UTF8.self), radix: 16) else {
                return nil
            }
            // Printed as host-order (little-endian) words: the address's bytes are the word's, low byte first.
            for shift in stride(from: 0, to: 32, by: 8) { bytes.append(UInt8(truncatingIfNeeded: value >> shift)) }
        }
        if bytes.count == 4 { return bytes.map(String.init).joined(separator: ".") + ":\(port)" }
        let groups = stride(from: 0, to: 16, by: 2).map {
            String(UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]), radix: 16)
        }
        return "[" + groups.joined(separator: ":") + "]:\(port)"
    }

    /// The accepting (listening) sockets of `/proc/net/unix` by inode (flag `__SO_ACCEPTCON`, 0x10000); the path
    /// (`@name` abstract, empty unnamed). Malformed lines are skipped.
    package static func parseUnix(_ text: String) -> [UInt64: ListeningSocket] {
        var result: [UInt64: ListeningSocket] = [:]
        for line in text.split(separator: "\n").dropFirst() {
            let fields = line.split(separator: " ", maxSplits: 7, omittingEmptySubsequences: true)
            guard fields.count >= 7, let flags = UInt32(fields[3], radix: 16), flags & 0x10000 != 0,
                let inode = UInt64(fields[6]), inode != 0
            else { continue }
            let path = fields.count > 7 ? String(fields[7]) : ""
            result[inode] = ListeningSocket(proto: "unix", local: path)
        }
        return result
    }

    // MARK: Locks

    /// One granted lock of `/proc/locks`.
    package struct Lock: Sendable, Equatable {
        /// `POSIX`, `FLOCK`, `OFDLCK`, `LEASE`…
        package var kind: String
        /// The owner's pid (-1 for an open file description lock, which no process owns).
        package var pid: Int32
        /// The locked file.
        package var file: Sys.FileIdentity
    }

    /// The granted locks of `/proc/locks` (waiters, `->` lines, are not holders). Malformed lines are skipped.
    package static func parseLocks(_ text: String) -> [Lock] {
        text.split(separator: "\n").compactMap { line in
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count >= 6, fields[1] != "->", let pid = Int32(fields[4]) else { return nil }
            let device = fields[5].split(separator: ":")
            guard device.count == 3, let major = UInt32(device[0], radix: 16), let minor = UInt32(device[1], radix: 16),
                let inode = UInt64(device[2])
            else { return nil }
            return Lock(
                kind: String(fields[1]), pid: pid, file: Sys.FileIdentity(major: major, minor: minor, inode: inode))
        }
    }

    /// The `files` the processes hold a lock on: a lock on the file whose owner is one of `pids`, or an open file
    /// description lock (no owner) on a file one of them has open. A lock another process holds on a file the
    /// handler merely has open is not the handler's.
    static func lockedFiles(pids: [Int32], files: [String]) -> [String] {
        var wanted: [Sys.FileIdentity: [String]] = [:]
        for file in files { if let identity = Sys.fileIdentity(file) { wanted[identity, default: []].append(file) } }
        guard !wanted.isEmpty, let text = Sys.readText("/proc/locks", maxBytes: maxTableBytes) else { return [] }
        let locks = parseLocks(text).filter { wanted[$0.file] != nil }
        guard !locks.isEmpty else { return [] }
        let members = Set(pids)
        var held: Set<Sys.FileIdentity> = Set(locks.filter { members.contains($0.pid) }.map(\.file))
        let unowned = Set(locks.filter { $0.pid < 0 }.map(\.file)).subtracting(held)
        if !unowned.isEmpty {
            for pid in pids {
                let directory = "/proc/\(pid)/fd"
                for name in ((try? Sys.directoryEntries(directory)) ?? []).prefix(maxDescriptors) {
                    if let identity = Sys.fileIdentity(directory + "/" + name), unowned.contains(identity) {
                        held.insert(identity)
                    }
                }
            }
        }
        return held.flatMap { wanted[$0] ?? [] }.sorted()
    }
}
