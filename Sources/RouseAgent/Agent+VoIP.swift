import Glibc
import Logging
import RouseAgentCore
import RouseClock
import RouseSystem
import RouseWire

/// The agent's steps for the socket-woken half of iOS's VoIP model (docs/voip-sockets.md): watched VoIP sockets
/// (``VoIPSockets``) and keep-alive wakes (``KeepAlives``). The rules that apply to a woken handler (deadline,
/// strikes, budget) are its ``HandlerMachine``'s.
extension Agent {
    // MARK: Requests

    /// A VoIP-socket or keep-alive request from registered handler `name`; `descriptor`: what came with the frame
    /// (owned here).
    func handleVoIP(
        _ name: String, _ connection: IPCConnection, _ frame: IPCFrame<AgentRequest>, descriptor: Int32?
    ) {
        let requestID = frame.requestID
        let current = now
        switch frame.message {
        case .addVoIPSocket:
            addVoIPSocket(name, connection, descriptor: descriptor, requestID: requestID)
            return
        case .removeVoIPSocket(let request):
            guard let id = request.socketID, voipSockets.remove(name, id) else {
                connection.sendError(
                    "unknownSocket",
                    "removeVoIPSocket: no watched socket \(request.socketID.map(String.init) ?? "(none)")",
                    requestID: requestID)
                break
            }
            logger.info("VoIP socket no longer watched", metadata: ["handler": "\(name)", "socket-id": "\(id)"])
            connection.send(.ok(.init()), requestID: requestID)
        case .voipWakeHandled(let request):
            guard let id = request.wakeID,
                let (found, actions) = handlers.step(name, { ($0.wakeHandled(id: id, now: current), []) }), found
            else {
                connection.sendError(
                    "unknownWake", "voipWakeHandled: no socket wake \(request.wakeID ?? "(none)") is owed",
                    requestID: requestID)
                break
            }
            connection.send(.ok(.init()), requestID: requestID)
            apply(name, actions)
        case .setKeepAlive(let request):
            guard let seconds = request.seconds else {
                connection.sendError("badRequest", "setKeepAlive needs seconds", requestID: requestID)
                break
            }
            switch KeepAliveScheduler.interval(seconds: seconds) {
            case .failure(let refusal):
                let minimum = Int(KeepAliveScheduler.minimumInterval.inSeconds)
                let maximum = Int(KeepAliveScheduler.maximumInterval.inSeconds)
                let (code, detail) =
                    switch refusal {
                    case .tooShort:
                        (
                            "keepAliveTooShort",
                            "keep-alive interval \(seconds) s is below the minimum of \(minimum) s (iOS's setKeepAliveTimeout)"
                        )
                    case .tooLong:
                        ("badRequest", "keep-alive interval \(seconds) s is above the maximum of \(maximum) s")
                    case .notANumber: ("badRequest", "keep-alive interval is not a number")
                    }
                connection.sendError(code, detail, requestID: requestID)
            case .success(let interval):
                keepAlives.scheduler.set(name, interval: interval, now: current)
                logger.info("keep-alive set", metadata: ["handler": "\(name)", "seconds": "\(interval.inSeconds)"])
                connection.send(.ok(.init()), requestID: requestID)
                armKeepAliveTimer()
            }
        case .clearKeepAlive:
            keepAlives.scheduler.clear(name)
            connection.send(.ok(.init()), requestID: requestID)
        case .keepAliveDone(let request):
            guard let id = request.keepAliveID,
                let (found, actions) = handlers.step(name, { ($0.keepAliveDone(id: id, now: current), []) }), found
            else {
                connection.sendError(
                    "unknownKeepAlive", "keepAliveDone: \(request.keepAliveID ?? "(none)") is not under way",
                    requestID: requestID)
                break
            }
            connection.send(.ok(.init()), requestID: requestID)
            apply(name, actions)
        case .register, .reportCall, .callEnded, .complete, .beginTask, .endTask, .setState, .activate, .deactivate,
            .preserve, .restoreReply, .transferSession, .addTransfer, .cancelTransfer, .transfersHandled,
            .fetchComplete,
            .status, .sessions, .rotateKey, .reregister, .userControl, .routeChanged, .transfers, .protectedFile,
            .scheduleNotification, .listNotifications, .cancelNotifications,
            .restorationFinished, .unknown:
            connection.sendError("unknownType", "unknown message type \(frame.message.type)", requestID: requestID)
        }
        if let descriptor { closePeerDescriptor(descriptor, from: connection) }
    }

