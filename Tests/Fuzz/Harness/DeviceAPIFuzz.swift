import RouseWire

@testable import RouseGateway

/// The gateway's device REST API as `DeviceHandler` reads it: the first line is the `authorization` header
/// (`DeviceAPI.bearer`), the rest the JSON body, decoded and checked as each endpoint does (enroll's secret, ack
/// ids, token topic, handler reports).
enum DeviceAPIFuzz {
    static let target = FuzzTarget(
        name: "device-api",
        summary: "DeviceAPI.bearer and the device REST bodies (enroll, ack, token, handlers) with their checks",
        run: run)

    static func run(_ bytes: [UInt8]) {
        let newline = bytes.firstIndex(of: UInt8(ascii: "\n")) ?? bytes.endIndex
        _ = DeviceAPI.bearer(String(decoding: bytes[..<newline], as: UTF8.self))
        let body = Array(bytes[min(newline + 1, bytes.endIndex)...])
        for truncated in [false, true] {
            if case .success(let enroll) = DeviceAPI.decode(DeviceEnrollRequest.self, body, truncated: truncated) {
                _ = DeviceAPI.hexBytes(enroll.secret)
            }
            _ = DeviceAPI.decode(DeviceAckRequest.self, body, truncated: truncated)
                .flatMap { DeviceAPI.ackIDs($0, limit: 1000) }
            if case .success(let token) = DeviceAPI.decode(DeviceTokenRequest.self, body, truncated: truncated) {
                _ = DeviceAPI.checkTopic(token.topic)
            }
            if case .success(let report) = DeviceAPI.decode(DeviceHandlerReport.self, body, truncated: truncated) {
                _ = DeviceAPI.checkHandlers(report)
            }
        }
    }
}
