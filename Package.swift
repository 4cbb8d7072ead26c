// swift-tools-version:6.3
import PackageDescription

let package = Package(
    name: "rouse",
    products: [
        .executable(name: "rouse", targets: ["rouse"]),
        .executable(name: "rouse-bench", targets: ["rouse-bench"]),
        .executable(name: "rouse-gateway", targets: ["rouse-gateway"]),
        .executable(name: "rouse-agent", targets: ["rouse-agent"]),
        .executable(name: "rouse-example-handler", targets: ["rouse-example-handler"]),
        .executable(name: "rouse-reach", targets: ["rouse-reach"]),
        .executable(name: "rouse-pushd", targets: ["rouse-pushd"]),
        // The libraries meant for use outside this package (docs/api.md): every other target is the package's own
        // (`package` access, checked by deploy/check-rules.sh), used by its executables and tests.
        .library(name: "RouseSender", targets: ["RouseSender", "RouseAPNs"]),
        .library(name: "RouseMockAPNs", targets: ["RouseMockAPNs", "RouseAPNs"]),
        .library(name: "RouseReachability", targets: ["RouseReachability"]),
        .library(name: "RouseAgentClient", targets: ["RouseAgentClient", "RouseActivation"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.5.2"),
        .package(url: "https://github.com/apple/swift-asn1.git", from: "1.7.4"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
    ],
    targets: [
        // MARK: C at the edge
        // libcurl's headers only: CRouseCurl loads the library itself, so programs that make no transfer never do.
        .systemLibrary(name: "CCurl", providers: [.apt(["libcurl4-openssl-dev"])]),
        .systemLibrary(name: "CNghttp2", pkgConfig: "libnghttp2", providers: [.apt(["libnghttp2-dev"])]),
        .systemLibrary(name: "COpenSSL", pkgConfig: "openssl", providers: [.apt(["libssl-dev"])]),
        // SQLite's C API, for the gateway's one-node store (RouseSQLite wraps it).
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
        // sd-bus (D-Bus) from libsystemd: RouseDBus's binding (docs/architecture.md, "D-Bus"); headers only, as CCurl.
        .systemLibrary(name: "CSystemd", providers: [.apt(["libsystemd-dev"])]),
        // One C shim per binding, each linking only its own library: syscalls, processes and rtnetlink (libc only),
        // libcurl and libsystemd's sd-bus (each loaded with dlopen on first use, so a program that makes no transfer or
        // opens no bus never loads it; CCurl and CSystemd give only their headers), OpenSSL's macros (OpenSSL only).
        .target(name: "CRouseSys"),
        .target(name: "CRouseCurl", dependencies: ["CCurl", "CRouseSys"]),
        .target(name: "CRouseSystemd", dependencies: ["CSystemd", "CRouseSys"]),
        // libpq, PostgreSQL's C client, for the gateway's shared store (RousePostgres wraps it): loaded with dlopen when
        // a PostgreSQL store opens, so no other program or store loads it or its dependencies (libpq-dev's headers).
        .target(name: "CRousePQ", dependencies: ["CRouseSys"]),
        .target(name: "CRouseOpenSSL", dependencies: ["COpenSSL"]),

        // MARK: Pure Swift models (no C module)
        // The two protocols our programs speak to each other: the device channel, the agent IPC.
        .target(name: "RouseWire", dependencies: ["RouseText"]),
        // Text and JSON helpers that Foundation's full module gave (trimming, percent-encoding, fixed decimals, a JSON
        // value), on the standard library and FoundationEssentials, so that no shipped binary links ICU.
        .target(name: "RouseText"),
        .target(
            name: "RouseAPNs",
            dependencies: [
                "RouseClock", "RouseWire",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ]
        ),
        .target(name: "RouseActivation", dependencies: ["RouseText"]),
        // The bounded HTTP/1.1 request parser (RFC 9112 subset): rouse-pushd's API and the HTTP/2 kernel's HTTP/1.1
        // connections (the gateway's WebPush listener) share it; no I/O.
        .target(name: "RouseHTTP1", dependencies: ["RouseText"]),
        // rouse-pushd's models: its configuration, the API's routes, requests and outcomes, and the per-app rate
        // limit (the gateway's WebPush ingest uses it too); no I/O.
        .target(name: "RousePushCore", dependencies: ["RouseAPNs", "RouseHTTP1", "RouseText"]),
        // The agent's rules as value-type machines (handler lifecycle, device channel, transfers, fetch, de-duplication):
        // state in, actions out, no I/O; RouseAgent is the shell that performs what they return.
        .target(name: "RouseAgentCore", dependencies: ["RouseClock"]),
        // The one clock (monotonic + wall) every shell reads, and the manual clock tests advance.
        .target(name: "RouseClock"),
        // `--version` of every binary; deploy/package.sh stamps release builds.
        .target(name: "RouseBuildInfo"),

        // MARK: Bindings
        .target(name: "RouseSystem", dependencies: ["CRouseSys"]),
        // Child processes for the tests and the rouse-bench executable (posix_spawn with only fds 0-2, through
        // RouseSystem); no daemon and no library product links it (the daemons' short children go through RouseState's
        // ShortChild).
        .target(name: "RouseChildProcess", dependencies: ["RouseClock", "RouseSystem"]),
        // Kamailio, baresip and SIPp on loopback (deploy/sip) for the SIP end-to-end test and `rouse-bench sip`.
        .target(name: "RouseSIPLab", dependencies: ["RouseChildProcess", "RouseClock", "RouseSystem"]),
        // The epoll loop, its timers and the daemons' executor on it: libc only, so every product can wait on it.
        .target(name: "RouseEventLoop", dependencies: ["CRouseSys", "RouseClock", "RouseSystem"]),
        // SQLite's C API behind a small typed wrapper (no Foundation): the gateway's one-node store.
        .target(name: "RouseSQLite", dependencies: ["CSQLite"]),
        // libpq behind a small typed wrapper (connections, results, parameters, LISTEN, connection URLs; no Foundation
        // types in its interface): the gateway's PostgreSQL store.
        .target(name: "RousePostgres", dependencies: ["CRousePQ", "RouseSystem", "RouseText"]),
        .target(
            name: "RouseHTTP2",
            dependencies: [
                "CNghttp2", "COpenSSL", "CRouseOpenSSL", "CRouseSys", "RouseClock", "RouseEventLoop", "RouseHTTP1",
                "RouseSystem", .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(
            name: "RouseCurl",
            dependencies: ["CCurl", "CRouseCurl", "RouseSystem", .product(name: "Logging", package: "swift-log")]
        ),
        .target(
            name: "RouseNetlink",
            dependencies: ["CRouseSys", "RouseSystem"]
        ),
        // D-Bus through sd-bus on an event loop, and the typed models of the session's services (logind,
        // notifications, UPower); calls, signals, and a small method export for services.
        .target(
            name: "RouseDBus",
            dependencies: ["CSystemd", "CRouseSystemd", "RouseClock", "RouseEventLoop", "RouseSystem"]),

        // MARK: Products
        .target(
            name: "RouseMockAPNs",
            dependencies: [
                "RouseAPNs", "RouseClock", "RouseHTTP2", "RouseSystem", "RouseText",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(
            name: "RouseReachability",
            dependencies: [
                "RouseClock", "RouseEventLoop", "RouseNetlink", "RouseSystem", "RouseWire",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(
            name: "RouseGateway",
            dependencies: [
                "RouseAPNs", "RouseClock", "RouseEventLoop", "RouseHTTP2", "RousePushCore", "RouseSystem", "RouseText",
                "RouseWire", "RousePostgres", "RouseSQLite",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .target(
            name: "RouseSender",
            dependencies: [
                "RouseAPNs", "RouseClock", "RouseEventLoop", "RouseHTTP2", "RouseCurl",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
            ]
        ),
        // rouse-pushd's shell: warm sender pools per credential and endpoint, the API listeners, metrics, reloads.
        .target(
            name: "RousePush",
            dependencies: [
                "CRouseSys", "RousePushCore", "RouseSender", "RouseAPNs", "RouseClock", "RouseEventLoop", "RouseHTTP2",
                "RouseSystem", "RouseText",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ]
        ),
        .target(
            name: "RouseState",
            dependencies: [
                "RouseSystem", "RouseText",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(
            name: "RouseDaemon",
            dependencies: [
                "RouseClock", "RouseEventLoop", "RouseSystem", "RouseWire",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(
            name: "RouseAgentClient",
            dependencies: ["RouseActivation", "RouseClock", "RouseSystem", "RouseText", "RouseWire"]
        ),
        .target(
            name: "RouseAgent",
            dependencies: [
                "RouseAgentClient", "RouseAgentCore", "RouseActivation", "RouseClock", "RouseCurl", "RouseDBus",
                "RouseReachability", "RouseState", "RouseSystem", "RouseText", "RouseWire",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),

        // MARK: Executables
        .executableTarget(
            name: "rouse-agent",
            dependencies: [
                "RouseAgent", "RouseDaemon", "RouseDBus", "RouseState", "RouseSystem", "RouseBuildInfo", "RouseText",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .executableTarget(
            name: "rouse-example-handler",
            dependencies: ["RouseAgentClient", "RouseActivation", "RouseText", "RouseWire"]
        ),
        .executableTarget(
            name: "rouse",
            dependencies: [
                "RouseAPNs", "RouseMockAPNs", "RouseReachability", "RouseNetlink", "RouseGateway", "RouseSender",
                "RouseAgentClient", "RouseActivation", "RouseAgent", "RouseAgentCore", "RouseState", "RouseBuildInfo",
                "RouseDaemon", "RouseClock", "RouseSystem", "RousePush", "RousePushCore", "RouseText",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // `rouse reach watch` without Foundation, ArgumentParser or the C libraries `rouse` links.
        .executableTarget(
            name: "rouse-reach",
            dependencies: ["RouseReachability", "RouseSystem", .product(name: "Logging", package: "swift-log")]
        ),
        .executableTarget(
            name: "rouse-gateway",
            dependencies: [
                "RouseGateway", "RouseDaemon", "RouseBuildInfo", "RouseSystem",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .executableTarget(
            name: "rouse-pushd",
            dependencies: [
                "RousePush", "RousePushCore", "RouseDaemon", "RouseBuildInfo", "RouseSystem", "RouseText",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ]
        ),
        .executableTarget(
            name: "rouse-bench",
            dependencies: [
                "RouseAPNs", "RouseHTTP2", "RouseReachability", "RouseNetlink", "RouseSystem", "RouseGateway",
                "RouseCurl", "RouseState", "RouseActivation", "RouseSender", "RouseAgent", "RouseAgentClient",
                "RouseAgentCore", "RouseChildProcess", "RouseDaemon", "RouseClock", "RouseEventLoop", "RousePush",
                "RousePushCore", "RouseSIPLab", "RouseText", "RouseWire", "RouseDBus",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .executableTarget(
            name: "rouse-state-crasher",
            dependencies: ["RouseState", "RouseSystem", .product(name: "Logging", package: "swift-log")]
        ),

        // MARK: Tests
        .target(
            name: "RouseTestSupport", dependencies: ["RouseAgentCore", "RouseChildProcess", "RouseDBus"],
            path: "Tests/RouseTestSupport"),
        .testTarget(
            name: "RouseAPNsTests",
            dependencies: ["RouseAPNs", .product(name: "Crypto", package: "swift-crypto")]),
        .testTarget(name: "RouseWireTests", dependencies: ["RouseWire"]),
        .testTarget(name: "RouseTextTests", dependencies: ["RouseText"]),
        .testTarget(
            name: "RousePushTests",
            dependencies: ["RousePush", "RousePushCore", "RouseAPNs", "RouseSystem", "RouseTestSupport", "RouseText"]
        ),
        .testTarget(name: "RouseClockTests", dependencies: ["RouseClock"]),
        // The errno policy of the one syscall layer, each rule on a real call.
        .testTarget(name: "RouseSystemTests", dependencies: ["RouseSystem"]),
        .testTarget(name: "RouseAgentCoreTests", dependencies: ["RouseAgentCore"]),
        // sd-bus on a private dbus-daemon, logind/notifications/UPower stood in by python3-dbusmock.
        .testTarget(
            name: "RouseDBusTests",
            dependencies: ["RouseDBus", "RouseEventLoop", "RouseTestSupport"]
        ),
        .testTarget(name: "RouseEventLoopTests", dependencies: ["RouseEventLoop", "RouseClock", "RouseSystem"]),
        .testTarget(
            name: "RouseHTTP2Tests",
            dependencies: [
                "RouseHTTP2", "RouseClock", "RouseEventLoop", "RouseSystem", "RouseCurl", "RouseTestSupport",
            ]
        ),
        .testTarget(
            name: "RouseMockAPNsTests",
            dependencies: [
                "RouseMockAPNs", "RouseAPNs", "RouseCurl", "RouseTestSupport",
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            resources: []
        ),
        .testTarget(
            name: "RouseSenderTests",
            dependencies: [
                "RouseSender", "RouseMockAPNs", "RouseAPNs", "RouseClock", "RouseTestSupport",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(name: "RouseActivationTests", dependencies: ["RouseActivation", "RouseTestSupport"]),
        .testTarget(
            name: "RouseGatewayTests",
            dependencies: [
                "RouseGateway", "RouseHTTP2", "RouseCurl", "RouseAPNs", "RouseClock", "RouseEventLoop",
                "RouseTestSupport", "RouseWire", "RouseSQLite",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "InMemoryLogging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "RouseAgentTests",
            dependencies: [
                "RouseAgent", "RouseAgentClient", "RouseAgentCore", "RouseClock", "RouseGateway", "RouseHTTP2",
                "RouseTestSupport", "RouseAPNs", "RouseActivation", "RouseChildProcess", "RouseDaemon",
                "RouseEventLoop", "RouseSIPLab", "RouseDBus", "RouseState",
                "RouseSystem", "RouseWire",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "InMemoryLogging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "RouseReachabilityTests",
            dependencies: [
                "RouseReachability", "RouseClock", "RouseEventLoop", "RouseNetlink", "RouseSystem", "CRouseSys",
                "RouseTestSupport",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The first-run commands and the CLI's manners, through the built products.
        .testTarget(
            name: "RouseFirstRunTests",
            dependencies: ["RouseAgent", "RouseAgentCore", "RouseGateway", "RouseTestSupport"]
        ),
        .testTarget(
            name: "RouseStateTests",
            dependencies: [
                "RouseState", "RouseSystem", "RouseTestSupport",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "InMemoryLogging", package: "swift-log"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)

// MARK: Fuzzing
// `ROUSE_FUZZ=1` adds `rouse-fuzz`: one libFuzzer binary whose first argument names the parser it feeds (see
// docs/fuzzing.md). Only deploy/fuzz.sh sets it, building with `-sanitize=fuzzer,address` into `.build-fuzz`; the
// normal build, the tests and the target graph never see the target.
if Context.environment["ROUSE_FUZZ"] == "1" {
    package.targets += [
        // libFuzzer's `LLVMFuzzerRunDriver`, declared for Swift (the runtime comes with `-sanitize=fuzzer`).
        .target(name: "CRouseFuzz", path: "Tests/Fuzz/CRouseFuzz"),
        .executableTarget(
            name: "rouse-fuzz",
            dependencies: [
                "CRouseFuzz", "RouseAPNs", "RouseAgent", "RouseGateway", "RouseNetlink", "RouseState", "RouseWire",
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            path: "Tests/Fuzz/Harness"
        ),
    ]
}

// Guard rails for every Swift target, applied here so a target added later gets them without asking (as at the end of
// swift-log's Package.swift): Swift 6 language mode (strict concurrency, `swiftLanguageModes` above) everywhere,
// `any` on every existential, imports visible only where declared. `ROUSE_STRICT=1` (set by `deploy/test.sh`, so by
// CI) turns every warning into an error.
let strict = Context.environment["ROUSE_STRICT"] == "1"
for target in package.targets where [.executable, .test, .regular].contains(target.type) {
    var settings = target.swiftSettings ?? []
    settings.append(.enableUpcomingFeature("ExistentialAny"))
    settings.append(.enableUpcomingFeature("MemberImportVisibility"))
    if strict { settings.append(.treatAllWarnings(as: .error)) }
    target.swiftSettings = settings
}
