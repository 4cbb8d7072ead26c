// swift-tools-version:6.2
import PackageDescription

/// Guard rails for every Swift target: Swift 6 language mode (strict concurrency) everywhere.
/// `ROUSE_STRICT=1` (set by `deploy/test.sh`, so by CI) turns every warning into an error.
let strict = Context.environment["ROUSE_STRICT"] == "1"
let swiftSettings: [SwiftSetting] =
    [
        .enableUpcomingFeature("ExistentialAny"),
        .enableUpcomingFeature("MemberImportVisibility"),
    ] + (strict ? [.treatAllWarnings(as: .error)] : [])

let package = Package(
    name: "rouse",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "rouse", targets: ["rouse"]),
        .executable(name: "rouse-bench", targets: ["rouse-bench"]),
        .executable(name: "rouse-gateway", targets: ["rouse-gateway"]),
        .executable(name: "rouse-agent", targets: ["rouse-agent"]),
        .executable(name: "rouse-example-handler", targets: ["rouse-example-handler"]),
        .executable(name: "rouse-reach", targets: ["rouse-reach"]),
        .library(name: "RouseAgent", targets: ["RouseAgent"]),
        .library(name: "RouseAgentClient", targets: ["RouseAgentClient"]),
        .library(name: "RouseGateway", targets: ["RouseGateway"]),
        .library(name: "RouseAPNs", targets: ["RouseAPNs"]),
        .library(name: "RouseHTTP2", targets: ["RouseHTTP2"]),
        .library(name: "RouseMockAPNs", targets: ["RouseMockAPNs"]),
        .library(name: "RouseReachability", targets: ["RouseReachability"]),
        .library(name: "RouseState", targets: ["RouseState"]),
        .library(name: "RouseSender", targets: ["RouseSender"]),
        .library(name: "RouseActivation", targets: ["RouseActivation"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.5.2"),
        .package(url: "https://github.com/apple/swift-asn1.git", from: "1.7.4"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/groue/GRDB.swift.git", from: "7.10.0"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
    ],
    targets: [
        // MARK: C at the edge
        .systemLibrary(name: "CCurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"])]),
        .systemLibrary(name: "CNghttp2", pkgConfig: "libnghttp2", providers: [.apt(["libnghttp2-dev"])]),
        .systemLibrary(name: "COpenSSL", pkgConfig: "openssl", providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CLibPQ", pkgConfig: "libpq", providers: [.apt(["libpq-dev"])]),
        // One C shim per binding, each linking only its own library: syscalls, processes and rtnetlink (libc only),
        // curl's variadic calls (libcurl only), OpenSSL's macros (OpenSSL only).
        .target(name: "CRouseSys"),
        .target(name: "CRouseCurl", dependencies: ["CCurl"]),
        .target(name: "CRouseOpenSSL", dependencies: ["COpenSSL"]),

        // MARK: Pure Swift models (no C module)
        // The two protocols our programs speak to each other: the device channel, the agent IPC.
        .target(name: "RouseWire", swiftSettings: swiftSettings),
        .target(
            name: "RouseAPNs",
            dependencies: [
                "RouseWire",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ],
            swiftSettings: swiftSettings
        ),
        .target(name: "RouseActivation", swiftSettings: swiftSettings),
        // The agent's rules as value-type machines (handler lifecycle, device channel, transfers, fetch, de-duplication):
        // state in, actions out, no I/O; RouseAgent is the shell that performs what they return.
        .target(name: "RouseAgentCore", dependencies: ["RouseClock"], swiftSettings: swiftSettings),
        // The one clock (monotonic + wall) every shell reads, and the manual clock tests advance.
        .target(name: "RouseClock", swiftSettings: swiftSettings),
        // `--version` of every binary; deploy/package.sh stamps release builds.
        .target(name: "RouseBuildInfo", swiftSettings: swiftSettings),

        // MARK: Bindings
        .target(name: "RouseSystem", dependencies: ["CRouseSys"], swiftSettings: swiftSettings),
        // Child processes for the tests and the rouse-bench executable (posix_spawn with only fds 0-2, through
        // RouseSystem); no daemon and no library product links it (the daemons' short children go through RouseState's
        // ShortChild).
        .target(name: "RouseChildProcess", dependencies: ["RouseSystem"], swiftSettings: swiftSettings),
        // Kamailio, baresip and SIPp on loopback (deploy/sip) for the SIP end-to-end test and `rouse-bench sip`.
        .target(name: "RouseSIPLab", dependencies: ["RouseChildProcess", "RouseSystem"], swiftSettings: swiftSettings),
        // The epoll loop, its timers and the daemons' executor on it: libc only, so every product can wait on it.
        .target(
            name: "RouseEventLoop", dependencies: ["CRouseSys", "RouseClock", "RouseSystem"],
            swiftSettings: swiftSettings),
        .target(
            name: "RouseHTTP2",
            dependencies: [
                "CNghttp2", "COpenSSL", "CRouseOpenSSL", "CRouseSys", "RouseClock", "RouseEventLoop", "RouseSystem",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "RouseCurl",
            dependencies: ["CCurl", "CRouseCurl", .product(name: "Logging", package: "swift-log")],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "RouseNetlink",
            dependencies: ["CRouseSys", "RouseSystem"],
            swiftSettings: swiftSettings
        ),

        // MARK: Products
        .target(
            name: "RouseMockAPNs",
            dependencies: [
                "RouseAPNs", "RouseClock", "RouseHTTP2", "RouseSystem",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "RouseReachability",
            dependencies: [
                "RouseEventLoop", "RouseNetlink", "RouseSystem", "RouseWire",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "RouseGateway",
            dependencies: [
                "RouseAPNs", "RouseClock", "RouseEventLoop", "RouseHTTP2", "RouseSystem", "RouseWire", "CLibPQ",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "RouseSender",
            dependencies: [
                "RouseAPNs", "RouseClock", "RouseEventLoop", "RouseHTTP2", "RouseCurl",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
            ],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "RouseState",
            dependencies: [
                "RouseSystem",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "RouseDaemon",
            dependencies: ["RouseEventLoop", "RouseWire", .product(name: "Logging", package: "swift-log")],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "RouseAgentClient",
            dependencies: ["RouseActivation", "RouseSystem", "RouseWire"],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "RouseAgent",
            dependencies: [
                "RouseAgentClient", "RouseAgentCore", "RouseActivation", "RouseClock", "RouseCurl", "RouseReachability",
                "RouseState", "RouseSystem", "RouseWire",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),

        // MARK: Executables
        .executableTarget(
            name: "rouse-agent",
            dependencies: [
                "RouseAgent", "RouseDaemon", "RouseState", "RouseBuildInfo",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "rouse-example-handler",
            dependencies: ["RouseAgentClient", "RouseActivation", "RouseWire"],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "rouse",
            dependencies: [
                "RouseAPNs", "RouseMockAPNs", "RouseReachability", "RouseNetlink", "RouseGateway", "RouseSender",
                "RouseAgentClient", "RouseActivation", "RouseAgent", "RouseAgentCore", "RouseState", "RouseBuildInfo",
                "RouseDaemon", "RouseClock",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),
        // `rouse reach watch` without Foundation, ArgumentParser or the C libraries `rouse` links.
        .executableTarget(
            name: "rouse-reach",
            dependencies: ["RouseReachability", "RouseSystem", .product(name: "Logging", package: "swift-log")],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "rouse-gateway",
            dependencies: [
                "RouseGateway", "RouseDaemon", "RouseBuildInfo",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "rouse-bench",
            dependencies: [
                "RouseAPNs", "RouseHTTP2", "RouseReachability", "RouseNetlink", "RouseSystem", "RouseGateway",
                "RouseCurl", "RouseState", "RouseActivation", "RouseSender", "RouseAgent", "RouseAgentClient",
                "RouseAgentCore", "RouseChildProcess", "RouseDaemon", "RouseClock", "RouseEventLoop", "RouseSIPLab",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "rouse-state-crasher",
            dependencies: ["RouseState", .product(name: "Logging", package: "swift-log")],
            swiftSettings: swiftSettings
        ),

        // MARK: Tests
        .target(
            name: "RouseTestSupport", dependencies: ["RouseChildProcess"], path: "Tests/RouseTestSupport",
            swiftSettings: swiftSettings),
        .testTarget(name: "RouseAPNsTests", dependencies: ["RouseAPNs"], swiftSettings: swiftSettings),
        .testTarget(name: "RouseWireTests", dependencies: ["RouseWire"], swiftSettings: swiftSettings),
        .testTarget(name: "RouseClockTests", dependencies: ["RouseClock"], swiftSettings: swiftSettings),
        .testTarget(name: "RouseAgentCoreTests", dependencies: ["RouseAgentCore"], swiftSettings: swiftSettings),
        .testTarget(
            name: "RouseEventLoopTests", dependencies: ["RouseEventLoop", "RouseClock"], swiftSettings: swiftSettings),
        .testTarget(
            name: "RouseHTTP2Tests",
            dependencies: [
                "RouseHTTP2", "RouseClock", "RouseEventLoop", "RouseSystem", "RouseCurl", "RouseTestSupport",
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "RouseMockAPNsTests",
            dependencies: ["RouseMockAPNs", "RouseAPNs", "RouseCurl", "RouseTestSupport"],
            resources: [],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "RouseSenderTests",
            dependencies: ["RouseSender", "RouseMockAPNs", "RouseAPNs", "RouseClock", "RouseTestSupport"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "RouseActivationTests", dependencies: ["RouseActivation", "RouseTestSupport"],
            swiftSettings: swiftSettings),
        .testTarget(
            name: "RouseGatewayTests",
            dependencies: [
                "RouseGateway", "RouseHTTP2", "RouseCurl", "RouseAPNs", "RouseClock", "RouseEventLoop",
                "RouseTestSupport",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "InMemoryLogging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "RouseAgentTests",
            dependencies: [
                "RouseAgent", "RouseAgentClient", "RouseAgentCore", "RouseClock", "RouseGateway", "RouseHTTP2",
                "RouseTestSupport", "RouseAPNs", "RouseActivation", "RouseChildProcess", "RouseDaemon",
                "RouseEventLoop", "RouseSIPLab",
                "RouseSystem", "RouseWire",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "RouseReachabilityTests",
            dependencies: [
                "RouseReachability", "RouseEventLoop", "RouseNetlink", "RouseSystem", "CRouseSys", "RouseTestSupport",
            ],
            swiftSettings: swiftSettings
        ),
        // The first-run commands and the CLI's manners, through the built products.
        .testTarget(
            name: "RouseFirstRunTests",
            dependencies: ["RouseAgent", "RouseAgentCore", "RouseGateway", "RouseTestSupport"],
            swiftSettings: swiftSettings),
        .testTarget(
            name: "RouseStateTests",
            dependencies: [
                "RouseState", "RouseSystem", "RouseTestSupport",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "InMemoryLogging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
    ],
    swiftLanguageModes: [.v6]
)