    private func addVoIPSocket(_ name: String, _ connection: IPCConnection, descriptor: Int32?, requestID: Int?) {
        let metadata: Logger.Metadata = ["handler": "\(name)"]
        guard let fd = descriptor else {
            voipSockets.refusedDescriptor()
            connection.sendError(
                "badDescriptor", "addVoIPSocket needs a connected socket passed with the frame (SCM_RIGHTS)",
                requestID: requestID)
            return
        }
        let type: Int32
        switch Sys.checkWatchedSocket(fd) {
        case .refused(let why):
            closePeerDescriptor(fd, from: connection)
            voipSockets.refusedDescriptor()
            logger.notice("VoIP socket refused", metadata: metadata.merging(["reason": "\(why)"]) { $1 })
            connection.sendError("badDescriptor", "addVoIPSocket: \(why)", requestID: requestID)
            return
        case .connected(let socketType):
            type = socketType
        }
        guard startSocketWatcher() else {
            closePeerDescriptor(fd, from: connection)
            connection.sendError("internal", "addVoIPSocket: no epoll set could be made", requestID: requestID)
            return
        }
        let holder = handlers.process(of: name)?.pid ?? connection.peer?.pid
        switch voipSockets.add(name, fd: fd, type: type, holder: holder) {
        case .failure(let refusal):
            closePeerDescriptor(fd, from: connection)
            let limits = configuration.voipSocketLimits
            let detail =
                refusal == .handlerFull
                ? "handler \(name) watches \(limits.perHandler) sockets already (the most per handler)"
                : "the agent watches \(limits.total) sockets already (the most for all handlers)"
            logger.notice("VoIP socket refused", metadata: metadata.merging(["reason": "\(detail)"]) { $1 })
            connection.sendError("tooManySockets", detail, requestID: requestID)
        case .success(let id):
            let kind = voipSockets.book.sockets(of: name).first { $0.id == id }?.kind.rawValue ?? "stream"
            logger.info(
                "VoIP socket watched", metadata: metadata.merging(["socket-id": "\(id)", "kind": "\(kind)"]) { $1 })
            connection.send(.voipSocket(.init(socketID: id, kind: kind)), requestID: requestID)
            syncVoIPWatch(name)
        }
    }

    /// The watcher's thread and the task that takes its reports, started at the first socket.
    private func startSocketWatcher() -> Bool {
        if voipSockets.watcher != nil { return true }
        guard let watcher = voipSockets.makeWatcher() else { return false }
        background.append(
            Task {
                for await report in watcher.events { self.socketReported(report.token, events: report.events) }
            })
        return true
    }

    // MARK: Watching

    /// Keeps `name`'s sockets watched exactly while it cannot read them (suspended or not running); when it runs
    /// again, tells it what happened to them meanwhile (one `voipSocketChanged` per kind). Called after every step of
    /// its rules.
    func syncVoIPWatch(_ name: String) {
        let machine = handlers.machine(of: name)
        let lifecycle = machine?.lifecycle ?? .notRunning
        if VoIPSocketBook.watches(lifecycle) {
            voipSockets.watch(name, machine?.socketBackoffUntil == nil)  // unarmed during a backoff after a strike
            return
        }
        voipSockets.watch(name, false)
        guard lifecycle != .launching, let connection = handlers.connection(of: name) else { return }
        for change in voipSockets.takeChanges(name) {
            connection.send(
                .voipSocketChanged(
                    .init(
                        kind: change.kind.rawValue,
                        sockets: change.sockets.map { .init(socketID: $0.socketID, error: $0.error) })))
        }
    }

    /// A watched socket became ready (its one report).
    private func socketReported(_ token: UInt64, events: UInt32) {
        guard let socket = voipSockets.socket(token) else { return }
        voipSockets.reported(token)
        let name = socket.handler
        let metadata: Logger.Metadata = ["handler": "\(name)", "socket-id": "\(socket.id)"]
        let machine = handlers.machine(of: name)
        let watching =
            VoIPSocketBook.watches(machine?.lifecycle ?? .notRunning) && machine?.socketBackoffUntil == nil
        switch Sys.watchedSocketState(socket.fd, type: socket.type, events: events) {
        case .idle:
            if watching { voipSockets.set(token, armed: true) }
        case .closed:
            logger.info("watched VoIP socket closed", metadata: metadata)
            voipSockets.closed(name, socket.id)
        case .error(let text):
            let keep = socket.type != Int32(SOCK_STREAM.rawValue)
            logger.info("watched VoIP socket failed", metadata: metadata.merging(["error": "\(text)"]) { $1 })
            voipSockets.failed(name, socket.id, error: text, keep: keep)
            if keep && watching { voipSockets.set(token, armed: true) }
        case .data:
            guard watching else {
                voipSockets.alsoWoke(name, socket: socket.id)
                return
            }
            socketData(name, socket: socket.id)
        }
    }

    /// Data on socket `id` of sleeping handler `name`: it is resumed or launched (reason `voipSocket`) and owes a
    /// report, as for a VoIP push.
    private func socketData(_ name: String, socket id: Int) {
        let wake = voipSockets.wake(name, socket: id)
        voipSockets.watch(name, false)
        let current = now
        logger.info(
            "VoIP socket data: waking handler",
            metadata: ["handler": "\(name)", "socket-id": "\(id)", "wake-id": "\(wake)"])
        guard
            let (dropped, actions) = handlers.step(
                name,
                { machine in
                    let actions = machine.socketWake(id: wake, now: current)
                    return (actions == nil, actions ?? [])
                })
        else { return }
        if dropped {
            logger.warning(
                "VoIP socket wake dropped: launches stopped after strikes; the handler's sockets are closed",
                metadata: ["handler": "\(name)", "wake-id": "\(wake)"])
            voipSockets.wakeDropped(name)
            return
        }
        apply(name, actions)
        // The device is awake: keep-alives within their tolerance run now rather than wake it again.
        keepAliveOpportunity()
    }

