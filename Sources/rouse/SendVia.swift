import ArgumentParser
import FoundationEssentials
import RouseAPNs
import RousePush
import RousePushCore
import RouseSender
import RouseSystem
import RouseText

/// `rouse send --via SOCKET`: the same pushes, options and output as `rouse send`, sent through rouse-pushd's API
/// (its warm connections and credentials) in batches of at most 500.
struct SendVia {
    let command: SendCommand
    let settings: SendSettings
    let socket: String

    func run() async throws {
        let c = command
        let report = SendReport(total: settings.tokens.count, json: c.json)
        let client = PushServiceClient(socketPath: socket)
        let template = settings.push
        let type = template.pushType
        var index = 0
        while index < settings.tokens.count {
            let slice = settings.tokens[index..<min(index + 500, settings.tokens.count)]
            index += slice.count
            let requests = slice.map { token in
                PushAPIRequest(
                    app: c.app, token: token, type: type, topic: c.topic ?? (c.app == nil ? template.topic : nil),
                    payload: settings.givenPayload, priority: c.priority, expiration: c.expiration,
                    collapseID: c.collapseID, apnsID: c.apnsID, deadlineMs: Int(c.deadline * 1000))
            }
            let outcomes: [PushAPIOutcome]
            do {
                switch try client.send(requests) {
                case .success(let o): outcomes = o
                case .failure(let refusal):
                    Sys.writeStandardError("rouse send: rouse-pushd refused: \(refusal)\n")
                    throw ExitCode(
                        refusal.description.hasPrefix("429") || refusal.description.hasPrefix("503") ? 2 : 64)
                }
            } catch let error as PushServiceClient.ClientError {
                Sys.writeStandardError("rouse send: \(error)\n")
                throw ExitCode(2)
            }
            for (request, outcome) in zip(requests, outcomes) {
                var push = template
                push.deviceToken = request.token
                push.apnsID = outcome.apnsID
                report.add(
                    PushResult(
                        push: push, outcome: Self.outcome(outcome), attempts: outcome.attempts,
                        retries: outcome.retries, latency: .microseconds(Int64(outcome.latencyMs * 1000)),
                        refusedBeforeSending: outcome.preflight))
            }
        }
        report.printSummary()
        if let pruneFile = c.pruneFile {
            do {
                try report.pruneLines().write(toFile: pruneFile, atomically: true, encoding: .utf8)
            } catch {
                throw SendUsageError(message: "cannot write \(pruneFile): \(error)")
            }
        }
        let code = report.exitCode
        if code != 0 { throw ExitCode(code) }
    }

    /// The sender's outcome an API outcome stands for.
    static func outcome(_ o: PushAPIOutcome) -> PushOutcome {
        switch o.kind {
        case .delivered: return .delivered(apnsID: o.apnsID ?? "")
        case .rejected: return .rejected(reason: APNsReason(rawValue: o.reason ?? ""), timestamp: o.timestamp)
        case .failed:
            let text = o.error ?? ""
            let kind = text.split(separator: ":", maxSplits: 1).first.map(String.init) ?? ""
            let detail = text.firstRange(ofText: ": ").map { String(text[$0.upperBound...]) } ?? ""
            let error: SendError =
                switch kind {
                case "connect": .connect(detail)
                case "deadline": .deadline(detail)
                case "shutdown": .shutdown
                case "goAway": .goAway(detail)
                case "tooManyResends": .tooManyResends(detail)
                case "configuration": .configuration(detail)
                case "credentials": .credentials(detail)
                default: .transport(detail)
                }
            return .failed(error, processed: o.processed == "no" ? .no : .unknown)
        }
    }
}
