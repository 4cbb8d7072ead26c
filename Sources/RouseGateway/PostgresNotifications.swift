import Foundation
import Logging
import Synchronization

/// The wake-ups between gateway nodes that share a PostgreSQL store: a node that stores a push for a device whose
/// channel it does not hold sends `NOTIFY rouse_gateway_pending, '<device ids>'` inside the transaction, so
/// PostgreSQL delivers it when (and only if) the transaction commits; every node `LISTEN`s on a connection of its
/// own, on a thread that waits on the connection's socket, and the node that holds a named device's channel loads
/// the new pushes from the store, in order.
///
/// One channel for every node (a broadcast): no ownership table to keep right, and a device id costs each node a
/// dictionary lookup. When the listening connection breaks, the thread reconnects (every 250 ms at most) and wakes
/// every local channel once, since notifications sent meanwhile are lost.
final class PostgresNotifications: Sendable {
    /// The channel name.
    static let channel = "rouse_gateway_pending"

    private let stopping = Atomic<Bool>(false)
    private let finished = DispatchSemaphore(value: 0)

    /// Starts listening; `wake` gets the device ids of each notification, or `nil` after a reconnection.
    init(settings: PostgresSettings, logger: Logger, wake: @escaping @Sendable ([String]?) -> Void) {
        let thread = Thread { [self] in
            var connection: PostgresConnection?
            var lost = false
            while !stopping.load(ordering: .relaxed) {
                do throws(GatewayError) {
                    if connection == nil {
                        let fresh = try PostgresConnection(settings: settings)
                        try fresh.execute("LISTEN \(Self.channel)")
                        connection = fresh
                        if lost {
                            lost = false
                            wake(nil)
                        }
                    }
                    guard let connection else { continue }
                    let payloads = try connection.notifications(waitingUpTo: 250)
                    let ids = payloads.flatMap { $0.split(separator: "\n").map(String.init) }
                    if !ids.isEmpty { wake(ids) }
                } catch {
                    if !lost { logger.warning("notification connection lost", metadata: ["error": "\(error)"]) }
                    connection = nil
                    lost = true
                    Thread.sleep(forTimeInterval: 0.25)
                }
            }
            finished.signal()
        }
        thread.name = "rouse-gateway-listen"
        thread.start()
    }

    /// Stops the thread and waits for it (at most a poll interval).
    func stop() async {
        guard !stopping.exchange(true, ordering: .relaxed) else { return }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            DispatchQueue.global().async { [finished] in
                finished.wait()
                continuation.resume()
            }
        }
    }
}
