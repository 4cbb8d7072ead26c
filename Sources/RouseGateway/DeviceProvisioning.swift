import RouseText

extension Gateway {
    /// Enrolls devices directly in `store`, without enrollment secrets (operators pre-provisioning a fleet, the
    /// benchmark): one transaction; returns each device's credential (`<id>.<secret>`) in `ids` order.
    package static func provisionDevices(store: any GatewayStore, ids: [String], now: Int64) throws -> [String] {
        for id in ids where !DeviceAPI.isValidDeviceID(id) { throw GatewayError.badRequest("bad device id '\(id)'") }
        return try store.write { transaction in
            var credentials: [String] = []
            credentials.reserveCapacity(ids.count)
            for id in ids {
                let secret = DeviceAPI.randomBytes(32)
                try transaction.insertDevice(
                    DeviceRecord(
                        id: id, authentication: .secret, credentialHash: DeviceSecrets.hash(secret), createdAt: now,
                        revokedAt: nil))
                credentials.append(id + "." + Hex.encode(secret))
            }
            return credentials
        }
    }

    /// Creates a live token for `topic` owned by each device (pre-provisioning, the benchmark).
    package static func provisionTokens(store: any GatewayStore, deviceIDs: [String], topic: String, now: Int64) throws
        -> [String]
    {
        try store.write { transaction in
            try deviceIDs.map { id in
                let token = TokenRecord(
                    token: Hex.encode(DeviceAPI.randomBytes(32)), deviceID: id, topic: topic, createdAt: now,
                    revokedAt: nil)
                try transaction.insertToken(token)
                return token.token
            }
        }
    }
}
