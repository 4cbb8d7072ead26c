import Foundation
import RouseGateway

/// The gateway's JSON configuration file: `GatewayConfiguration.parse` (GatewayConfigurationFile.swift) (unknown members, every field's type and
/// range, keys given as PEM text). File names resolve in an empty directory, so no file is read.
enum GatewayConfigFuzz {
    static let target = FuzzTarget(
        name: "gateway-config",
        summary: "GatewayConfiguration.parse (the gateway's JSON configuration)",
        run: run)

    static func run(_ bytes: [UInt8]) {
        _ = try? GatewayConfiguration.parse(
            data: Data(bytes), baseDirectory: "/nonexistent/rouse-fuzz", source: "fuzz.json")
    }
}
