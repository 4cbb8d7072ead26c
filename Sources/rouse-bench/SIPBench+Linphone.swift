import Foundation
import RouseChildProcess
import RouseSIPLab

/// The RFC 8599 variant of `rouse-bench sip`: liblinphone (linphone-daemon from Debian's linphone-cli) as the
/// softphone, its push token in its REGISTER's Contact parameters, so Kamailio learns it from the REGISTER
/// (`deploy/sip/rouse-linphone-handler.py`, `RouseSIPLab.LinphonePhone`). S0 with linphone awake (its REGISTER
/// teaches the proxy the token), then S1 with nothing running (push, launch, linphone's REGISTER, answer).
extension SIPBench {
    /// The linphone handler's topic (its own VoIP token).
    static let linphoneTopic = "com.example.lp"

    /// The linphone handler's file (`phone-linphone`), logging to `log`.
    static func linphoneHandlerFile(phone: LinphonePhone, clients: String, log: String) -> String {
        phone.handlerFile(topic: linphoneTopic, clients: clients, log: log, name: "phone-linphone")
    }

    /// S0 and S1 with linphone: `calls` calls each; the two runs.
    static func linphone(
        lab: SIPLab, phone: LinphonePhone, token: String, clients: String, directory: String, calls: Int,
        periodMs: Int
    ) async throws -> (awake: SIPCallRun, woken: SIPCallRun) {
        let awakePhone = try phone.startAwake(
            token: token, topic: linphoneTopic + ".voip", clients: clients, log: directory + "/linphone-awake.jsonl")
        try await SIPLab.until("linphone registered", timeout: .seconds(30)) { try await lab.registered(phone.user) }
        let awake = try await lab.calls("l0", count: calls, period: .milliseconds(100), callee: phone.user)
        awakePhone.terminate()
        _ = try await awakePhone.wait(timeout: .seconds(10))
        try await SIPLab.until("linphone's binding gone") { try await !lab.registered(phone.user) }
        let woken = try await lab.calls("l1", count: calls, period: .milliseconds(periodMs), callee: phone.user)
        return (awake, woken)
    }
}
