import Foundation
import Logging

extension Agent {
    /// `{"handlers":[{"topic":…,"strikes":…,"voipBlocked":…}]}` by topic (handlers sharing a topic are merged:
    /// most strikes, blocked if any is), sorted by topic.
    func handlerReport() -> String {
        var byTopic: [String: (strikes: Int, blocked: Bool)] = [:]
        for slot in slots.values {
            let topic = slot.configuration.topic
            let old = byTopic[topic] ?? (0, false)
            byTopic[topic] = (
                max(old.strikes, slot.machine.strikeCount), old.blocked || slot.machine.voipBlocked
            )
        }
        let items = byTopic.keys.sorted().map { topic in
            let value = byTopic[topic]!
            let quoted = (try? JSONEncoder().encode(topic)).map { String(decoding: $0, as: UTF8.self) } ?? "\"\""
            return "{\"topic\":\(quoted),\"strikes\":\(value.strikes),\"voipBlocked\":\(value.blocked)}"
        }
        return "{\"handlers\":[" + items.joined(separator: ",") + "]}"
    }

    /// Sends the handler report to the gateway when it differs from the one the gateway last accepted (after
    /// a channel open: always once). Runs beside push handling, one request at a time; a failure is logged and
    /// retried on the next change or channel open.
    func reportHandlers() {
        guard !handlerReportSending, state.deviceID != nil, channelState == .open else { return }
        let body = handlerReport()
        guard body != handlerReportSent else { return }
        handlerReportSending = true
        let api = self.api
        let credential = state.credential
        handlerReportTask = Task {
            do {
                try await api.reportHandlers(body, credential: credential)
                self.handlerReportDone(body, error: nil)
            } catch {
                self.handlerReportDone(nil, error: error)
            }
        }
    }

    private func handlerReportDone(_ sent: String?, error: (any Error)?) {
        handlerReportSending = false
        handlerReportTask = nil
        if let error {
            logger.warning("handler report not accepted by the gateway", metadata: ["error": "\(error)"])
        } else {
            handlerReportSent = sent
            logger.debug("handler report accepted", metadata: ["report": "\(sent ?? "")"])
        }
        if handlerReportOwed {
            // The channel opened while it was on its way: the once-per-open report is still owed (one attempt).
            handlerReportOwed = false
            handlerReportSent = nil
        } else if error != nil {
            return  // retried at the next change or channel open
        }
        // Something may have changed while it was on its way.
        reportHandlers()
    }
}