    /// The `voipSocketWake` message for wake `wake` of `name` (the sockets whose data caused it).
    func socketWakeMessage(_ name: String, wake: String, mustReport: Bool, seconds: Double) -> AgentEvent {
        .voipSocketWake(
            .init(wakeID: wake, socketIDs: voipSockets.takeWoken(name), mustReport: mustReport, seconds: seconds))
    }

    /// At `name`'s registration, before its rules see it: a process that does not hold its sockets (a relaunch) gets
    /// each one back (`voipSocket` `returned: true` with the descriptor), before the wake that launched it.
    func voipRegistered(_ name: String, _ connection: IPCConnection) {
        guard voipSockets.has(name) else { return }
        let pid = handlers.process(of: name)?.pid ?? connection.peer?.pid
        guard pid == nil || pid != voipSockets.holder(of: name) else { return }
        for socket in voipSockets.descriptors(of: name) {
            _ = connection.send(
                .voipSocket(.init(socketID: socket.id, kind: socket.kind.rawValue, returned: true)),
                descriptor: socket.fd)
        }
        voipSockets.handedBack(name, to: pid)
        logger.info("VoIP sockets handed back", metadata: ["handler": "\(name)"])
    }

    /// The user stopped `name`, or it is no longer configured: its sockets and keep-alive are dropped.
    func voipHandlerGone(_ name: String) {
        voipSockets.removeAll(name)
        keepAlives.scheduler.clear(name)
    }

    /// The agent stops: every watched socket closed, the watcher and the keep-alive timer stopped.
    func stopVoIP() {
        voipSockets.stop()
        keepAlives.timer.cancel()
    }

    // MARK: Keep-alives

    /// One timer, at the earliest planned keep-alive (kept when armed no later).
    func armKeepAliveTimer() {
        guard let next = keepAlives.scheduler.nextTimer() else { return }
        keepAlives.timer.arm(at: time.instant(next)) { await self.keepAliveTimerFired($0) }
    }

    private func keepAliveTimerFired(_ generation: UInt64) {
        guard keepAlives.timer.fired(generation) else { return }
        keepAlives.timerFired()
        keepAliveOpportunity()
    }

    /// Runs every keep-alive within its tolerance now (the device is awake: the keep-alive timer, a socket wake,
    /// the channel opening, the network returning), then re-arms the timer.
    func keepAliveOpportunity() {
        let current = now
        for name in keepAlives.scheduler.due(now: current) {
            keepAlives.scheduler.ran(name, now: current)
            guard handlers.contains(name) else {
                keepAlives.scheduler.clear(name)
                continue
            }
            let id = keepAlives.makeID()
            logger.info("keep-alive", metadata: ["handler": "\(name)", "keep-alive-id": "\(id)"])
            apply(name, handlers.step(name) { $0.keepAliveDue(id: id, now: current) })
        }
        armKeepAliveTimer()
    }

    /// `rouse agent status`: `name`'s watched sockets, owed wakes and keep-alive; nil when it has none of them.
    func voipStatus(_ name: String) -> AgentStatus.VoIP? {
        let sockets = voipSockets.book.sockets(of: name).map { "\($0.id):\($0.kind.rawValue)" }
        let owed = handlers.machine(of: name)?.owedWakes.keys.sorted() ?? []
        let interval = keepAlives.scheduler.interval(of: name)
        guard !sockets.isEmpty || !owed.isEmpty || interval != nil else { return nil }
        return AgentStatus.VoIP(
            sockets: sockets, owedWakes: owed, keepAliveSeconds: interval?.inSeconds,
            nextKeepAliveInSeconds: keepAlives.scheduler.planned(of: name).map { max(0, ($0 - now).inSeconds) })
    }

    /// Watched sockets' counters (tests, status).
    package var voipSocketCounters: VoIPSocketBook.Counters { voipSockets.book.counters }

    /// Keep-alive wakes run, and the keep-alive timer's firings (tests: N handlers, one wake-up).
    package var keepAliveCounts: (runs: Int, timerWakes: Int) { (keepAlives.runs, keepAlives.timerWakes) }

    /// Waits for the keep-alive timer when its deadline passed (tests on a manual clock).
    func settleKeepAliveTimer() async {
        while let due = keepAlives.timer.due { await due.value }
    }
}

extension AgentStatus {
    /// A handler's socket-woken VoIP state (docs/voip-sockets.md).
    package struct VoIP: Codable, Sendable {
        /// Watched sockets as `ID:KIND`.
        package var sockets: [String]
        /// Socket wakes owing a report.
        package var owedWakes: [String]
        /// The keep-alive interval it asked for.
        package var keepAliveSeconds: Double?
        /// Seconds to the keep-alive timer that serves it.
        package var nextKeepAliveInSeconds: Double?
    }
}
