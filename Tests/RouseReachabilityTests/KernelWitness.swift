import CRouseSys
import Dispatch
import Foundation
import Glibc
import RouseNetlink
import RouseTestSupport
import Synchronization
import Testing

/// The oracle the scenario tests compare the monitor with: what the kernel itself says in the same
/// namespace, through `ip route get` and through a UDP `connect()` (nothing is sent). The connect runs
/// the kernel's whole algorithm for a new connection; the route's MTU (`IP_MTU`/`IPV6_MTU`) tells which
/// interface it took when the tests give their interfaces different MTUs.
enum KernelWitness {
    /// What `connect()` of an unbound UDP socket decided.
    struct Connect: Equatable, CustomStringConvertible {
        /// 0 on success, else the errno.
        var errno: Int32
        /// The bound source address (nil on failure).
        var source: IPAddress?
        /// The path MTU of the route (nil on failure).
        var mtu: Int32?

        var description: String { errno == 0 ? "src \(source?.description ?? "?") mtu \(mtu ?? 0)" : "errno \(errno)" }
    }

    /// `ip -n NS [-6] route get ADDRESS`: the first line of the answer, or nil when the kernel refused.
    static func routeGet(_ ns: NetworkNamespaceFixture, _ destination: String) -> String? {
        let family = destination.contains(":") ? ["-6"] : []
        let output = try? NetworkNamespaceFixture.run(["-n", ns.name] + family + ["route", "get", destination])
        return output?.split(separator: "\n").first.map(String.init)
    }

    /// `connect()` toward `destination` port 9 from a thread inside the namespace.
    static func connect(in ns: NetworkNamespaceFixture, to destination: String) -> Connect {
        let outcome = Mutex(Connect(errno: -1))
        let done = DispatchSemaphore(value: 0)
        let path = ns.path
        let thread = Thread {
            defer { done.signal() }
            do {
                try NetlinkSystem.enterNetworkNamespace(path: path)
            } catch {
                return
            }
            let result = connectHere(destination)
            outcome.withLock { $0 = result }
        }
        thread.start()
        done.wait()
        return outcome.withLock { $0 }
    }

    private static func connectHere(_ destination: String) -> Connect {
        let v6 = destination.contains(":")
        let fd = socket(v6 ? AF_INET6 : AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        guard fd >= 0 else { return Connect(errno: errno) }
        defer { close(fd) }
        var storage = sockaddr_storage()
        var length: socklen_t
        if v6 {
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_port = UInt16(9).bigEndian
            guard inet_pton(AF_INET6, destination, &address.sin6_addr) == 1 else { return Connect(errno: EINVAL) }
            withUnsafeBytes(of: address) { raw in withUnsafeMutableBytes(of: &storage) { $0.copyMemory(from: raw) } }
            length = socklen_t(MemoryLayout<sockaddr_in6>.size)
        } else {
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = UInt16(9).bigEndian
            guard inet_pton(AF_INET, destination, &address.sin_addr) == 1 else { return Connect(errno: EINVAL) }
            withUnsafeBytes(of: address) { raw in withUnsafeMutableBytes(of: &storage) { $0.copyMemory(from: raw) } }
            length = socklen_t(MemoryLayout<sockaddr_in>.size)
        }
        let connected = withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, length) }
        }
        guard connected == 0 else { return Connect(errno: errno) }
        var local = sockaddr_storage()
        var localLength = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = withUnsafeMutablePointer(to: &local) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &localLength) }
        }
        let source = withUnsafeBytes(of: local) { raw in
            v6 ? IPAddress(bytes: raw[8..<24]) : IPAddress(bytes: raw[4..<8])
        }
        var mtu: Int32 = 0
        var mtuLength = socklen_t(MemoryLayout<Int32>.size)
        let level = v6 ? Int32(IPPROTO_IPV6) : Int32(IPPROTO_IP)
        let name = v6 ? IPV6_MTU : IP_MTU
        guard getsockopt(fd, level, name, &mtu, &mtuLength) == 0 else { return Connect(errno: 0, source: source) }
        return Connect(errno: 0, source: source, mtu: mtu)
    }
}

/// Gives a persistent `tun` device its carrier by attaching to it (`TUNSETIFF` on `/dev/net/tun` from a
/// thread inside the namespace), as a VPN client does. `detach()` closes the queue; call it before the
/// namespace is deleted.
final class TunAttachment: Sendable {
    private let descriptor: Mutex<Int32?>

    init(_ ns: NetworkNamespaceFixture, name: String) throws {
        let opened = Mutex<Result<Int32, FixtureError>>(.failure(FixtureError(description: "tun attach did not run")))
        let done = DispatchSemaphore(value: 0)
        let path = ns.path
        let thread = Thread {
            defer { done.signal() }
            do {
                try NetlinkSystem.enterNetworkNamespace(path: path)
            } catch {
                opened.withLock { $0 = .failure(FixtureError(description: "setns \(path): \(error)")) }
                return
            }
            let fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC)
            guard fd >= 0 else {
                opened.withLock { $0 = .failure(FixtureError(description: "open /dev/net/tun: errno \(errno)")) }
                return
            }
            // struct ifreq: the name (IFNAMSIZ bytes), then ifr_flags (IFF_TUN | IFF_NO_PI).
            var request = [UInt8](repeating: 0, count: 40)
            for (index, byte) in name.utf8.prefix(15).enumerated() { request[index] = byte }
            withUnsafeBytes(of: rouse_iff_tun_no_pi()) {
                request[16] = $0[0]; request[17] = $0[1]
            }
            let result = request.withUnsafeMutableBytes {
                rouse_ioctl_pointer(fd, rouse_tunsetiff(), $0.baseAddress)
            }
            guard result == 0 else {
                let code = errno
                close(fd)
                opened.withLock { $0 = .failure(FixtureError(description: "TUNSETIFF \(name): errno \(code)")) }
                return
            }
            opened.withLock { $0 = .success(fd) }
        }
        thread.start()
        done.wait()
        descriptor = Mutex(try opened.withLock { $0 }.get())
    }

    deinit { detach() }

    /// Closes the queue (once): the device loses its carrier.
    func detach() {
        if let fd = descriptor.withLock({ fd in
            defer { fd = nil }; return fd
        }) {
            close(fd)
        }
    }
}
