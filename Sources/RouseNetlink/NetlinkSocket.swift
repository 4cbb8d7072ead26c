import CRouseSys
import Glibc
import RouseSystem

// The one file of RouseNetlink that calls the kernel. Each wrapper reads errno at once.
//
// errno policy:
// - EINTR: retried in place, never surfaced.
// - EAGAIN/EWOULDBLOCK on a non-blocking read: a value (`.wouldBlock`), not an error.
// - ENOBUFS on receive: the socket overran and events were lost; a value (`.overrun`) that tells the
//   caller to re-dump everything it mirrors and keep listening.
// - EBADF on our own descriptor: a bug in Rouse (`preconditionFailure`), never caused by input.
// - Anything else (EPERM, EINVAL, ENOMEM, ...): thrown as `NetlinkError(.syscall)` with the call's name.

/// A `NETLINK_ROUTE` socket (`SOCK_RAW|SOCK_NONBLOCK|SOCK_CLOEXEC`), optionally bound to multicast
/// groups. One owner; close it explicitly with `close()`.
public final class NetlinkSocket {
    /// The descriptor, for `poll`.
    public let descriptor: Int32
    private var isClosed = false
    private var buffer: [UInt8]
    private var nextSequence: UInt32 = 1

    /// What one non-blocking receive produced.
    public enum Receive: Sendable {
        /// One datagram's messages.
        case messages([NetlinkMessage])
        /// Nothing queued (`EAGAIN`).
        case wouldBlock
        /// `ENOBUFS` (or a datagram larger than the buffer): events were lost; re-dump.
        case overrun
    }

