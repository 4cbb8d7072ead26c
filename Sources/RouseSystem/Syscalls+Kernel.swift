import CRouseSys
import Glibc

// What the netlink binding and the reachability monitor ask of the kernel besides sockets: a netlink socket's
// address, `poll`, network namespaces, threads, clocks, name resolution. Errno policy as in `Syscalls.swift`.

extension Sys {
    /// Binds a netlink socket to the multicast `groups` (an `RTMGRP_*` bitmask; 0 for requests only).
    package static func bindNetlink(_ fd: Int32, groups: UInt32) throws(SystemError) {
        var address = sockaddr_nl()
        address.nl_family = sa_family_t(AF_NETLINK)
        address.nl_groups = groups
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.bind(fd, $0, socklen_t(MemoryLayout<sockaddr_nl>.size))
            }
        }
        _ = try check("bind", result)
    }

    /// Sends one netlink datagram to the kernel (`sendto(2)`, address pid 0).
    package static func sendToKernel(_ fd: Int32, _ bytes: [UInt8]) throws(SystemError) {
        var kernel = sockaddr_nl()
        kernel.nl_family = sa_family_t(AF_NETLINK)
        let sent = retrying {
            bytes.withUnsafeBytes { raw in
                withUnsafePointer(to: &kernel) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        sendto(fd, raw.baseAddress, raw.count, 0, $0, socklen_t(MemoryLayout<sockaddr_nl>.size))
                    }
                }
            }
        }
        _ = try check("sendto", sent)
    }

    /// `poll(2)` for readability: per descriptor, whether it is readable (or hung up). `timeoutMilliseconds` -1
    /// waits forever. Interrupted by a signal (EINTR): all false, so the caller re-checks its deadline.
    package static func poll(_ descriptors: [Int32], timeoutMilliseconds: Int32) throws(SystemError) -> [Bool] {
        var fds = descriptors.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
        let result = Glibc.poll(&fds, nfds_t(fds.count), timeoutMilliseconds)
        if result < 0 {
            if Glibc.errno == EINTR { return descriptors.map { _ in false } }
            throw SystemError(call: "poll", code: .current)
        }
        return fds.map { $0.revents != 0 }
    }

    /// Moves the calling thread into the network namespace at `path` (e.g. `/run/netns/NAME`). Sockets opened
    /// afterwards on this thread belong to that namespace.
    package static func enterNetworkNamespace(path: String) throws(SystemError) {
        let fd = try open(path, O_RDONLY)
        defer { close(fd) }
        _ = try check("setns", rouse_setns_net(fd), path: path)
    }

    /// Starts a detached thread running `body`, named `name` (at most 15 bytes are kept). A plain `pthread`: no
    /// Foundation, and nothing of libdispatch's worker pool (whose monitor timer, once started, wakes the process
    /// every second).
    package static func startThread(name: String, _ body: @escaping @Sendable () -> Void) throws(SystemError) {
        pthread_detach(try createThread(name: name, stackSize: nil, body))
    }

    /// ``startThread(name:_:)`` for a caller with no way to report a thread that cannot start (no thread left, `EAGAIN`):
    /// the process ends with the reason, as Foundation's `Thread.start()` ends it. The package's threads all start
    /// through these functions (deploy/check-rules.sh): plain, named `pthread`s.
    package static func detachedThread(name: String, _ body: @escaping @Sendable () -> Void) {
        do {
            try startThread(name: name, body)
        } catch {
            preconditionFailure("\(name): cannot start a thread: \(error)")
        }
    }

    /// Starts a joinable thread running `body` with a stack of `stackSize` bytes, named `name` (at most 15 bytes are
    /// kept): an event loop's thread, which ``joinThread(_:)`` waits for when the loop stops.
    package static func startJoinableThread(
        name: String, stackSize: Int, _ body: @escaping @Sendable () -> Void
    ) throws(SystemError) -> pthread_t {
        try createThread(name: name, stackSize: stackSize, body)
    }

    private static func createThread(
        name: String, stackSize: Int?, _ body: @escaping @Sendable () -> Void
    ) throws(SystemError) -> pthread_t {
        final class Start: @unchecked Sendable {  // handed to exactly one thread, read once there
            let name: String
            let body: @Sendable () -> Void
            init(name: String, body: @escaping @Sendable () -> Void) {
                self.name = name
                self.body = body
            }
        }
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        defer { pthread_attr_destroy(&attributes) }
        if let stackSize { pthread_attr_setstacksize(&attributes, stackSize) }
        let start = Unmanaged.passRetained(Start(name: name, body: body))
        var thread = pthread_t()
        let result = pthread_create(
            &thread, &attributes,
            { argument in
                guard let argument else { return nil }
                let start = Unmanaged<Start>.fromOpaque(argument).takeRetainedValue()
                _ = rouse_set_thread_name(start.name)
                start.body()
                return nil
            }, start.toOpaque())
        guard result == 0 else {
            start.release()
            throw SystemError(call: "pthread_create", errno: result)
        }
        return thread
    }

    /// Waits for a thread started by ``startJoinableThread(name:stackSize:_:)`` to end (once per thread).
    package static func joinThread(_ thread: pthread_t) {
        pthread_join(thread, nil)
    }

    /// Detaches a thread started by ``startJoinableThread(name:stackSize:_:)`` that nobody will join (once per thread):
    /// its resources go when it ends.
    package static func detachThread(_ thread: pthread_t) {
        pthread_detach(thread)
    }

    /// Sleeps the calling thread (`nanosleep`, resumed after signals).
    package static func sleep(seconds: Double) {
        guard seconds > 0 else { return }
        var request = timespec(tv_sec: Int(seconds), tv_nsec: Int((seconds - seconds.rounded(.down)) * 1e9))
        var remaining = timespec()
        while nanosleep(&request, &remaining) != 0 && Glibc.errno == EINTR { request = remaining }
    }

    /// CPU time (user + system) of the whole process, in nanoseconds.
    package static func processCPUTimeNanoseconds() -> UInt64 { cpuTime(CLOCK_PROCESS_CPUTIME_ID) }

    /// CPU time of the calling thread, in nanoseconds.
    package static func threadCPUTimeNanoseconds() -> UInt64 { cpuTime(CLOCK_THREAD_CPUTIME_ID) }

    private static func cpuTime(_ clock: clockid_t) -> UInt64 {
        var spec = timespec()
        guard clock_gettime(clock, &spec) == 0 else { return 0 }
        return UInt64(spec.tv_sec) * 1_000_000_000 + UInt64(spec.tv_nsec)
    }

    /// Clock ticks per second (`sysconf(_SC_CLK_TCK)`, `USER_HZ`).
    package static let clockTicksPerSecond: Double = {
        let ticks = sysconf(Int32(_SC_CLK_TCK))
        return ticks > 0 ? Double(ticks) : 100
    }()

    /// `getaddrinfo(3)` for a host name: the raw IPv4 (4 bytes) and IPv6 (16 bytes) addresses in the resolver's
    /// order of preference. Blocks. A failure is thrown with the `EAI_*` code in place of an errno.
    package static func resolve(host: String) throws(SystemError) -> [[UInt8]] {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let code = getaddrinfo(host, nil, &hints, &list)
        guard code == 0 else { throw SystemError(call: "getaddrinfo", errno: code, path: host) }
        defer { freeaddrinfo(list) }
        var result: [[UInt8]] = []
        var cursor = list
        while let entry = cursor {
            if let address = entry.pointee.ai_addr {
                if entry.pointee.ai_family == AF_INET {
                    result.append(
                        address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { pointer in
                            withUnsafeBytes(of: pointer.pointee.sin_addr) { Array($0) }
                        })
                } else if entry.pointee.ai_family == AF_INET6 {
                    result.append(
                        address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { pointer in
                            withUnsafeBytes(of: pointer.pointee.sin6_addr) { Array($0) }
                        })
                }
            }
            cursor = entry.pointee.ai_next
        }
        return result
    }

    /// `getaddrinfo(3)` for a stream connection to `host`:`port`: the first address, as the resolver ordered them.
    /// Blocks. A failure is thrown with the `EAI_*` code in place of an errno (`gai_strerror` in `reason`).
    package static func resolveFirst(host: String, port: UInt16) -> Result<SocketAddress, ResolveError> {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var result: UnsafeMutablePointer<addrinfo>?
        let rv = getaddrinfo(host, String(port), &hints, &result)
        defer { if let result { freeaddrinfo(result) } }
        guard rv == 0, let first = result, let sa = first.pointee.ai_addr else {
            return .failure(ResolveError(reason: String(cString: gai_strerror(rv))))
        }
        var storage = sockaddr_storage()
        withUnsafeMutableBytes(of: &storage) { raw in
            raw.copyMemory(from: UnsafeRawBufferPointer(start: sa, count: Int(first.pointee.ai_addrlen)))
        }
        return .success(SocketAddress(storage: storage, length: first.pointee.ai_addrlen))
    }

    /// Why a name did not resolve (`gai_strerror`).
    package struct ResolveError: Error, Sendable {
        /// The resolver's words.
        package let reason: String
    }

    /// The 4 or 16 bytes of a numeric IPv4 or IPv6 address (`inet_pton(3)`), or `nil` when `text` is neither.
    package static func parseAddress(_ text: String) -> [UInt8]? {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 { return withUnsafeBytes(of: &v4) { Array($0) } }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 { return withUnsafeBytes(of: &v6) { Array($0) } }
        return nil
    }

    /// The text of a 4- or 16-byte address (`inet_ntop(3)`), or `nil` for any other length.
    package static func formatAddress(_ bytes: [UInt8]) -> String? {
        let family: Int32
        switch bytes.count {
        case 4: family = AF_INET
        case 16: family = AF_INET6
        default: return nil
        }
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        let ok = bytes.withUnsafeBytes { raw in
            inet_ntop(family, raw.baseAddress, &buffer, socklen_t(buffer.count)) != nil
        }
        guard ok else { return nil }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
