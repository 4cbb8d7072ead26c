import Foundation
import Logging
import RouseSystem
import Synchronization

/// How a gateway node hears from the others sharing its PostgreSQL store: `LISTEN` on a channel of its own
/// (`rouse_node_<id>`), on a connection of its own, on a thread that sleeps in `poll` on that connection's socket
/// and an eventfd (written to stop it) with no timeout: an idle node does not wake for this. Other nodes send
/// `NOTIFY` inside their transaction, so a message arrives when, and only if, what it announces is committed.
///
/// When the connection breaks, messages sent meanwhile are lost: the thread reconnects (backing off from 250 ms to
/// 5 s, a timer that runs only while PostgreSQL is unreachable) and, once listening again, tells the core to look
/// at the store for every channel it holds (`received(nil)`).
final class PostgresNotifications: Sendable {
    /// The channel that node `node` listens on.
    static func channel(_ node: String) -> String { "rouse_node_" + node }

    private let stopping = Atomic<Bool>(false)
    private let finished = DispatchSemaphore(value: 0)
    private let wakeup: Int32

    /// Starts listening for `node`; `deliver` gets the messages of each notification, or `nil` after a loss.
    init(
        settings: PostgresSettings, node: String, metrics: GatewayMetrics, logger: Logger,
        deliver: @escaping @Sendable ([NodeMessage]?) -> Void
    ) throws(GatewayError) {
        do {
            wakeup = try Sys.eventFD()
        } catch {
            throw .startup("\(error)")
        }
        let thread = Thread { [self] in
            listen(settings: settings, node: node, metrics: metrics, logger: logger, deliver: deliver)
            finished.signal()
        }
        thread.name = "rouse-gateway-listen"
        thread.start()
    }

    deinit { close(wakeup) }

    private func listen(
        settings: PostgresSettings, node: String, metrics: GatewayMetrics, logger: Logger,
        deliver: @Sendable ([NodeMessage]?) -> Void
    ) {
        var connection: PostgresConnection?
        var lost = false
        var backoff: Int32 = 250
        while !stopping.load(ordering: .relaxed) {
            if connection == nil {
                do throws(GatewayError) {
                    let fresh = try PostgresConnection(settings: settings)
                    try fresh.execute("LISTEN \"\(Self.channel(node))\"")
                    connection = fresh
                    backoff = 250
                    if lost {
                        lost = false
                        logger.info("listening to other nodes again")
                        deliver(nil)
                    }
                } catch {
                    if !lost { logger.warning("cannot listen to other nodes", metadata: ["error": "\(error)"]) }
                    lost = true
                    _ = wait(on: nil, timeout: backoff)
                    backoff = min(backoff * 2, 5000)
                    continue
                }
            }
            guard let live = connection else { continue }
            do throws(GatewayError) {
                var messages: [NodeMessage] = []
                for payload in try live.notifications() {
                    let (parsed, errors) = NodeMessage.parse(payload)
                    messages += parsed
                    for error in errors {
                        metrics.limitHit(listener: "nodes", limit: "bad-message")
                        logger.warning("bad message from another node", metadata: ["error": "\(error)"])
                    }
                }
                if !messages.isEmpty { deliver(messages) }
            } catch {
                logger.warning("lost the connection to other nodes", metadata: ["error": "\(error)"])
                connection = nil
                lost = true
                continue
            }
            // Asleep until the server speaks or the gateway stops.
            _ = wait(on: live.socket, timeout: -1)
        }
    }

    /// Waits until `socket` is readable (true), or the eventfd is written or `timeout` ms passed (false).
    private func wait(on socket: Int32?, timeout: Int32) -> Bool {
        var descriptors = [pollfd(fd: wakeup, events: Int16(POLLIN), revents: 0)]
        if let socket, socket >= 0 { descriptors.append(pollfd(fd: socket, events: Int16(POLLIN), revents: 0)) }
        let count = poll(&descriptors, nfds_t(descriptors.count), timeout)
        guard count > 0 else { return false }
        return descriptors.count > 1 && descriptors[1].revents != 0
    }

    /// Stops the thread and waits for it.
    func stop() async {
        guard !stopping.exchange(true, ordering: .relaxed) else { return }
        Sys.eventFDSignal(wakeup)
        // A thread of its own waits, not libdispatch's pool (see GatewayCore.stop).
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            Thread.detachNewThread { [finished] in
                finished.wait()
                continuation.resume()
            }
        }
    }
}