    /// Opens and binds the socket. `groups` is the `RTMGRP_*` bitmask (0 for a request-only
    /// socket); `receiveBufferSize` is tried with `SO_RCVBUFFORCE` first, then `SO_RCVBUF`.
    public init(groups: UInt32, receiveBufferSize: Int? = nil) throws(NetlinkError) {
        let fd = socket(AF_NETLINK, rouse_netlink_socket_type(), NETLINK_ROUTE)
        guard fd >= 0 else { throw NetlinkError(.syscall, "socket(AF_NETLINK)", errno: errno) }
        descriptor = fd
        buffer = [UInt8](repeating: 0, count: 1 << 18)
        do throws(NetlinkError) {
            if let receiveBufferSize { try setReceiveBuffer(bytes: receiveBufferSize) }
            var one: Int32 = 1
            // Strict checking makes the kernel honour dump filters; failure (old kernels) is harmless.
            _ = setsockopt(fd, SOL_NETLINK, NETLINK_GET_STRICT_CHK, &one, socklen_t(MemoryLayout<Int32>.size))
            // Extended acks carry a message; not needed, but ask to keep errors small.
            var address = sockaddr_nl()
            address.nl_family = sa_family_t(AF_NETLINK)
            address.nl_groups = groups
            let result = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(fd, $0, socklen_t(MemoryLayout<sockaddr_nl>.size))
                }
            }
            guard result == 0 else { throw NetlinkError(.syscall, "bind(groups \(groups))", errno: errno) }
        } catch {
            Glibc.close(fd)
            throw error
        }
    }

    deinit {
        assert(isClosed, "NetlinkSocket \(descriptor) was not closed")
    }

    /// Closes the descriptor; idempotent.
    public func close() {
        guard !isClosed else { return }
        isClosed = true
        Glibc.close(descriptor)
    }

    /// Sets the receive buffer: `SO_RCVBUFFORCE` (needs CAP_NET_ADMIN), else `SO_RCVBUF` (capped by
    /// `net.core.rmem_max`).
    public func setReceiveBuffer(bytes: Int) throws(NetlinkError) {
        var value = Int32(clamping: bytes)
        let size = socklen_t(MemoryLayout<Int32>.size)
        if setsockopt(descriptor, SOL_SOCKET, rouse_so_rcvbufforce(), &value, size) == 0 { return }
        guard setsockopt(descriptor, SOL_SOCKET, SO_RCVBUF, &value, size) == 0 else {
            throw NetlinkError(.syscall, "setsockopt(SO_RCVBUF, \(bytes))", errno: errno)
        }
    }

    /// The receive buffer the kernel granted (`SO_RCVBUF`, which reports twice the request).
    public var receiveBufferSize: Int {
        var value: Int32 = 0
        var size = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(descriptor, SOL_SOCKET, SO_RCVBUF, &value, &size) == 0 else { return 0 }
        return Int(value)
    }

    /// A fresh sequence number for a request on this socket.
    public func makeSequence() -> UInt32 {
        defer { nextSequence &+= 1 }
        return nextSequence
    }

    /// Sends one request to the kernel.
    public func send(_ request: NetlinkRequest) throws(NetlinkError) {
        var kernel = sockaddr_nl()
        kernel.nl_family = sa_family_t(AF_NETLINK)
        while true {
            let sent = request.bytes.withUnsafeBytes { raw in
                withUnsafePointer(to: &kernel) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        sendto(descriptor, raw.baseAddress, raw.count, 0, $0, socklen_t(MemoryLayout<sockaddr_nl>.size))
                    }
                }
            }
            if sent >= 0 { return }
            let code = errno
            if code == EINTR { continue }
            if code == EBADF { preconditionFailure("sendto on a closed netlink socket") }
            throw NetlinkError(.syscall, "sendto(netlink)", errno: code)
        }
    }

    /// One non-blocking receive: a datagram's messages, `.wouldBlock`, or `.overrun`.
    public func receive() throws(NetlinkError) -> Receive {
        while true {
            let count = buffer.withUnsafeMutableBytes { raw in
                recv(descriptor, raw.baseAddress, raw.count, Int32(MSG_TRUNC))
            }
            if count >= 0 {
                guard count <= buffer.count else { return .overrun }
                return .messages(try NetlinkMessage.split(buffer[0..<count]))
            }
            let code = errno
            switch code {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK: return .wouldBlock
            case ENOBUFS: return .overrun
            case EBADF: preconditionFailure("recv on a closed netlink socket")
            default: throw NetlinkError(.syscall, "recv(netlink)", errno: code)
            }
        }
    }

    /// Sends a request and collects its reply: every message up to `NLMSG_DONE` for a dump, or the
    /// single answer (or error) otherwise. A kernel error is thrown as `.kernel` with its errno; an
    /// interrupted dump (`NLM_F_DUMP_INTR`) or an overrun as `.overrun` (retry).
    public func exchange(_ request: NetlinkRequest, timeoutMilliseconds: Int32 = 2000) throws(NetlinkError)
        -> [RouteNetlinkEvent]
    {
        try send(request)
        var events: [RouteNetlinkEvent] = []
        var interrupted = false
        var waited: Int32 = 0
        while true {
            switch try receive() {
            case .overrun:
                throw NetlinkError(.overrun, "reply to request \(request.sequence)")
            case .wouldBlock:
                guard waited < timeoutMilliseconds else {
                    throw NetlinkError(.timeout, "no reply to request \(request.sequence)")
                }
                let step: Int32 = 50
                _ = try NetlinkSystem.poll([descriptor], timeoutMilliseconds: step)
                waited += step
            case .messages(let messages):
                for message in messages where message.sequence == request.sequence {
                    if message.flags & RTNL.dumpInterrupted != 0 { interrupted = true }
                    let event = try RouteNetlinkEvent.decode(message)
                    switch event {
                    case .done:
                        if interrupted { throw NetlinkError(.overrun, "dump \(request.sequence) interrupted") }
                        return events
                    case .error(let code, _):
                        if code == 0 { return events }
                        throw NetlinkError(.kernel, "request \(request.sequence)", errno: code)
                    default:
                        events.append(event)
                        if message.flags & RTNL.multi == 0 { return events }
                    }
                }
            }
        }
    }
}

/// The other system calls the netlink monitor needs: `poll`, an `eventfd` for wake-ups, `setns`,
/// small file reads (sysfs) and CPU time. Same errno policy as `NetlinkSocket`.
public enum NetlinkSystem {
    /// `poll(2)` for readability. Returns, per descriptor, whether it is readable (or hung up).
    /// `timeoutMilliseconds` -1 waits forever. EINTR returns all false.
    public static func poll(_ descriptors: [Int32], timeoutMilliseconds: Int32) throws(NetlinkError) -> [Bool] {
        var fds = descriptors.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
        let result = Glibc.poll(&fds, nfds_t(fds.count), timeoutMilliseconds)
        if result < 0 {
            let code = errno
            if code == EINTR { return descriptors.map { _ in false } }
            throw NetlinkError(.syscall, "poll", errno: code)
        }
        return fds.map { $0.revents != 0 }
    }

