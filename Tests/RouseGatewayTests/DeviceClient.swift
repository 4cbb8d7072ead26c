import Foundation
import RouseCurl
import RouseTestSupport
import RouseWire
import Synchronization
import Testing

/// A device on the device API through libcurl (as the real agent will be).
struct DeviceClient: Sendable {
    enum Credential: Sendable {
        case bearer(String)
        case certificate(cert: String, key: String)
        case none
    }

    let curl: CurlHTTPClient
    let port: UInt16
    var credential: Credential

    init(curl: CurlHTTPClient, port: UInt16, credential: Credential) {
        self.curl = curl
        self.port = port
        self.credential = credential
    }

    func request(_ method: String, _ path: String, body: String? = nil, timeout: Duration = .seconds(20))
        -> CurlRequest
    {
        var headers: [(name: String, value: String)] = []
        var tls = CurlTLSOptions(caFile: Repository.cert("ca.pem"))
        switch credential {
        case .bearer(let value): headers.append((name: "authorization", value: "Bearer \(value)"))
        case .certificate(let cert, let key): tls.clientCertificate = .pem(certificateFile: cert, keyFile: key)
        case .none: break
        }
        if body != nil { headers.append((name: "content-type", value: "application/json")) }
        return CurlRequest(
            method: method, url: "https://127.0.0.1:\(port)\(path)", headers: headers,
            body: Array((body ?? "").utf8), timeout: timeout, tls: tls)
    }

    /// Sends a request; returns the status and the JSON object of the body.
    func call(_ method: String, _ path: String, body: String? = nil) async throws -> (status: Int, json: [String: Any])
    {
        let response = try await curl.send(request(method, path, body: body))
        let json = (try? JSONSerialization.jsonObject(with: Data(response.body))) as? [String: Any] ?? [:]
        return (response.status, json)
    }

    /// Sends `body` and reads the reply as `Reply` (the models both sides use); throws unless the status is one of
    /// `accepted` and the body is that reply.
    func send<Reply: DeviceAPIMessage>(
        _ method: String, _ path: String, _ body: (some DeviceAPIMessage)?, accepted: Set<Int> = [200],
        as reply: Reply.Type
    ) async throws -> Reply {
        let response = try await curl.send(request(method, path, body: body?.json))
        let text = String(decoding: response.body, as: UTF8.self)
        guard accepted.contains(response.status) else {
            throw FixtureError("\(method) \(path): \(response.status) \(text)")
        }
        do {
            return try Reply.decode(response.body)
        } catch {
            throw FixtureError("\(method) \(path): \(response.status) \(error): \(text)")
        }
    }

    /// Enrolls with a one-time secret; returns a device using the credential it got.
    static func enroll(curl: CurlHTTPClient, port: UInt16, secret: String) async throws -> DeviceClient {
        let anonymous = DeviceClient(curl: curl, port: port, credential: .none)
        let reply = try await anonymous.send(
            "POST", "/device/v1/enroll", DeviceEnrollRequest(secret: secret), accepted: [201],
            as: DeviceEnrollReply.self)
        guard let credential = reply.credential else { throw FixtureError("enroll: no credential in \(reply.json)") }
        return DeviceClient(curl: curl, port: port, credential: .bearer(credential))
    }

    /// Asks for a token for `topic`.
    func token(topic: String) async throws -> String {
        try await send(
            "POST", "/device/v1/tokens", DeviceTokenRequest(topic: topic), accepted: [200, 201], as: DeviceToken.self
        ).token
    }

    /// Acknowledges ids; returns the reply (throws unless 200).
    @discardableResult
    func ack(_ ids: [String]) async throws -> DeviceAckReply {
        try await send("POST", "/device/v1/ack", DeviceAckRequest(ids: ids), as: DeviceAckReply.self)
    }

    /// Opens the channel; throws unless it answers 200.
    func channel() async throws -> Channel {
        let response = try await curl.stream(request("GET", "/device/v1/channel", timeout: .seconds(120)))
        guard response.head.status == 200 else {
            var body: [UInt8] = []
            for try await chunk in response.body { body += chunk }
            throw ChannelRefused(status: response.head.status, body: String(decoding: body, as: UTF8.self))
        }
        return Channel(response.body)
    }
}

struct ChannelRefused: Error, CustomStringConvertible {
    let status: Int
    let body: String
    var description: String { "channel refused: \(status) \(body)" }
}

/// What a device channel gave a test: a record (read by the agent's reader, `ChannelRecord(line:)`), a line that
/// reader refused, or the end of the channel.
enum ChannelEvent: Sendable, Equatable, CustomStringConvertible {
    /// A record.
    case record(ChannelRecord)
    /// A line that is no record (the reader's error).
    case garbage(line: String, error: String)
    /// The channel ended (with the transport's error, if any).
    case end(error: String?)

