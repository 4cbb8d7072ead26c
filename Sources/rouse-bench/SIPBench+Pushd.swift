import Foundation
import RouseChildProcess
import RouseSIPLab
import RouseSystem

/// S1 with the push sent through `rouse-pushd` (issue 30's SIP proxy path): Kamailio runs the same
/// `deploy/sip/kamailio-rouse-push.cfg` with `ROUSE_PUSHD` defined, so its INVITE route calls pushd's VoIP fast path
/// on its TCP listener (`http_client_query`, the bearer token as the one header) instead of `exec`ing
/// `rouse send`; pushd keeps a warm connection to the gateway.
extension SIPBench {
    /// A running rouse-pushd for the bench: its TCP listener's base URL for app `app` and its bearer token.
    struct Pushd {
        let child: RunningChild
        let url: String
        let token: String
    }

    /// Starts `rouse-pushd` (this build's sibling) with one app `app` (topic `topic`) sending to the gateway's
    /// provider port, a Unix socket and a TCP listener on loopback with a bearer token.
    static func startPushd(directory: String, certs: String, providerPort: UInt16, app: String, topic: String)
        async throws -> Pushd
    {
        let port = try Sys.freeLoopbackPort()
        let token = (0..<4).map { _ in UUID().uuidString.replacingOccurrences(of: "-", with: "") }.joined()
        try Data((token + "\n").utf8).write(to: URL(fileURLWithPath: directory + "/pushd.token"))
        let config = """
            {"unix":{"path":"\(directory)/pushd.sock","mode":"0600"},
             "tcp":{"address":"127.0.0.1:\(port)","bearerTokenFile":"\(directory)/pushd.token"},
             "apps":{"\(app)":{"topic":"\(topic)","endpoint":"https://127.0.0.1:\(providerPort)",
               "caFile":"\(certs)/ca.pem","keyFile":"\(certs)/apns-key.p8","keyID":"ROUSEKEY01",
               "teamID":"ROUSETEAM1"}}}
            """
        try Data(config.utf8).write(to: URL(fileURLWithPath: directory + "/pushd.json"))
        let child = try ChildProcess.start(
            try GatewayBench.sibling("rouse-pushd"),
            ["--config", directory + "/pushd.json", "--log-level", "error"], stdout: .lines, stderr: .inherit)
        guard await child.lines.first(timeout: .seconds(30), where: { $0.hasPrefix("rouse-pushd ready") }) != nil
        else {
            child.kill()
            throw GatewayBench.BenchError(description: "rouse-pushd did not start")
        }
        return Pushd(child: child, url: "http://127.0.0.1:\(port)/v1/apps/\(app)", token: token)
    }
}