    /// Opens an `eventfd` (non-blocking, close-on-exec).
    public static func openEventDescriptor() throws(NetlinkError) -> Int32 {
        let fd = rouse_eventfd_open()
        guard fd >= 0 else { throw NetlinkError(.syscall, "eventfd", errno: errno) }
        return fd
    }

    /// Adds 1 to an eventfd, waking its poller.
    public static func signal(eventDescriptor fd: Int32) {
        var one: UInt64 = 1
        while write(fd, &one, 8) < 0 && errno == EINTR {}
    }

    /// Resets an eventfd to 0.
    public static func drain(eventDescriptor fd: Int32) {
        var value: UInt64 = 0
        while read(fd, &value, 8) < 0 && errno == EINTR {}
    }

    /// Closes a descriptor we own.
    public static func close(_ fd: Int32) {
        _ = Glibc.close(fd)
    }

    /// Moves the calling thread into the network namespace at `path` (e.g. `/run/netns/NAME`).
    /// Sockets opened afterwards on this thread belong to that namespace.
    public static func enterNetworkNamespace(path: String) throws(NetlinkError) {
        let fd = open(path, rouse_open_rdonly_cloexec())
        guard fd >= 0 else { throw NetlinkError(.syscall, "open(\(path))", errno: errno) }
        defer { _ = Glibc.close(fd) }
        guard rouse_setns_net(fd) == 0 else { throw NetlinkError(.syscall, "setns(\(path))", errno: errno) }
    }

    /// Reads up to `maxBytes` of a small file (sysfs); nil when it cannot be read.
    public static func readSmallFile(_ path: String, maxBytes: Int = 4096) -> String? {
        let fd = open(path, rouse_open_rdonly_cloexec())
        guard fd >= 0 else { return nil }
        defer { _ = Glibc.close(fd) }
        var bytes = [UInt8](repeating: 0, count: maxBytes)
        var total = 0
        while total < maxBytes {
            let count = bytes.withUnsafeMutableBytes { read(fd, $0.baseAddress.map { $0 + total }, maxBytes - total) }
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { break }
            total += count
        }
        return String(decoding: bytes[0..<total], as: UTF8.self)
    }

    /// True when `path` exists.
    public static func exists(_ path: String) -> Bool {
        access(path, F_OK) == 0
    }