    /// The record's `type`, or `garbage` / `end`.
    var type: String {
        switch self {
        case .record(let record): record.type
        case .garbage: "garbage"
        case .end: "end"
        }
    }

    /// The `hello` record's payload, if this is one.
    var hello: ChannelRecord.Hello? {
        if case .record(.hello(let hello)) = self { return hello }
        return nil
    }

    /// The `push` record's payload, if this is one.
    var push: ChannelRecord.Push? {
        if case .record(.push(let push)) = self { return push }
        return nil
    }

    /// The `webpush` record's payload, if this is one.
    var webPush: ChannelRecord.WebPush? {
        if case .record(.webpush(let message)) = self { return message }
        return nil
    }

    var description: String {
        switch self {
        case .record(let record): String(decoding: record.line.dropLast(), as: UTF8.self)
        case .garbage(let line, let error): "garbage \(error): \(line)"
        case .end(let error): "end" + (error.map { " (\($0))" } ?? "")
        }
    }
}

/// The records of one device channel, read from NDJSON by the agent's reader, with deadlines.
final class Channel: Sendable {
    private struct Mailbox {
        var events: [ChannelEvent] = []
        var waiter: (id: Int, continuation: CheckedContinuation<ChannelEvent?, Never>)?
        var nextWaiter = 0
    }

    private final class Shared: Sendable {
        let mailbox = Mutex(Mailbox())
    }

    private let shared = Shared()
    private let reader = Mutex<Task<Void, Never>?>(nil)

    init(_ body: AsyncThrowingStream<[UInt8], any Error>) {
        let task = Task { [shared] in
            func deliver(_ event: ChannelEvent) {
                let waiter = shared.mailbox.withLock { box -> CheckedContinuation<ChannelEvent?, Never>? in
                    if let waiter = box.waiter {
                        box.waiter = nil
                        return waiter.continuation
                    }
                    box.events.append(event)
                    return nil
                }
                waiter?.resume(returning: event)
            }
            var buffer: [UInt8] = []
            do {
                for try await chunk in body {
                    buffer += chunk
                    while let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                        let line = Array(buffer[..<newline])
                        buffer.removeSubrange(...newline)
                        do {
                            deliver(.record(try ChannelRecord(line: line)))
                        } catch {
                            deliver(.garbage(line: String(decoding: line, as: UTF8.self), error: "\(error)"))
                        }
                    }
                }
                deliver(.end(error: nil))
            } catch {
                deliver(.end(error: "\(error)"))
            }
        }
        reader.withLock { $0 = task }
    }

    deinit { reader.withLock { $0?.cancel() } }

    /// The next record, or throws after `timeout`.
    func next(timeout: Duration = .seconds(10)) async throws -> ChannelEvent {
        let event = await withCheckedContinuation { (continuation: CheckedContinuation<ChannelEvent?, Never>) in
            let id = shared.mailbox.withLock { box -> Int? in
                if !box.events.isEmpty { return nil }
                box.nextWaiter += 1
                box.waiter = (box.nextWaiter, continuation)
                return box.nextWaiter
            }
            guard let id else {
                let event = shared.mailbox.withLock { $0.events.removeFirst() }
                continuation.resume(returning: event)
                return
            }
            Task { [shared] in
                try? await Task.sleep(for: timeout)
                let expired = shared.mailbox.withLock { box -> CheckedContinuation<ChannelEvent?, Never>? in
                    guard let waiter = box.waiter, waiter.id == id else { return nil }
                    box.waiter = nil
                    return waiter.continuation
                }
                expired?.resume(returning: nil)
            }
        }
        guard let event else { throw FixtureError("no channel record within \(timeout)") }
        return event
    }

    /// The next `push` record (skipping hello and heartbeats).
    func nextPush(timeout: Duration = .seconds(10)) async throws -> ChannelRecord.Push {
        while true {
            let event = try await next(timeout: timeout)
            if let push = event.push { return push }
            if event.type == "end" || event.type == "replaced" || event.type == "garbage" {
                throw FixtureError("channel ended while waiting for a push: \(event)")
            }
        }
    }

    /// Asserts that no push arrives within `window` (used after the last expected push).
    func expectNoPush(within window: Duration) async throws {
        do {
            let push = try await nextPush(timeout: window)
            Issue.record("unexpected push: \(push)")
        } catch let error as FixtureError where error.description.hasPrefix("no channel record") {
            return
        }
    }

    /// Stops reading (the transfer is removed).
    func close() { reader.withLock { $0?.cancel() } }
}
