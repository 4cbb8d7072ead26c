import Foundation
import RouseCurl
import Testing

@Suite("CurlHTTPClient against nghttpd", .serialized)
struct CurlClientTests {
    let hello = Data("hello from nghttpd\n".utf8)

    func tls(caFile: String = CurlTestSupport.certPath("ca.pem")) -> CurlTLSOptions {
        CurlTLSOptions(caFile: caFile)
    }

    @Test func getOverHTTP2WithTLS() async throws {
        let server = try NghttpdServer(files: ["hello.txt": hello])
        defer { server.stop() }
        let client = try CurlHTTPClient()
        let request = CurlRequest(url: "https://localhost:\(server.port)/hello.txt", tls: tls())
        let response = try await client.send(request)
        #expect(response.status == 200)
        #expect(response.body == Array(hello))
        #expect(response.httpVersion == .http2)
        #expect(response.header("content-length") == String(hello.count))
        #expect(response.connection.remotePort == server.port)
        #expect(response.connection.newConnections == 1)
        #expect(response.header("Content-Type") == "text/plain")
        await client.shutdown()
    }

    @Test func concurrentRequestsShareOneConnection() async throws {
        let server = try NghttpdServer(files: ["hello.txt": hello])
        defer { server.stop() }
        let client = try CurlHTTPClient()
        let url = "https://127.0.0.1:\(server.port)/hello.txt"
        let responses = try await withThrowingTaskGroup(of: CurlResponse.self) { group in
            for _ in 0..<20 {
                group.addTask { try await client.send(CurlRequest(url: url, tls: self.tls())) }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(responses.count == 20)
        #expect(responses.allSatisfy { $0.status == 200 && $0.body == Array(hello) && $0.httpVersion == .http2 })
        #expect(Set(responses.map(\.connection.localPort)).count == 1)
        #expect(responses.map(\.connection.newConnections).reduce(0, +) == 1)
        await client.shutdown()
    }

    @Test func postBodyIsSentAndEchoed() async throws {
        let server = try NghttpdServer(files: [:], extraArguments: ["--echo-upload"])
        defer { server.stop() }
        let client = try CurlHTTPClient()
        let payload = Array(#"{"aps":{"content-available":1}}"#.utf8)
        let request = CurlRequest(
            method: "POST",
            url: "https://localhost:\(server.port)/3/device/abcd",
            headers: [("apns-push-type", "background"), ("apns-priority", "5")],
            body: payload,
            tls: tls()
        )
        let response = try await client.send(request)
        #expect(response.status == 200)
        #expect(response.body == payload)
        await client.shutdown()
    }

    @Test func h2cPriorKnowledge() async throws {
        let server = try NghttpdServer(files: ["hello.txt": hello], tls: false)
        defer { server.stop() }
        let client = try CurlHTTPClient()
        let request = CurlRequest(url: "http://127.0.0.1:\(server.port)/hello.txt", httpVersion: .http2PriorKnowledge)
        let response = try await client.send(request)
        #expect(response.status == 200)
        #expect(response.body == Array(hello))
        #expect(response.httpVersion == .http2)
        await client.shutdown()
    }

    @Test func connectDeadlineAgainstLocalBlackhole() async throws {
        let blackhole = try CurlTestSupport.LoopbackSocket(listen: true)
        let client = try CurlHTTPClient()
        let request = CurlRequest(
            url: "https://127.0.0.1:\(blackhole.port)/",
            connectTimeout: .milliseconds(200),
            timeout: .milliseconds(400),
            tls: tls()
        )
        let started = ContinuousClock.now
        let error = await #expect(throws: CurlError.self) { try await client.send(request) }
        // Without the deadlines the request never ends (the server never answers); a bound far above 400 ms, as a
        // loaded machine's parallel run stretches them.
        #expect(ContinuousClock.now - started < .seconds(20))
        #expect(error?.isTimeout == true)
        #expect(error?.processing == .notProcessed)
        await client.shutdown()
    }

    @Test func cancellationRemovesTheTransfer() async throws {
        let blackhole = try CurlTestSupport.LoopbackSocket(listen: true)
        let client = try CurlHTTPClient()
        let request = CurlRequest(url: "https://127.0.0.1:\(blackhole.port)/", timeout: .seconds(30), tls: tls())
        let task = Task { try await client.send(request) }
        try await Task.sleep(for: .milliseconds(100))
        let started = ContinuousClock.now
        task.cancel()
        let result = await task.result
        // Not the transfer's own 30 s timeout: the cancellation ended it (a bound far from both, for a loaded machine).
        #expect(ContinuousClock.now - started < .seconds(15))
        #expect(throws: CancellationError.self) { try result.get() }
        await client.shutdown()
    }

    @Test func streamingDeliversHeadThenChunks() async throws {
        var big = Data(count: 1 << 20)
        for index in big.indices { big[index] = UInt8(truncatingIfNeeded: index &* 31) }
        let server = try NghttpdServer(files: ["big.bin": big])
        defer { server.stop() }
        let client = try CurlHTTPClient()
        var request = CurlRequest(url: "https://localhost:\(server.port)/big.bin", tls: tls())
        request.tcpKeepAlive = .seconds(30)
        let response = try await client.stream(request)
        #expect(response.head.status == 200)
        #expect(response.head.httpVersion == .http2)
        var received: [UInt8] = []
        var chunks = 0
        for try await chunk in response.body {
            received += chunk
            chunks += 1
        }
        #expect(chunks > 1)
        #expect(received == Array(big))
        await client.shutdown()
    }

    @Test func untrustedServerIsNotProcessed() async throws {
        let server = try NghttpdServer(files: ["hello.txt": hello])
        defer { server.stop() }
        let client = try CurlHTTPClient()
        let request = CurlRequest(
            url: "https://localhost:\(server.port)/hello.txt",
            tls: tls(caFile: CurlTestSupport.certPath("unknown-ca.pem"))
        )
        let error = await #expect(throws: CurlError.self) { try await client.send(request) }
        #expect(error?.code == .peerFailedVerification || error?.code == .sslConnectError)
        #expect(error?.processing == .notProcessed)
        await client.shutdown()
    }

    @Test func clientCertificateFromPKCS12() async throws {
        let server = try NghttpdServer(files: ["hello.txt": hello], extraArguments: ["--verify-client"])
        defer { server.stop() }
        let client = try CurlHTTPClient()
        var request = CurlRequest(url: "https://localhost:\(server.port)/hello.txt", tls: tls())
        request.tls.clientCertificate = .pkcs12(file: CurlTestSupport.certPath("provider.p12"), password: "rouse-test")
        let response = try await client.send(request)
        #expect(response.status == 200)

        await client.shutdown()

        // A fresh client: libcurl matches pooled connections by certificate file, not by password.
        let other = try CurlHTTPClient()
        request.tls.clientCertificate = .pkcs12(file: CurlTestSupport.certPath("provider.p12"), password: "wrong")
        let error = await #expect(throws: CurlError.self) { try await other.send(request) }
        #expect(error?.code == .sslCertProblem)
        #expect(error?.processing == .notProcessed)
        await other.shutdown()
    }

    @Test func invalidHeaderIsRefusedBeforeSending() async throws {
        let client = try CurlHTTPClient()
        let request = CurlRequest(url: "https://127.0.0.1:1/", headers: [("x-bad", "a\r\nb: c")])
        let error = await #expect(throws: CurlError.self) { try await client.send(request) }
        #expect(error?.isInvalidRequest == true)
        #expect(error?.processing == .notProcessed)
        await client.shutdown()
    }

    @Test func shutdownFailsTransfersInFlight() async throws {
        let blackhole = try CurlTestSupport.LoopbackSocket(listen: true)
        let client = try CurlHTTPClient()
        let request = CurlRequest(url: "https://127.0.0.1:\(blackhole.port)/", timeout: .seconds(30), tls: tls())
        let task = Task { try await client.send(request) }
        try await Task.sleep(for: .milliseconds(100))
        await client.shutdown()
        let error = await #expect(throws: CurlError.self) { try await task.value }
        #expect(error?.isClientShutdown == true)
        #expect(error?.processing == .notProcessed)
        let late = await #expect(throws: CurlError.self) { try await client.send(request) }
        #expect(late?.isClientShutdown == true)
    }

    @Test func streamConsumerStoppingEarlyLeavesClientUsable() async throws {
        let big = Data(repeating: 0x61, count: 4 << 20)
        let server = try NghttpdServer(files: ["big.bin": big, "hello.txt": hello])
        defer { server.stop() }
        let client = try CurlHTTPClient()
        let response = try await client.stream(
            CurlRequest(url: "https://localhost:\(server.port)/big.bin", tls: tls())
        )
        for try await chunk in response.body {
            #expect(!chunk.isEmpty)
            break
        }
        let next = try await client.send(CurlRequest(url: "https://localhost:\(server.port)/hello.txt", tls: tls()))
        #expect(next.status == 200)
        #expect(next.body == Array(hello))
        await client.shutdown()
    }

    @Test func bufferedBodyLimitFailsAsProcessed() async throws {
        let server = try NghttpdServer(files: ["big.bin": Data(repeating: 0x62, count: 64 << 10)])
        defer { server.stop() }
        let client = try CurlHTTPClient()
        let request = CurlRequest(
            url: "https://localhost:\(server.port)/big.bin",
            tls: tls(),
            maxResponseBodyBytes: 1000
        )
        let error = await #expect(throws: CurlError.self) { try await client.send(request) }
        #expect(error?.code == .writeError)
        #expect(error?.processing == .processed)
        await client.shutdown()
    }

    @Test func requestsBeyondTheServerStreamLimitQueueOnOneConnection() async throws {
        let server = try NghttpdServer(files: ["hello.txt": hello])  // nghttpd allows 100 streams
        defer { server.stop() }
        let client = try CurlHTTPClient()  // default: one connection per host
        let url = "https://127.0.0.1:\(server.port)/hello.txt"
        let started = ContinuousClock.now
        let responses = try await withThrowingTaskGroup(of: CurlResponse.self) { group in
            for _ in 0..<500 {
                group.addTask { try await client.send(CurlRequest(url: url, tls: self.tls())) }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(responses.count == 500)
        #expect(responses.allSatisfy { $0.status == 200 && $0.body == Array(hello) })
        #expect(Set(responses.map(\.connection.localPort)).count == 1)
        // libcurl 7.88 can leave queued transfers without a wake-up; the loop's 50 ms tick must cover it.
        #expect(ContinuousClock.now - started < .seconds(3))

        let several = try CurlHTTPClient(configuration: .init(maxHostConnections: 3))
        let spread = try await withThrowingTaskGroup(of: CurlResponse.self) { group in
            for _ in 0..<300 {
                group.addTask { try await several.send(CurlRequest(url: url, tls: self.tls())) }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(spread.allSatisfy { $0.status == 200 })
        #expect(Set(spread.map(\.connection.localPort)).count <= 3)
        await several.shutdown()
        await client.shutdown()
    }

    @Test func proxyTunnelCarriesHTTP2AndNoProxyBypassesIt() async throws {
        let server = try NghttpdServer(files: ["hello.txt": hello])
        defer { server.stop() }
        let proxy = try ConnectProxy()
        defer { proxy.stop() }
        let client = try CurlHTTPClient()
        var request = CurlRequest(
            url: "https://localhost:\(server.port)/hello.txt",
            tls: tls(),
            proxy: CurlProxyOptions(url: "http://127.0.0.1:\(proxy.port)")
        )
        let response = try await client.send(request)
        #expect(response.status == 200)
        #expect(response.body == Array(hello))
        #expect(response.httpVersion == .http2)
        #expect(response.connection.remotePort == proxy.port)
        #expect(proxy.connectTargets == ["localhost:\(server.port)"])

        request.proxy?.noProxy = "localhost"
        let direct = try await client.send(request)
        #expect(direct.status == 200)
        #expect(direct.connection.remotePort == server.port)
        #expect(proxy.connectTargets.count == 1)
        await client.shutdown()
    }

    @Test func unreachableProxyIsNotProcessed() async throws {
        let closed = try CurlTestSupport.LoopbackSocket(listen: false)  // bound, not listening: refused
        let client = try CurlHTTPClient()
        let request = CurlRequest(
            url: "https://localhost:1/",
            tls: tls(),
            proxy: CurlProxyOptions(url: "http://127.0.0.1:\(closed.port)")
        )
        let error = await #expect(throws: CurlError.self) { try await client.send(request) }
        #expect(error?.code == .couldntConnect)
        #expect(error?.processing == .notProcessed)
        await client.shutdown()
    }

    @Test func serverDroppingTheConnectionAfterTheRequestIsUnknown() async throws {
        let server = try DropAfterReadServer()
        defer { server.stop() }
        let client = try CurlHTTPClient()
        let request = CurlRequest(
            method: "POST",
            url: "http://127.0.0.1:\(server.port)/3/device/abcd",
            body: Array("{}".utf8),
            timeout: .seconds(5),
            httpVersion: .http2PriorKnowledge
        )
        let error = await #expect(throws: CurlError.self) { try await client.send(request) }
        #expect(error?.isTimeout == false)
        #expect(error?.processing == .unknown)
        await client.shutdown()
    }

    @Test func credentialsFromMemory() async throws {
        let server = try NghttpdServer(files: ["hello.txt": hello], extraArguments: ["--verify-client"])
        defer { server.stop() }
        let client = try CurlHTTPClient()
        let read = { (name: String) in
            try [UInt8](Data(contentsOf: CurlTestSupport.certsDirectory.appendingPathComponent(name)))
        }
        var request = CurlRequest(url: "https://localhost:\(server.port)/hello.txt")
        request.tls.caPEM = try read("ca.pem")
        request.tls.clientCertificate = .pkcs12Data(try read("provider.p12"), password: "rouse-test")
        #expect(try await client.send(request).status == 200)
        request.tls.clientCertificate = .pemData(certificate: try read("provider.pem"), key: try read("provider.key"))
        #expect(try await client.send(request).status == 200)
        await client.shutdown()
    }
}
