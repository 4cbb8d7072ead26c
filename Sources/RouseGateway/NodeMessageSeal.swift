import Crypto
import FoundationEssentials
import Synchronization

/// Node messages sealed with AES-256-GCM under the cluster key, so that no other PostgreSQL role can read or forge
/// them: any role that may connect to the database can `LISTEN` on a node's channel and `NOTIFY` on it (PostgreSQL
/// has no privilege for channels), but only the gateway's role can read the key (table `gateway_cluster_key`, made
/// by the first node and granted to nobody else).
///
/// A notification's payload is `s1:` and the base64 of nonce ‖ ciphertext ‖ tag; the recipient's channel name is
/// the additional data (a message for one node is no message for another). The plaintext starts with a header
/// line, `sender \t session \t counter \t wall-ms`: the sending node's id, a random number for this run of the
/// sender, a counter that only grows within the session, and the time it was sealed. The receiver (``Opener``)
/// refuses a message older or newer than ``windowMilliseconds``, one sealed before it started (a message for an
/// earlier run of the node: its `seen` counters are gone with that run), and one whose counter it has seen for its
/// session: a captured message cannot be played back, not even after the receiving node restarts.
package final class NodeMessageSeal: Sendable {
    /// What a sealed payload starts with.
    package static let prefix = "s1:"
    /// How far a message's time may be from the receiver's clock.
    package static let windowMilliseconds: Int64 = 60_000
    /// The key's length in bytes.
    package static let keyBytes = 32

    private let key: SymmetricKey
    private let session = UInt64.random(in: 1...UInt64.max)
    /// The sender's id and the last counter used.
    private let state = Mutex<(sender: String, counter: UInt64)>(("cli", 0))

    /// A seal under `key` (`keyBytes` long).
    package init(key: [UInt8]) { self.key = SymmetricKey(data: key) }

    /// The node id written into sealed messages (default `cli`: a command such as `rouse gateway revoke`).
    package func setSender(_ node: String) { state.withLock { $0.sender = node } }

    /// `payload` (message lines) sealed for node `recipient` at `now` (wall-clock milliseconds).
    package func seal(_ payload: String, to recipient: String, now: Int64) throws(GatewayError) -> String {
        let (sender, counter) = state.withLock { state -> (String, UInt64) in
            state.counter &+= 1
            return (state.sender, state.counter)
        }
        let plaintext = "\(sender)\t\(session)\t\(counter)\t\(now)\n" + payload
        do {
            let box = try AES.GCM.seal(
                Array(plaintext.utf8), using: key,
                authenticating: Array(PostgresNotifications.channel(recipient).utf8))
            guard let combined = box.combined else { throw GatewayError.storage("node message: no sealed form") }
            return Self.prefix + combined.base64EncodedString()
        } catch {
            throw .storage("node message: cannot seal: \(error)")
        }
    }

    /// Opens what arrives on one node's channel; loop-confined (a value the listener owns).
    package struct Opener: Sendable {
        private let key: SymmetricKey
        private let channel: [UInt8]
        /// The last counter accepted per sender session, and when: bounded (only sealed messages add entries, and
        /// entries older than twice the window are dropped once there are more than `maxSessions`).
        private var seen: [String: (counter: UInt64, at: Int64)] = [:]
        private static let maxSessions = 1024
        /// Messages sealed earlier are refused: they were for an earlier run of this node.
        private let notBefore: Int64

        /// An opener for messages to `node` sealed at `notBefore` (wall-clock milliseconds: when this run of the
        /// node started listening) or later.
        package init(key: [UInt8], node: String, notBefore: Int64 = .min) {
            self.key = SymmetricKey(data: key)
            channel = Array(PostgresNotifications.channel(node).utf8)
            self.notBefore = notBefore
        }

        /// The sender and the message lines of `payload`, or why it is refused.
        package mutating func open(_ payload: String, now: Int64) -> Result<(sender: String, lines: String), OpenError>
        {
            guard payload.hasPrefix(NodeMessageSeal.prefix) else { return .failure(.init("not sealed")) }
            guard payload.utf8.count <= 8000,
                let combined = Data(base64Encoded: String(payload.dropFirst(NodeMessageSeal.prefix.count)))
            else { return .failure(.init("bad encoding")) }
            let plaintext: Data
            do {
                plaintext = try AES.GCM.open(AES.GCM.SealedBox(combined: combined), using: key, authenticating: channel)
            } catch {
                return .failure(.init("not sealed with the cluster key for this node"))
            }
            guard let text = String(data: plaintext, encoding: .utf8),
                let newline = text.firstIndex(of: "\n")
            else { return .failure(.init("no header")) }
            let header = text[..<newline].split(separator: "\t", omittingEmptySubsequences: false)
            guard header.count == 4, let session = UInt64(header[1]), let counter = UInt64(header[2]),
                let sentAt = Int64(header[3])
            else { return .failure(.init("bad header")) }
            let sender = String(header[0])
            // Compared without arithmetic that could overflow: `sentAt` is the sender's, `now` ours.
            let (age, overflow) = now.subtractingReportingOverflow(sentAt)
            guard !overflow, age.magnitude <= NodeMessageSeal.windowMilliseconds.magnitude else {
                return .failure(
                    .init("sealed \(overflow ? "at a time out of range" : "\(age) ms ago"), outside the window"))
            }
            guard sentAt >= notBefore else {
                return .failure(.init("sealed before this node started listening (\(notBefore - sentAt) ms before)"))
            }
            let key = "\(sender)\t\(session)"
            if let last = seen[key], counter <= last.counter { return .failure(.init("replayed (counter \(counter))")) }
            if seen.count >= Self.maxSessions {
                seen = seen.filter {
                    now.subtractingReportingOverflow($0.value.at).partialValue < 2 * NodeMessageSeal.windowMilliseconds
                }
                if seen.count >= Self.maxSessions { seen.removeAll() }
            }
            seen[key] = (counter, now)
            return .success((sender, String(text[text.index(after: newline)...])))
        }
    }

    /// Why a payload was refused.
    package struct OpenError: Error, Sendable, CustomStringConvertible {
        package let description: String
        init(_ description: String) { self.description = description }
    }

    /// A fresh random key.
    package static func makeKey() -> [UInt8] {
        SymmetricKey(size: .bits256).withUnsafeBytes { Array($0) }
    }
}
