import Foundation
import RouseDaemon
import RouseTestSupport
import Testing

@Suite("systemd notify", .timeLimit(.minutes(1)))
struct SystemdNotifierTests {
    /// systemd stopped reading (or a fake notify socket nobody reads): the daemon's loop thread, which sends the
    /// `WATCHDOG=1`s, must drop datagrams rather than block once the socket's queue is full.
    @Test func aNotifySocketNobodyReadsDropsDatagramsInsteadOfBlocking() async throws {
        let directory = NSTemporaryDirectory() + "rouse-notify-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/notify"
        let receiver = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        defer { close(receiver) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in path.utf8.enumerated() { raw[index] = byte }
        }
        let bound = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(receiver, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        try #require(bound == 0, "bind \(path): errno \(errno)")
        // Far more than the queue holds (net.unix.max_dgram_qlen, 10 by default, or the receive buffer): a
        // blocking send would stop in sendto at the first datagram that does not fit, and this test with it.
        let outcomes = (0..<5000).map { _ in SystemdNotifier.notify("WATCHDOG=1", socket: path) }
        #expect(outcomes.first == true)
        #expect(outcomes.contains(false))
    }
}
