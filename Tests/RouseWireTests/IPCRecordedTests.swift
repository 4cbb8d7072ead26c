import Foundation
import RouseWire
import Testing

/// The agent's IPC frames as the previous version wrote them (one `AgentMessage` struct, recorded from
/// `FrameCodec.encode` at each place that built one), with the typed value each one is. Handlers built against
/// the previous client and agents of the previous version must keep understanding ours, byte for byte.
@Suite("IPC messages: one typed model, the recorded JSON of version 1")
struct IPCRecordedTests {
    static let requests: [(json: String, frame: IPCFrame<AgentRequest>)] = [
        (#"{"handler":"voip","type":"register","v":1}"#, .init(.register(.init(handler: "voip")))),
        (
            #"{"handler":"voip","preserves":true,"type":"register","v":1}"#,
            .init(.register(.init(handler: "voip", preserves: true)))
        ),
        (
            #"{"callID":"call-12","pushID":"12","type":"reportCall","v":1}"#,
            .init(.reportCall(.init(pushID: "12", callID: "call-12")))
        ),
        (
            #"{"callID":"out-1","category":"playAndRecord","mode":"voiceChat","options":["mixWithOthers","duckOthers"],"#
                + #""type":"reportCall","v":1}"#,
            .init(
                .reportCall(
                    .init(
                        pushID: nil, callID: "out-1", category: "playAndRecord", mode: "voiceChat",
                        options: ["mixWithOthers", "duckOthers"])))
        ),
        (
            #"{"callID":"call-12","notifyOthers":true,"type":"callEnded","v":1}"#,
            .init(.callEnded(.init(callID: "call-12", notifyOthers: true)))
        ),
        (
            #"{"callID":"call-12","notifyOthers":false,"type":"callEnded","v":1}"#,
            .init(.callEnded(.init(callID: "call-12", notifyOthers: false)))
        ),
        (
            #"{"pushID":"13","result":"newData","type":"complete","v":1}"#,
            .init(.complete(.init(pushID: "13", result: "newData")))
        ),
        (#"{"taskName":"upload","type":"beginTask","v":1}"#, .init(.beginTask(.init(taskName: "upload")))),
        (#"{"taskID":3,"type":"endTask","v":1}"#, .init(.endTask(.init(taskID: 3)))),
        (#"{"state":"active","type":"setState","v":1}"#, .init(.setState(.init(state: "active")))),
        (
            #"{"acceptsDelay":false,"category":"playback","mode":"spokenAudio","options":["mixWithOthers"],"#
                + #""requestID":1,"role":"media","session":"music","type":"activate","v":1}"#,
            .init(
                .activate(
                    .init(
                        session: "music", category: "playback", mode: "spokenAudio", options: ["mixWithOthers"],
                        role: "media", acceptsDelay: false)), requestID: 1)
        ),
        (
            #"{"acceptsDelay":true,"category":"record","options":["duckOthers"],"requestID":2,"role":"assistant","#
                + #""session":"talk","type":"activate","v":1}"#,
            .init(
                .activate(
                    .init(
                        session: "talk", category: "record", options: ["duckOthers"], role: "assistant",
                        acceptsDelay: true)), requestID: 2)
        ),
        (
            #"{"notifyOthers":true,"requestID":3,"session":"music","type":"deactivate","v":1}"#,
            .init(.deactivate(.init(session: "music", notifyOthers: true)), requestID: 3)
        ),
        (
            #"{"pieces":{"calls":"","calls\/call-1\/ui":"dWkgb2YgImNhbGwtMSI=","settings\/editor":"Zm9udD1tb25v"},"#
                + #""type":"preserve","v":1,"version":"example\/1"}"#,
            .init(
                .preserve(
                    .init(
                        pieces: [
                            "calls": "", "calls/call-1/ui": "dWkgb2YgImNhbGwtMSI=", "settings/editor": "Zm9udD1tb25v",
                        ], version: "example/1")))
        ),
        (#"{"accepted":true,"type":"restoreReply","v":1}"#, .init(.restoreReply(.init(accepted: true)))),
        (
            #"{"accepted":true,"failedAt":"settings\/editor","skipped":["calls\/call-1","calls\/call-1\/ui"],"#
                + #""type":"restoreReply","v":1}"#,
            .init(
                .restoreReply(
                    .init(
                        accepted: true, skipped: ["calls/call-1", "calls/call-1/ui"], failedAt: "settings/editor")))
        ),
        (#"{"accepted":false,"type":"restoreReply","v":1}"#, .init(.restoreReply(.init(accepted: false)))),
        (#"{"type":"status","v":1}"#, .init(.status)),
        (#"{"requestID":4,"type":"status","v":1}"#, .init(.status, requestID: 4)),
        (#"{"type":"sessions","v":1}"#, .init(.sessions)),
        (#"{"type":"rotateKey","v":1}"#, .init(.rotateKey)),
        (#"{"handler":"voip","type":"reregister","v":1}"#, .init(.reregister(.init(handler: "voip")))),
        (
            #"{"handler":"voip","state":"started","type":"userControl","v":1}"#,
            .init(.userControl(.init(handler: "voip", state: "started")))
        ),
        (
            #"{"handler":"voip","state":"stopped","type":"userControl","v":1}"#,
            .init(.userControl(.init(handler: "voip", state: "stopped")))
        ),
        (
            #"{"reason":"oldDeviceUnavailable","type":"routeChanged","v":1}"#,
            .init(.routeChanged(.init(reason: "oldDeviceUnavailable")))
        ),
        // Background transfers.
        (
            #"{"requestID":4,"session":"s1","type":"transferSession","v":1}"#,
            .init(.transferSession(.init(session: "s1")), requestID: 4)
        ),
        (
            #"{"headers":["Accept: *\/*"],"kind":"download","requestID":5,"session":"s1","type":"addTransfer","url":"https:\/\/example.com\/a","v":1}"#,
            .init(
                .addTransfer(
                    .init(session: "s1", kind: "download", url: "https://example.com/a", headers: ["Accept: */*"])),
                requestID: 5)
        ),
        (
            #"{"descriptor":true,"kind":"upload","method":"POST","session":"s1","type":"addTransfer","url":"https:\/\/example.com\/u","v":1}"#,
            .init(
                .addTransfer(
                    .init(session: "s1", kind: "upload", url: "https://example.com/u", method: "POST", descriptor: true)
                ))
        ),
        (
            #"{"session":"s1","taskID":3,"type":"cancelTransfer","v":1}"#,
            .init(.cancelTransfer(.init(session: "s1", taskID: 3)))
        ),
        (#"{"session":"s1","type":"transfersHandled","v":1}"#, .init(.transfersHandled(.init(session: "s1")))),
        (#"{"requestID":9,"type":"transfers","v":1}"#, .init(.transfers, requestID: 9)),
        (
            #"{"fetchID":"fetch-3","requestID":10,"result":"noData","type":"fetchComplete","v":1}"#,
            .init(.fetchComplete(.init(fetchID: "fetch-3", result: "noData")), requestID: 10)
        ),
        // The socket-woken VoIP model (docs/voip-sockets.md): written by this version, not version 1's recordings.
        (
            #"{"descriptor":true,"requestID":11,"type":"addVoIPSocket","v":1}"#,
            .init(.addVoIPSocket(.init()), requestID: 11)
        ),
        (
            #"{"requestID":12,"socketID":1,"type":"removeVoIPSocket","v":1}"#,
            .init(.removeVoIPSocket(.init(socketID: 1)), requestID: 12)
        ),
        (
            #"{"requestID":13,"type":"voipWakeHandled","v":1,"wakeID":"wake-4"}"#,
            .init(.voipWakeHandled(.init(wakeID: "wake-4")), requestID: 13)
        ),
        (
            #"{"requestID":14,"seconds":600,"type":"setKeepAlive","v":1}"#,
            .init(.setKeepAlive(.init(seconds: 600)), requestID: 14)
        ),
        (#"{"requestID":15,"type":"clearKeepAlive","v":1}"#, .init(.clearKeepAlive, requestID: 15)),
        (#"{"requestID":43,"type":"restorationFinished","v":1}"#, .init(.restorationFinished, requestID: 43)),
        (
            #"{"keepAliveID":"keepalive-2","requestID":16,"type":"keepAliveDone","v":1}"#,
            .init(.keepAliveDone(.init(keepAliveID: "keepalive-2")), requestID: 16)
        ),
        (
            #"{"data":"aGVsbG8=","name":"call-log","op":"write","protection":"complete","requestID":30,"type":"protectedFile","v":1}"#,
            .init(
                .protectedFile(.init(op: .write, name: "call-log", protection: "complete", data: "aGVsbG8=")),
                requestID: 30)
        ),
        (
            #"{"afterSeconds":120,"body":"Ready","identifier":"tea","requestID":40,"type":"scheduleNotification","v":1}"#,
            .init(.scheduleNotification(.init(identifier: "tea", body: "Ready", afterSeconds: 120)), requestID: 40)
        ),
        (
            #"{"requestID":41,"type":"listNotifications","v":1}"#,
            .init(.listNotifications(.init()), requestID: 41)
        ),
        (
            #"{"identifiers":["tea"],"requestID":42,"type":"cancelNotifications","v":1}"#,
            .init(.cancelNotifications(.init(identifiers: ["tea"])), requestID: 42)
        ),
    ]

    static let events: [(json: String, frame: IPCFrame<AgentEvent>)] = [
        (
            #"{"handler":"voip","launchReason":"voipPush","type":"registered","v":1}"#,
            .init(.registered(.init(handler: "voip", launchReason: "voipPush")))
        ),
        (
            #"{"token":"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08","#
                + #""topic":"com.example.rouse.voip","type":"credentials","v":1}"#,
            .init(
                .credentials(
                    .init(
                        topic: "com.example.rouse.voip",
                        token: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08")))
        ),
        (
            #"{"apnsID":"3E1D5B0C-7C56-4D8E-9C2B-6A1E0E2A5F10","mustReport":true,"payload":"eyJjYWxsIjoiYWxpY2UvMSJ9","#
                + #""pushID":"12","pushType":"voip","seconds":5,"topic":"com.example.rouse.voip","type":"push","v":1}"#,
            .init(
                .push(
                    .init(
                        pushID: "12", pushType: "voip", topic: "com.example.rouse.voip",
                        payload: "eyJjYWxsIjoiYWxpY2UvMSJ9", apnsID: "3E1D5B0C-7C56-4D8E-9C2B-6A1E0E2A5F10",
                        mustReport: true, seconds: 5)))
        ),
        (
            #"{"apnsID":"13","payload":"eyJhcHMiOnsiY29udGVudC1hdmFpbGFibGUiOjF9fQ==","pushID":"13","#
                + #""pushType":"background","seconds":29.5,"topic":"com.example.rouse","type":"push","v":1}"#,
            .init(
                .push(
                    .init(
                        pushID: "13", pushType: "background", topic: "com.example.rouse",
                        payload: "eyJhcHMiOnsiY29udGVudC1hdmFpbGFibGUiOjF9fQ==", apnsID: "13", mustReport: nil,
                        seconds: 29.5)))
        ),
        (
            #"{"taskID":1,"taskName":"upload","type":"taskBegun","v":1}"#,
            .init(.taskBegun(.init(taskID: 1, taskName: "upload")))
        ),
        (
            #"{"seconds":4.25,"taskID":1,"taskName":"upload","type":"taskExpiring","v":1}"#,
            .init(.taskExpiring(.init(taskID: 1, taskName: "upload", seconds: 4.25)))
        ),
        (#"{"state":"background","type":"lifecycle","v":1}"#, .init(.lifecycle(.init(state: "background")))),
        (#"{"reachable":true,"type":"reachability","v":1}"#, .init(.reachability(.init(reachable: true)))),
        (#"{"reachable":false,"type":"reachability","v":1}"#, .init(.reachability(.init(reachable: false)))),
        (
            #"{"detail":"{\"channel\":\"open\",\"handlers\":[{\"name\":\"voip\",\"command\":\"\/usr\/bin\/x\"}]}","#
                + #""requestID":4,"type":"statusReply","v":1}"#,
            .init(
                .statusReply(.init(detail: #"{"channel":"open","handlers":[{"name":"voip","command":"/usr/bin/x"}]}"#)),
                requestID: 4)
        ),
        (#"{"detail":"{}","type":"statusReply","v":1}"#, .init(.statusReply(.init(detail: "{}")))),
        (
            #"{"event":"granted","requestID":1,"session":"music","type":"activation","v":1}"#,
            .init(.activation(.init(session: "music", event: "granted")), requestID: 1)
        ),
        (
            #"{"event":"denied","reason":"insufficientPriority","requestID":2,"session":"music","type":"activation","v":1}"#,
            .init(
                .activation(.init(session: "music", event: "denied", reason: "insufficientPriority")), requestID: 2)
        ),
        (
            #"{"event":"delayed","requestID":3,"session":"music","type":"activation","v":1}"#,
            .init(.activation(.init(session: "music", event: "delayed")), requestID: 3)
        ),
        (
            #"{"event":"interruptionBegan","reason":"preempted","session":"music","type":"activation","v":1}"#,
            .init(.activation(.init(session: "music", event: "interruptionBegan", reason: "preempted")))
        ),
        (
            #"{"event":"interruptionEnded","session":"music","shouldResume":true,"type":"activation","v":1}"#,
            .init(.activation(.init(session: "music", event: "interruptionEnded", shouldResume: true)))
        ),
        (
            #"{"event":"interruptionEnded","session":"music","shouldResume":false,"type":"activation","v":1}"#,
            .init(.activation(.init(session: "music", event: "interruptionEnded", shouldResume: false)))
        ),
        (
            #"{"event":"duckBegan","session":"music","type":"activation","v":1}"#,
            .init(.activation(.init(session: "music", event: "duckBegan")))
        ),
        (
            #"{"event":"duckEnded","session":"music","type":"activation","v":1}"#,
            .init(.activation(.init(session: "music", event: "duckEnded")))
        ),
        (
            #"{"event":"routeChanged","reason":"oldDeviceUnavailable","session":"music","type":"activation","v":1}"#,
            .init(.activation(.init(session: "music", event: "routeChanged", reason: "oldDeviceUnavailable")))
        ),
        (
            #"{"event":"routeChanged","reason":"someVendorReason","session":"music","type":"activation","v":1}"#,
            .init(.activation(.init(session: "music", event: "routeChanged", reason: "someVendorReason")))
        ),
        (
            #"{"event":"callActivated","session":"call","type":"activation","v":1}"#,
            .init(.activation(.init(session: "call", event: "callActivated")))
        ),
        (
            #"{"event":"callDeactivated","session":"call","type":"activation","v":1}"#,
            .init(.activation(.init(session: "call", event: "callDeactivated")))
        ),
        (
            #"{"detail":"{\"handlers\":[],\"sessions\":[]}","type":"sessionsReply","v":1}"#,
            .init(.sessionsReply(.init(detail: #"{"handlers":[],"sessions":[]}"#)))
        ),
        (#"{"state":"suspend","type":"preserveRequest","v":1}"#, .init(.preserveRequest(.init(reason: "suspend")))),
        (
            #"{"detail":"3 pieces preserved; dropped (parent not preserved): [\"orphan\/x\"]","type":"preserved","v":1}"#,
            .init(.preserved(.init(detail: #"3 pieces preserved; dropped (parent not preserved): ["orphan/x"]"#)))
        ),
        (
            #"{"agentVersion":"0.1.0","pieces":{"calls":"","calls\/call-1\/ui":"dWkgb2YgY2FsbC0x","settings":""},"#
                + #""type":"restoration","v":1,"version":"example\/1"}"#,
            .init(
                .restoration(
                    .init(
                        pieces: ["calls": "", "calls/call-1/ui": "dWkgb2YgY2FsbC0x", "settings": ""],
                        version: "example/1", agentVersion: "0.1.0")))
        ),
        (
            #"{"requestID":3,"session":"music","type":"ok","v":1}"#,
            .init(.ok(.init(session: "music")), requestID: 3)
        ),
        (#"{"requestID":5,"type":"ok","v":1}"#, .init(.ok(.init()), requestID: 5)),
        (#"{"type":"ok","v":1}"#, .init(.ok(.init()))),
        (#"{"detail":"5f2c","requestID":6,"type":"ok","v":1}"#, .init(.ok(.init(detail: "5f2c")), requestID: 6)),
        (
            #"{"detail":"uid 1000 is not the handler's uid 0","error":"notAuthorized","requestID":7,"type":"error","v":1}"#,
            .init(.error(.init(code: "notAuthorized", detail: "uid 1000 is not the handler's uid 0")), requestID: 7)
        ),
        (
            #"{"detail":"frame length 0 not in 1...65536","error":"malformedFrame","type":"error","v":1}"#,
            .init(.error(.init(code: "malformedFrame", detail: "frame length 0 not in 1...65536")))
        ),
        // Background transfers.
        (
            #"{"bytes":1048576,"file":true,"kind":"download","session":"s1","state":"completed","status":200,"taskID":1,"total":1048576,"type":"transferTask","url":"https:\/\/example.com\/a","v":1}"#,
            .init(
                .transferTask(
                    .init(
                        session: "s1", taskID: 1, kind: "download", url: "https://example.com/a", state: "completed",
                        bytes: 1_048_576, total: 1_048_576, status: 200, file: true)))
        ),
        (
            #"{"requestID":4,"session":"s1","tasks":[{"bytes":0,"detail":"no route","error":"unreachable","kind":"upload","session":"s1","state":"failed","taskID":2,"url":"https:\/\/example.com\/u"}],"type":"transferSessionReply","v":1}"#,
            .init(
                .transferSessionReply(
                    .init(
                        session: "s1",
                        tasks: [
                            .init(
                                session: "s1", taskID: 2, kind: "upload", url: "https://example.com/u", state: "failed",
                                bytes: 0, error: "unreachable", detail: "no route")
                        ])), requestID: 4)
        ),
        (
            #"{"fetchID":"fetch-3","seconds":30,"type":"fetch","v":1}"#,
            .init(.fetch(.init(fetchID: "fetch-3", seconds: 30)))
        ),
        (
            #"{"seconds":30,"session":"s1","type":"transferSessionDone","v":1}"#,
            .init(.transferSessionDone(.init(session: "s1", seconds: 30)))
        ),
        (
            #"{"kind":"stream","requestID":11,"socketID":1,"type":"voipSocket","v":1}"#,
            .init(.voipSocket(.init(socketID: 1, kind: "stream")), requestID: 11)
        ),
        (
            #"{"kind":"datagram","returned":true,"socketID":2,"type":"voipSocket","v":1}"#,
            .init(.voipSocket(.init(socketID: 2, kind: "datagram", returned: true)))
        ),
        (
            #"{"mustReport":true,"seconds":5,"socketIDs":[1],"type":"voipSocketWake","v":1,"wakeID":"wake-4"}"#,
            .init(.voipSocketWake(.init(wakeID: "wake-4", socketIDs: [1], mustReport: true, seconds: 5)))
        ),
        (
            #"{"kind":"error","sockets":[{"error":"Connection reset by peer (errno 104)","socketID":1}],"#
                + #""type":"voipSocketChanged","v":1}"#,
            .init(
                .voipSocketChanged(
                    .init(kind: "error", sockets: [.init(socketID: 1, error: "Connection reset by peer (errno 104)")])))
        ),
        (
            #"{"keepAliveID":"keepalive-2","seconds":10,"type":"keepAlive","v":1}"#,
            .init(.keepAlive(.init(keepAliveID: "keepalive-2", seconds: 10)))
        ),
        (
            #"{"reason":"user stopped","seconds":5,"type":"willTerminate","v":1}"#,
            .init(.willTerminate(.init(reason: "user stopped", seconds: 5)))
        ),
        (
            #"{"clockStep":true,"timeZone":false,"type":"timeChanged","v":1,"wallMilliseconds":1764324000000}"#,
            .init(.timeChanged(.init(clockStep: true, timeZone: false, wallMilliseconds: 1_764_324_000_000)))
        ),
        (
            #"{"graceMilliseconds":500,"state":"willBecomeUnavailable","type":"protectedData","v":1}"#,
            .init(.protectedData(.init(state: .willBecomeUnavailable, graceMilliseconds: 500)))
        ),
        (
            #"{"name":"call-log","protection":"complete","requestID":30,"type":"protectedFileReply","v":1}"#,
            .init(.protectedFileReply(.init(name: "call-log", protection: "complete")), requestID: 30)
        ),
        (
            #"{"action":"default","notificationID":"tea","payload":"{}","source":"local","type":"notificationResponse","v":1}"#,
            .init(
                .notificationResponse(.init(notificationID: "tea", source: "local", action: "default", payload: "{}")))
        ),
        (
            #"{"notifications":[{"body":"Ready","fireAt":1000,"identifier":"tea"}],"requestID":40,"type":"notificationsReply","v":1}"#,
            .init(
                .notificationsReply(.init(notifications: [.init(identifier: "tea", body: "Ready", fireAt: 1000)])),
                requestID: 40)
        ),
        (
            #"{"memoryBytes":209715200,"trigger":"some 150000 1000000","type":"memoryWarning","v":1}"#,
            .init(.memoryWarning(.init(trigger: "some 150000 1000000", memoryBytes: 209_715_200)))
        ),
    ]

    static func frame(_ json: String) -> [UInt8] {
        let body = Array(json.utf8)
        let length = UInt32(body.count)
        return [UInt8(length >> 24), UInt8((length >> 16) & 0xFF), UInt8((length >> 8) & 0xFF), UInt8(length & 0xFF)]
            + body
    }

    static func decode<Message>(_ json: String, as: Message.Type) throws(FrameError) -> IPCFrame<Message>? {
        var decoder = FrameDecoder<Message>()
        decoder.append(frame(json))
        return try decoder.next()
    }

    @Test func everyMessageKindIsRecorded() {
        #expect(Set(AgentRequest.Kind.allCases.map(\.rawValue)) == Set(Self.requests.map(\.frame.message.type)))
        #expect(Set(AgentEvent.Kind.allCases.map(\.rawValue)) == Set(Self.events.map(\.frame.message.type)))
    }

    @Test(arguments: requests.indices)
    func requestsReadAndWriteAsVersion1Did(index: Int) throws {
        let (json, frame) = Self.requests[index]
        #expect(try Self.decode(json, as: AgentRequest.self) == frame)
        #expect(FrameCodec.encode(frame) == Self.frame(json))
    }

    @Test(arguments: events.indices)
    func eventsReadAndWriteAsVersion1Did(index: Int) throws {
        let (json, frame) = Self.events[index]
        #expect(try Self.decode(json, as: AgentEvent.self) == frame)
        #expect(FrameCodec.encode(frame) == Self.frame(json))
    }

    @Test func unknownTypesSurviveInBothDirections() throws {
        let json = #"{"requestID":9,"type":"teleport","v":1,"where":"moon"}"#
        #expect(try Self.decode(json, as: AgentRequest.self) == .init(.unknown(type: "teleport"), requestID: 9))
        #expect(try Self.decode(json, as: AgentEvent.self) == .init(.unknown(type: "teleport"), requestID: 9))
        #expect(FrameCodec.encode(AgentEvent.unknown(type: "teleport")) == Self.frame(#"{"type":"teleport","v":1}"#))
        // A message of the other direction is unknown here, not malformed: the agent answers `unknownType`.
        #expect(try Self.decode(#"{"type":"ok","v":1}"#, as: AgentRequest.self)?.message == .unknown(type: "ok"))
        #expect(try Self.decode(#"{"type":"status","v":1}"#, as: AgentEvent.self)?.message == .unknown(type: "status"))
    }

    @Test func membersOfOtherMessagesAreIgnored() throws {
        let json = #"{"type":"status","v":1,"taskID":"not a number","handler":7}"#
        #expect(try Self.decode(json, as: AgentRequest.self) == .init(.status))
    }

    @Test func missingRequestMembersAreLeftToTheAgent() throws {
        // The agent answers these with a precise `error` and keeps the connection: they must decode.
        #expect(
            try Self.decode(#"{"type":"complete","v":1}"#, as: AgentRequest.self)?.message
                == .complete(.init(pushID: nil, result: nil)))
        #expect(
            try Self.decode(#"{"type":"register","v":1}"#, as: AgentRequest.self)?.message
                == .register(.init(handler: nil)))
    }

    @Test(arguments: [
        (#"{"type":"endTask","v":1,"taskID":"three"}"#, "malformedFrame"),
        (#"{"type":"status"}"#, "malformedFrame"),
        (#"{"v":1}"#, "malformedFrame"),
        (#"{"v":2,"type":"status"}"#, "unsupportedVersion"),
    ])
    func malformedRequestsAreFrameErrors(json: String, code: String) {
        do {
            _ = try Self.decode(json, as: AgentRequest.self)
            Issue.record("decoded \(json)")
        } catch {
            #expect(error.code == code)
        }
    }

    @Test func eventsMissingWhatTheAgentAlwaysSendsAreFrameErrors() {
        #expect(throws: FrameError.self) {
            _ = try Self.decode(#"{"type":"push","v":1,"pushID":"1"}"#, as: AgentEvent.self)
        }
        #expect(throws: FrameError.self) { _ = try Self.decode(#"{"type":"error","v":1}"#, as: AgentEvent.self) }
    }
}