    /// CPU time (user + system) of the whole process, in nanoseconds.
    public static func processCPUTimeNanoseconds() -> UInt64 {
        var spec = timespec()
        guard clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &spec) == 0 else { return 0 }
        return UInt64(spec.tv_sec) * 1_000_000_000 + UInt64(spec.tv_nsec)
    }

    /// Starts a detached thread running `body`, named `name` (at most 15 bytes are kept). A plain
    /// `pthread`: no Foundation, and nothing of libdispatch's worker pool (whose monitor timer, once
    /// started, wakes the process every second).
    public static func startThread(name: String, _ body: @escaping @Sendable () -> Void) throws(NetlinkError) {
        final class Start: @unchecked Sendable {  // handed to exactly one thread, read once there
            let name: String
            let body: @Sendable () -> Void
            init(name: String, body: @escaping @Sendable () -> Void) {
                self.name = name
                self.body = body
            }
        }
        let start = Unmanaged.passRetained(Start(name: name, body: body))
        var thread = pthread_t()
        let result = pthread_create(
            &thread, nil,
            { argument in
                guard let argument else { return nil }
                let start = Unmanaged<Start>.fromOpaque(argument).takeRetainedValue()
                _ = rouse_set_thread_name(start.name)
                start.body()
                return nil
            }, start.toOpaque())
        guard result == 0 else {
            start.release()
            throw NetlinkError(.syscall, "pthread_create", errno: result)
        }
        pthread_detach(thread)
    }

    /// Sleeps the calling thread (`nanosleep`, resumed after signals).
    public static func sleep(seconds: Double) {
        guard seconds > 0 else { return }
        var request = timespec(tv_sec: Int(seconds), tv_nsec: Int((seconds - seconds.rounded(.down)) * 1e9))
        var remaining = timespec()
        while nanosleep(&request, &remaining) != 0 && errno == EINTR { request = remaining }
    }

    /// The wall clock (`CLOCK_REALTIME`), in seconds since 1970 with microsecond resolution.
    public static func wallClockSeconds() -> Double {
        var spec = timespec()
        guard clock_gettime(CLOCK_REALTIME, &spec) == 0 else { return 0 }
        return Double(spec.tv_sec) + Double(spec.tv_nsec / 1000) / 1_000_000
    }

    /// Clock ticks per second (`sysconf(_SC_CLK_TCK)`, `USER_HZ`): the unit of `rta_expires`.
    public static let clockTicksPerSecond: Double = {
        let ticks = sysconf(Int32(_SC_CLK_TCK))
        return ticks > 0 ? Double(ticks) : 100
    }()

    /// What `connect(2)` of an unbound UDP socket toward a destination decided.
    public enum ConnectOutcome: Sendable, Equatable {
        /// The kernel found a route; this is the source address it bound.
        case source(IPAddress)
        /// `connect` failed with this errno (`ENETUNREACH`, `EHOSTUNREACH`, `EACCES`, `EINVAL`, …).
        case failed(errno: Int32)
    }

    /// Connects an unbound UDP socket toward `destination` (port 9; nothing is sent) and reports the
    /// source the kernel chose, or why it refused: the kernel's own route-and-source algorithm for a
    /// new connection (`ip_route_connect`, `ip6_dst_lookup_tail`), which `RTM_GETROUTE` alone does not
    /// run (IPv6 retries a failed lookup with the source it would pick). The socket lives in the calling
    /// thread's network namespace. Errors of `socket` itself are reported as `.failed` too.
    public static func connectOutcome(toward destination: IPAddress) -> ConnectOutcome {
        let family = destination.family == .v4 ? AF_INET : AF_INET6
        guard let address = SocketAddress(ip: destination.description, port: 9) else {
            return .failed(errno: EINVAL)
        }
        let fd: Int32
        do {
            fd = try Sys.socket(family: family, type: Int32(SOCK_DGRAM.rawValue))
        } catch {
            return .failed(errno: error.errno)
        }
        defer { Sys.close(fd) }
        let local: SocketAddress
        do {
            _ = try Sys.connect(fd, address)
            local = try Sys.localAddress(fd)
        } catch {
            return .failed(errno: error.errno)
        }
        let source = withUnsafeBytes(of: local.storage) { raw in
            family == AF_INET ? IPAddress(bytes: raw[4..<8]) : IPAddress(bytes: raw[8..<24])
        }
        guard let source else { return .failed(errno: EAFNOSUPPORT) }
        return .source(source)
    }

    /// CPU time of the calling thread, in nanoseconds.
    public static func threadCPUTimeNanoseconds() -> UInt64 {
        var spec = timespec()
        guard clock_gettime(CLOCK_THREAD_CPUTIME_ID, &spec) == 0 else { return 0 }
        return UInt64(spec.tv_sec) * 1_000_000_000 + UInt64(spec.tv_nsec)
    }

    /// `getaddrinfo(3)` for a host name: its IPv4 and IPv6 addresses in the resolver's order of
    /// preference, de-duplicated. Blocks: call it off the monitor thread. Failures (`EAI_*`) are
    /// thrown as `.syscall` with the EAI code in `errno`.
    public static func resolve(host: String) throws(NetlinkError) -> [IPAddress] {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let code = getaddrinfo(host, nil, &hints, &list)
        guard code == 0 else { throw NetlinkError(.syscall, "getaddrinfo(\(host))", errno: code) }
        defer { freeaddrinfo(list) }
        var result: [IPAddress] = []
        var cursor = list
        while let entry = cursor {
            if let address = entry.pointee.ai_addr {
                var parsed: IPAddress?
                if entry.pointee.ai_family == AF_INET {
                    parsed = address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { pointer in
                        withUnsafeBytes(of: pointer.pointee.sin_addr) { IPAddress(bytes: $0) }
                    }
                } else if entry.pointee.ai_family == AF_INET6 {
                    parsed = address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { pointer in
                        withUnsafeBytes(of: pointer.pointee.sin6_addr) { IPAddress(bytes: $0) }
                    }
                }
                if let parsed, !result.contains(parsed) { result.append(parsed) }
            }
            cursor = entry.pointee.ai_next
        }
        return result
    }
}
