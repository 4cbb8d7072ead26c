/// The request-validation flow every APNs-compatible server runs before it looks at the device token, shared
/// by the mock and the gateway so both answer the same request with the same reason.
///
/// Order (auth and connection errors before header errors before payload errors):
/// 1. `:method` (405 MethodNotAllowed), `:path` (404 BadPath, 400 MissingDeviceToken / BadDeviceToken);
/// 2. repeated pseudo-headers or APNs headers (400 DuplicateHeaders);
/// 3. credentials (`ProviderConnectionAuth.authenticate`);
/// 4. header syntax (`APNsRequestHeaders.validate`);
/// 5. topic against the credential (`ProviderConnectionAuth.authorizeTopic`);
/// 6. payload size (400 PayloadEmpty, 413 PayloadTooLarge).
///
/// What a device token means (unknown, other environment, unregistered) is the caller's business: step 7.
public enum APNsRequestValidator {
    /// A request that passed steps 1 to 6.
    public struct Accepted: Sendable, Hashable {
        /// The device token from `:path` (hex, as sent).
        public var deviceToken: String
        /// The validated headers; `topic` is set (filled from a single-topic certificate when absent).
        public var headers: APNsNotificationHeaders
    }

    /// Runs steps 1 to 6 for one request on a connection whose auth state is `auth`.
    ///
    /// - Parameters:
    ///   - headers: regular headers in wire order, lowercase names.
    ///   - duplicatePseudoHeaders: whether a pseudo-header was repeated or unknown.
    ///   - bodyLength: the total body length received (PayloadTooLarge is decided on it).
    ///   - isKeyActive: whether a provider key is still in force (see `ProviderConnectionAuth.authenticate`).
    public static func validate(
        method: String,
        path: String,
        headers: [(name: String, value: String)],
        duplicatePseudoHeaders: Bool,
        bodyLength: Int,
        auth: inout ProviderConnectionAuth,
        now: APNsTime,
        isKeyActive: (String) -> Bool = { _ in true }
    ) -> Result<Accepted, APNsReason> {
        if let reason = APNsRules.checkMethod(method) { return .failure(reason) }
        let deviceToken: Substring
        switch APNsRules.deviceToken(fromPath: path) {
        case .success(let parsed): deviceToken = parsed
        case .failure(let reason): return .failure(reason)
        }
        // "One or more headers are repeated." [RESP] — pseudo-headers included.
        if duplicatePseudoHeaders { return .failure(.duplicateHeaders) }
        let raw: APNsRequestHeaders
        switch APNsRequestHeaders.parse(headers) {
        case .success(let parsed): raw = parsed
        case .failure(let reason): return .failure(reason)
        }
        if let reason = auth.authenticate(authorization: raw.authorization, now: now, isKeyActive: isKeyActive) {
            return .failure(reason)
        }
        var validated: APNsNotificationHeaders
        switch raw.validate() {
        case .success(let value): validated = value
        case .failure(let reason): return .failure(reason)
        }
        if let reason = auth.authorizeTopic(&validated) { return .failure(reason) }
        if let reason = APNsRules.checkPayload(byteCount: bodyLength, pushType: validated.pushType) {
            return .failure(reason)
        }
        return .success(Accepted(deviceToken: String(deviceToken), headers: validated))
    }

    /// The `apns-id` to echo for a request: its own when canonical, else `nil` (the server generates one).
    public static func echoedID(_ headers: [(name: String, value: String)]) -> String? {
        for field in headers where field.name == "apns-id" {
            return APNsRules.isCanonicalUUID(field.value) ? field.value : nil
        }
        return nil
    }
}
