import Foundation

/// S2, the socket-woken phone: baresip registered over TCP through its handler (`deploy/sip/rouse-sip-bridge.py`),
/// which owns the connection to Kamailio and hands it to rouse-agent as its watched VoIP socket.
extension SIPLab {
    /// The S2 baresip's configuration directory.
    package var tcpBaresipDirectory: String { directory + "/baresip-tcp" }

    /// Writes the S2 baresip configuration: S0's with its own port and no control socket, and an account whose
    /// outbound proxy is the handler's bridge port (TCP), registering for `regint` seconds.
    func writeSocketWokenPhone(config: String) throws {
        try FileManager.default.createDirectory(atPath: tcpBaresipDirectory, withIntermediateDirectories: true)
        let tcpConfig = config.split(separator: "\n", omittingEmptySubsequences: false)
            .filter { !$0.contains("ctrl_tcp") }
            .map { $0.hasPrefix("sip_listen") ? "sip_listen        127.0.0.1:\(tcpPhonePort)" : String($0) }
            .joined(separator: "\n")
        try Data(tcpConfig.utf8).write(to: URL(fileURLWithPath: tcpBaresipDirectory + "/config"))
        let account =
            "<sip:\(user)@127.0.0.1:\(proxyPort);transport=tcp>;outbound=\"sip:127.0.0.1:\(bridgePort);transport=tcp\""
            + ";answermode=auto;regint=3600;audio_codecs=PCMU\n"
        try Data(account.utf8).write(to: URL(fileURLWithPath: tcpBaresipDirectory + "/accounts"))
        try Data().write(to: URL(fileURLWithPath: tcpBaresipDirectory + "/contacts"))
    }

    /// The S2 handler's command: `deploy/sip/rouse-sip-bridge.py` (Python, on `clients/python`'s library; give
    /// `PYTHONPATH=<clients>/python` in its environment), logging JSON lines to `log`.
    package func bridgeCommand(log: String, name: String = "phone", keepAlive: Int = 600) -> [String] {
        [
            "/usr/bin/python3", files + "/rouse-sip-bridge.py", "--name", name, "--registrar",
            "127.0.0.1:\(proxyPort)", "--listen", "\(bridgePort)", "--baresip", Self.baresip, "--baresip-config",
            tcpBaresipDirectory, "--keep-alive", "\(keepAlive)", "--log", log,
        ]
    }

    /// The CSeq of the softphone's binding in Kamailio's location table (`ul.dump`), nil when it has none.
    package func bindingCSeq() async throws -> Int? {
        let dump = try await kamcmd(["ul.dump"])
        guard dump.contains("AoR: \(user)") else { return nil }
        let line = dump.split(separator: "\n").first { $0.trimmingCharacters(in: .whitespaces).hasPrefix("CSeq:") }
        return line.flatMap { Int($0.split(separator: ":").last?.trimmingCharacters(in: .whitespaces) ?? "") }
    }
}
