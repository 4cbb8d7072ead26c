import Foundation
import RouseGateway
import RouseTestSupport
import Testing

/// The admin endpoint shows every device: it is local, or mutually authenticated, and its lists are pages.
@Suite("Gateway admin access", .timeLimit(.minutes(2)))
struct AdminAccessTests {
    private static func curl(_ arguments: [String]) async throws -> ChildProcess.Output {
        try await ChildProcess.run("/usr/bin/curl", ["-sS"] + arguments, timeout: .seconds(30))
    }

    @Test("an admin listener reachable from other machines without client certificates is refused at start")
    func publicAdminRefused() throws {
        let directory = try TemporaryDirectory()
        #expect {
            _ = try GatewayFixture.start(in: directory) {
                $0.admin = GatewayConfiguration.Listener(listen: "0.0.0.0:0")
            }
        } throws: { error in
            "\(error)".contains("admin.listen 0.0.0.0:0 is reachable from other machines")
        }
        #expect {
            _ = try GatewayFixture.start(in: directory) {
                $0.admin = GatewayConfiguration.Listener(listen: "127.0.0.1:0", clientCAFile: Repository.cert("ca.pem"))
            }
        } throws: { error in
            "\(error)".contains("admin.clientCA needs admin.certificate and admin.privateKey")
        }
    }

    @Test("a TLS admin listener with clientCA requires a client certificate from that CA")
    func mutualTLS() async throws {
        let h = try await Harness.start {
            $0.admin = GatewayConfiguration.Listener(
                listen: "0.0.0.0:0", certificateFile: Repository.cert("server.pem"),
                privateKeyFile: Repository.cert("server.key"), clientCAFile: Repository.cert("ca.pem"))
        }
        let port = try #require(h.gateway.adminPort)
        let url = "https://localhost:\(port)/health"
        let ca = ["--http2", "--cacert", Repository.cert("ca.pem")]
        let none = try await Self.curl(ca + [url])
        let stranger = try await Self.curl(
            ca + [
                "--cert", Repository.cert("provider-unknown-ca.pem"), "--key",
                Repository.cert("provider-unknown-ca.key"), url,
            ])
        let known = try await Self.curl(
            ca + ["--cert", Repository.cert("provider.pem"), "--key", Repository.cert("provider.key"), url])
        await h.stop()
        #expect(none.status != 0 && !none.stdout.contains("ok"), "no certificate: \(none.stdout) \(none.stderr)")
        #expect(stranger.status != 0 && !stranger.stdout.contains("ok"), "unknown CA: \(stranger.stdout)")
        #expect(known.status == 0 && known.stdout == #"{"status":"ok"}"#, "\(known.stdout) \(known.stderr)")
    }

    @Test("a Unix-socket admin listener is mode 0600: root reads it, another user cannot connect")
    func unixSocket() async throws {
        let directory = try TemporaryDirectory()
        // The directory must be searchable for `nobody` to reach the socket at all: only the socket's mode refuses.
        chmod(directory.path, 0o755)
        let socket = directory.path + "/admin.sock"
        let gateway = try GatewayFixture.start(in: directory) {
            $0.admin = GatewayConfiguration.Listener(listen: "unix:\(socket)")
        }
        var status = stat()
        #expect(stat(socket, &status) == 0)
        #expect(status.st_mode & 0o777 == 0o600)
        let asRoot = try await Self.curl([
            "--unix-socket", socket, "--http2-prior-knowledge", "http://localhost/health",
        ])
        let asNobody = try await ChildProcess.run(
            "/usr/sbin/runuser",
            [
                "-u", "nobody", "--", "/usr/bin/curl", "-sS", "--unix-socket", socket, "--http2-prior-knowledge",
                "http://localhost/health",
            ], timeout: .seconds(30))
        await gateway.shutdown(gracePeriod: .seconds(1))
        #expect(asRoot.stdout == #"{"status":"ok"}"#, "\(asRoot.stderr)")
        // curl 7: could not connect (connect(2) answered EACCES for the socket's mode, where root got through).
        #expect(asNobody.status == 7, "\(asNobody.status) \(asNobody.stderr)")
        #expect(access(socket, F_OK) != 0, "the socket file is removed at shutdown")
    }

    @Test("lists are pages with a next-page link; device tokens are redacted unless asked for")
    func pages() async throws {
        let h = try await Harness.start()
        var tokens = [h.token]
        for n in 1...4 { tokens.append(try await h.device.token(topic: "com.example.app\(n)")) }
        let port = try #require(h.gateway.adminPort)
        func get(_ path: String) async throws -> (body: String, next: String?) {
            let out = try await Self.curl(["-i", "--http2-prior-knowledge", "http://127.0.0.1:\(port)\(path)"])
            let parts = out.stdout.components(separatedBy: "\r\n\r\n")
            let next = parts.first?.split(separator: "\r\n").first { $0.lowercased().hasPrefix("next-page:") }
            return (
                parts.dropFirst().joined(),
                next.map { String($0.dropFirst("next-page:".count)).trimmingCharacters(in: .whitespaces) }
            )
        }
        var seen: [String] = []
        var links: [String] = []
        var path: String? = "/v1/tokens?limit=2&reveal=tokens"
        var pages = 0
        while let current = path, pages < 10 {
            let (body, next) = try await get(current)
            let items = try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [[String: Any]] ?? []
            #expect(items.count <= 2)
            seen += items.compactMap { $0["token"] as? String }
            path = next
            links += next.map { [$0] } ?? []
            pages += 1
        }
        // Paging without reveal must not show a token either, not even in the next-page link.
        let redactedLink = try await get("/v1/tokens?limit=1").next ?? ""
        let redacted = try await get("/v1/tokens?limit=1000").body
        let bad = try await Self.curl(["--http2-prior-knowledge", "http://127.0.0.1:\(port)/v1/tokens?limit=5000"])
        await h.stop()
        #expect(seen == tokens.sorted(), "every token once, in order, over \(pages) pages")
        #expect(!tokens.contains { token in (links + [redactedLink]).contains { $0.contains(token.prefix(8)) } })
        #expect(redactedLink.hasPrefix("/v1/tokens?limit=1&after="), "\(redactedLink)")
        #expect(pages == 3)
        #expect(!tokens.contains { redacted.contains($0) })
        #expect(tokens.allSatisfy { redacted.contains(String($0.prefix(8)) + "…") })
        #expect(bad.stdout.contains("badLimit"))
    }
}
