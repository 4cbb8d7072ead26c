import CRouseSys
import Glibc
import RouseSystem

// The netlink binding's socket and its other kernel calls, through RouseSystem's syscall layer (`Sys`, its one
// errno policy); nothing here calls libc itself. On top of that policy:
// - ENOBUFS on receive: the socket overran and events were lost; a value (`.overrun`) that tells the
//   caller to re-dump everything it mirrors and keep listening.
// - A `SystemError` is thrown as `NetlinkError(.syscall)` with the call and its argument as context.

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
        let fd: Int32
        do {
            fd = try Sys.socket(family: AF_NETLINK, type: Int32(SOCK_RAW.rawValue), protocol: NETLINK_ROUTE)
        } catch {
            throw NetlinkError(.syscall, "socket(AF_NETLINK)", errno: error.errno)
        }
        descriptor = fd
        buffer = [UInt8](repeating: 0, count: 1 << 18)
        do throws(NetlinkError) {
            if let receiveBufferSize { try setReceiveBuffer(bytes: receiveBufferSize) }
            // Strict checking makes the kernel honour dump filters; failure (old kernels) is harmless.
            _ = try? Sys.setOption(fd, SOL_NETLINK, NETLINK_GET_STRICT_CHK, 1)
            do {
                try Sys.bindNetlink(fd, groups: groups)
            } catch {
                throw NetlinkError(.syscall, "bind(groups \(groups))", errno: error.errno)
            }
        } catch {
            Sys.close(fd)
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
        Sys.close(descriptor)
    }

    /// Sets the receive buffer: `SO_RCVBUFFORCE` (needs CAP_NET_ADMIN), else `SO_RCVBUF` (capped by
    /// `net.core.rmem_max`).
    public func setReceiveBuffer(bytes: Int) throws(NetlinkError) {
        let value = Int32(clamping: bytes)
        if (try? Sys.setOption(descriptor, SOL_SOCKET, rouse_so_rcvbufforce(), value)) != nil { return }
        do {
            try Sys.setOption(descriptor, SOL_SOCKET, SO_RCVBUF, value)
        } catch {
            throw NetlinkError(.syscall, "setsockopt(SO_RCVBUF, \(bytes))", errno: error.errno)
        }
    }

    /// The receive buffer the kernel granted (`SO_RCVBUF`, which reports twice the request).
    public var receiveBufferSize: Int {
        Int((try? Sys.option(descriptor, SOL_SOCKET, SO_RCVBUF)) ?? 0)
    }

    /// A fresh sequence number for a request on this socket.
    public func makeSequence() -> UInt32 {
        defer { nextSequence &+= 1 }
        return nextSequence
    }

    /// Sends one request to the kernel.
    public func send(_ request: NetlinkRequest) throws(NetlinkError) {
        do {
            try Sys.sendToKernel(descriptor, request.bytes)
        } catch {
            throw NetlinkError(.syscall, "sendto(netlink)", errno: error.errno)
        }
    }

    /// One non-blocking receive: a datagram's messages, `.wouldBlock`, or `.overrun`.
    public func receive() throws(NetlinkError) -> Receive {
        let received = buffer.withUnsafeMutableBytes { raw in
            Result { () throws(SystemError) in try Sys.recv(descriptor, raw, flags: Int32(MSG_TRUNC)) }
        }
        let result: Sys.IOResult
        switch received {
        case .success(let value): result = value
        case .failure(let error) where error.code == .noBufferSpace: return .overrun
        case .failure(let error): throw NetlinkError(.syscall, "recv(netlink)", errno: error.errno)
        }
        switch result {
        case .wouldBlock: return .wouldBlock
        case .endOfFile: return .messages(try NetlinkMessage.split(buffer[0..<0]))
        case .bytes(let count):
            guard count <= buffer.count else { return .overrun }
            return .messages(try NetlinkMessage.split(buffer[0..<count]))
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

/// The kernel calls the netlink monitor needs whose failure it reports as a `NetlinkError(.syscall)` (RouseSystem's
/// `poll`, eventfd, `setns` and threads, their `SystemError` converted), and two lookups built on RouseSystem
/// (`connectOutcome`, `resolve`). Calls that cannot fail are RouseSystem's, used directly. No libc call here.
public enum NetlinkSystem {
    /// `poll(2)` for readability. Returns, per descriptor, whether it is readable (or hung up).
    /// `timeoutMilliseconds` -1 waits forever. EINTR returns all false.
    public static func poll(_ descriptors: [Int32], timeoutMilliseconds: Int32) throws(NetlinkError) -> [Bool] {
        do {
            return try Sys.poll(descriptors, timeoutMilliseconds: timeoutMilliseconds)
        } catch {
            throw NetlinkError(.syscall, "poll", errno: error.errno)
        }
    }

    /// Opens an `eventfd` (non-blocking, close-on-exec).
    public static func openEventDescriptor() throws(NetlinkError) -> Int32 {
        do { return try Sys.eventFD() } catch { throw NetlinkError(.syscall, "eventfd", errno: error.errno) }
    }

    /// Moves the calling thread into the network namespace at `path` (e.g. `/run/netns/NAME`).
    /// Sockets opened afterwards on this thread belong to that namespace.
    public static func enterNetworkNamespace(path: String) throws(NetlinkError) {
        do {
            try Sys.enterNetworkNamespace(path: path)
        } catch {
            throw NetlinkError(.syscall, "\(error.call)(\(path))", errno: error.errno)
        }
    }

    /// Starts a detached thread running `body`, named `name` (at most 15 bytes are kept); see `Sys.startThread`.
    public static func startThread(name: String, _ body: @escaping @Sendable () -> Void) throws(NetlinkError) {
        do {
            try Sys.startThread(name: name, body)
        } catch {
            throw NetlinkError(.syscall, "pthread_create", errno: error.errno)
        }
    }

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

    /// `getaddrinfo(3)` for a host name: its IPv4 and IPv6 addresses in the resolver's order of
    /// preference, de-duplicated. Blocks: call it off the monitor thread. Failures (`EAI_*`) are
    /// thrown as `.syscall` with the EAI code in `errno`.
    public static func resolve(host: String) throws(NetlinkError) -> [IPAddress] {
        let addresses: [[UInt8]]
        do {
            addresses = try Sys.resolve(host: host)
        } catch {
            throw NetlinkError(.syscall, "getaddrinfo(\(host))", errno: error.errno)
        }
        var result: [IPAddress] = []
        for bytes in addresses {
            if let parsed = IPAddress(bytes: bytes), !result.contains(parsed) { result.append(parsed) }
        }
        return result
    }
}
