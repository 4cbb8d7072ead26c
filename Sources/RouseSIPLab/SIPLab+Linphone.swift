import Foundation
import RouseChildProcess
import RouseSystem

/// The RFC 8599 variant: a liblinphone softphone (linphone-daemon, Debian's linphone-cli 5.1) whose REGISTER carries
/// the VoIP push token as Contact URI parameters (`pn-provider=apns;pn-prid=<token>:voip;pn-param=<team>.<topic>`),
/// so that Kamailio learns it from the REGISTER (no `kamcmd` upload). Its handler is
/// `deploy/sip/rouse-linphone-handler.py`, which also runs it awake (`--awake`, the S0 reference).
package struct LinphonePhone: Sendable {
    /// linphone-daemon, from Debian's package linphone-cli.
    package static let daemon = "/usr/bin/linphone-daemon"
    /// The team id in `pn-param` (the test PKI's).
    package static let team = "ROUSETEAM1"

    /// The AOR user (not baresip's: both may be registered in one lab).
    package let user = "carol"
    /// linphone's SIP port (UDP, on 127.0.0.1).
    package let sipPort: UInt16
    /// linphone's RTP port.
    package let rtpPort: UInt16
    /// The configuration template (`[proxy_0]` last: the handler appends `contact_uri_parameters`).
    package let template: String
    /// Where the handler keeps linphone's configuration and log (`linphonerc`, `linphone.log`).
    package let stateDirectory: String
    /// `deploy/sip` (the handler).
    let files: String

    /// The handler's command (Python, on `clients/python`'s library: give `PYTHONPATH=<clients>/python` in its
    /// environment), logging JSON lines to `log`.
    package func handlerCommand(log: String, name: String = "phone") -> [String] {
        [
            "/usr/bin/python3", files + "/rouse-linphone-handler.py", "--name", name, "--linphone", Self.daemon,
            "--linphone-config", template, "--state-dir", stateDirectory, "--team", Self.team, "--log", log,
        ]
    }

    /// The handler file (`handlers.d/NAME.toml`) for `topic` (`clients`: the repository's `clients/`).
    package func handlerFile(topic: String, clients: String, log: String, name: String = "phone") -> String {
        """
        topic = "\(topic)"
        command = [\(handlerCommand(log: log, name: name).map { "\"\($0)\"" }.joined(separator: ", "))]
        push-types = ["voip"]
        allow-root = true
        environment = ["PYTHONPATH=\(clients)/python"]

        """
    }

    /// Starts the phone awake and registered (the S0 reference) through the handler's `--awake` mode, with the
    /// VoIP `token` and `topic` (`<bundle>.voip`) the agent would give the handler; SIGTERM makes it
    /// un-REGISTER and exit.
    package func startAwake(token: String, topic: String, clients: String, log: String) throws -> RunningChild {
        try ChildProcess.start(
            "/usr/bin/python3",
            [
                files + "/rouse-linphone-handler.py", "--awake", "--linphone", Self.daemon, "--linphone-config",
                template, "--state-dir", stateDirectory + "-awake", "--team", Self.team, "--token", token,
                "--topic", topic, "--log", log,
            ],
            environment: ProcessInfo.processInfo.environment.merging(["PYTHONPATH": clients + "/python"]) { $1 })
    }
}

extension SIPLab {
    /// Writes the linphone phone's configuration template into the lab's directory (ports picked free), registering
    /// `user` at the lab's Kamailio over UDP. Headless liblinphone 5.1 needs `[storage] uri=null`: without a
    /// database it can open (`~/.local/share/linphone` is absent), `linphone_core_start()` throws before it applies
    /// its SIP transports, and the phone never listens nor REGISTERs (docs/softphone.md).
    package func linphonePhone() throws -> LinphonePhone {
        try ChildProcess.require(LinphonePhone.daemon)
        let directory = self.directory + "/linphone"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        var sipPort = try Sys.freeLoopbackPort()
        let taken = [
            proxyPort, phonePort, phonePort + 1, controlPort, callerPort, tcpPhonePort, tcpPhonePort + 1, bridgePort,
        ]
        while taken.contains(sipPort) {
            sipPort = try Sys.freeLoopbackPort()
        }
        let phone = LinphonePhone(
            sipPort: sipPort, rtpPort: try Sys.freeLoopbackPort(), template: directory + "/linphonerc.template",
            stateDirectory: directory + "/state", files: files)
        let config = """
            [sip]
            sip_port=\(phone.sipPort)
            sip_tcp_port=0
            sip_tls_port=0
            bind_address=127.0.0.1
            use_ipv6=0
            default_proxy=0

            [rtp]
            audio_rtp_port=\(phone.rtpPort)

            [video]
            automatically_initiate=0
            automatically_accept=0

            [storage]
            uri=null
            call_logs_db_uri=null
            zrtp_secrets_db_uri=null

            [proxy_0]
            reg_proxy=<sip:127.0.0.1:\(proxyPort);transport=udp>
            reg_identity=sip:\(phone.user)@127.0.0.1
            reg_sendregister=1
            reg_expires=300

            """
        try Data(config.utf8).write(to: URL(fileURLWithPath: phone.template))
        return phone
    }

    /// Whether `aor`'s user has a binding in Kamailio's location table.
    package func registered(_ aor: String) async throws -> Bool {
        try await kamcmd(["ul.dump"]).contains("AoR: \(aor)\n")
    }

    /// The value Kamailio's htable `table` holds for `key` (`pn`: the push token, `pt`: the topic), nil if none.
    package func stored(_ table: String, _ key: String) async throws -> String? {
        let dump = try await kamcmd(["htable.dump", table]).split(separator: "\n")
            .map { $0.trimmingCharacters(in: .whitespaces) }
        guard let name = dump.firstIndex(of: "name: \(key)"), name + 1 < dump.count,
            dump[name + 1].hasPrefix("value: ")
        else { return nil }
        return String(dump[name + 1].dropFirst("value: ".count))
    }
}
