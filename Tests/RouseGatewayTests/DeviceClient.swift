import Foundation
import RouseCurl
import RouseTestSupport
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

    /// Enrolls with a one-time secret; returns a device using the credential it got.
    static func enroll(curl: CurlHTTPClient, port: UInt16, secret: String) async throws -> DeviceClient {
        let anonymous = DeviceClient(curl: curl, port: port, credential: .none)
        let (status, json) = try await anonymous.call("POST", "/device/v1/enroll", body: #"{"secret":"\#(secret)"}"#)
        guard status == 201, let credential = json["credential"] as? String else {
            throw FixtureError("enroll: \(status) \(json)")
        }
        return DeviceClient(curl: curl, port: port, credential: .bearer(credential))
    }

    /// Asks for a token for `topic`.
    func token(topic: String) async throws -> String {
        let (status, json) = try await call("POST", "/device/v1/tokens", body: #"{"topic":"\#(topic)"}"#)
        guard status == 201 || status == 200, let token = json["token"] as? String else {
            throw FixtureError("token: \(status) \(json)")
        }
        return token
    }

    /// Acknowledges ids; returns the reply.
    @discardableResult
    func ack(_ ids: [String]) async throws -> (status: Int, json: [String: Any]) {
        let list = ids.map { "\"\($0)\"" }.joined(separator: ",")
        return try await call("POST", "/device/v1/ack", body: #"{"ids":[\#(list)]}"#)
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

/// The records of one device channel, parsed from NDJSON (values as strings), read with deadlines.
final class Channel: Sendable {
    private struct Mailbox {
        var records: [[String: String]] = []
        var waiter: (id: Int, continuation: CheckedContinuation<[String: String]?, Never>)?
        var nextWaiter = 0
    }

    private final class Shared: Sendable {
        let mailbox = Mutex(Mailbox())
    }

    private let shared = Shared()
    private let reader = Mutex<Task<Void, Never>?>(nil)

    init(_ body: AsyncThrowingStream<[UInt8], any Error>) {
        let task = Task { [shared] in
            func deliver(_ record: [String: String]) {
                let waiter = shared.mailbox.withLock { box -> CheckedContinuation<[String: String]?, Never>? in
                    if let waiter = box.waiter {
                        box.waiter = nil
                        return waiter.continuation
                    }
                    box.records.append(record)
                    return nil
                }
                waiter?.resume(returning: record)
            }
            var buffer: [UInt8] = []
            do {
                for try await chunk in body {
                    buffer += chunk
                    while let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                        let line = Array(buffer[..<newline])
                        buffer.removeSubrange(...newline)
                        if let object = try? JSONSerialization.jsonObject(with: Data(line)) as? [String: Any] {
                            deliver(object.mapValues { "\($0)" })
                        } else {
                            deliver(["type": "garbage", "line": String(decoding: line, as: UTF8.self)])
                        }
                    }
                }
                deliver(["type": "end"])
            } catch {
                deliver(["type": "end", "error": "\(error)"])
            }
        }
        reader.withLock { $0 = task }
    }

    deinit { reader.withLock { $0?.cancel() } }

    /// The next record, or throws after `timeout`.
    func next(timeout: Duration = .seconds(10)) async throws -> [String: String] {
        let record = await withCheckedContinuation { (continuation: CheckedContinuation<[String: String]?, Never>) in
            let id = shared.mailbox.withLock { box -> Int? in
                if !box.records.isEmpty { return nil }
                box.nextWaiter += 1
                box.waiter = (box.nextWaiter, continuation)
                return box.nextWaiter
            }
            guard let id else {
                let record = shared.mailbox.withLock { $0.records.removeFirst() }
                continuation.resume(returning: record)
                return
            }
            Task { [shared] in
                try? await Task.sleep(for: timeout)
                let expired = shared.mailbox.withLock { box -> CheckedContinuation<[String: String]?, Never>? in
                    guard let waiter = box.waiter, waiter.id == id else { return nil }
                    box.waiter = nil
                    return waiter.continuation
                }
                expired?.resume(returning: nil)
            }
        }
        guard let record else { throw FixtureError("no channel record within \(timeout)") }
        return record
    }

    /// The next `push` record (skipping hello and heartbeats).
    func nextPush(timeout: Duration = .seconds(10)) async throws -> [String: String] {
        while true {
            let record = try await next(timeout: timeout)
            if record["type"] == "push" { return record }
            if record["type"] == "end" || record["type"] == "replaced" || record["type"] == "garbage" {
                throw FixtureError("channel ended while waiting for a push: \(record)")
            }
        }
    }

    /// Asserts that no push arrives within `window` (used after the last expected push).
    func expectNoPush(within window: Duration) async throws {
        do {
            let record = try await nextPush(timeout: window)
            Issue.record("unexpected push: \(record)")
        } catch let error as FixtureError where error.description.hasPrefix("no channel record") {
            return
        }
    }

    /// Stops reading (the transfer is removed).
    func close() { reader.withLock { $0?.cancel() } }
}
