import FoundationEssentials
import Logging
import RouseActivation
import RouseAgentCore
import RouseSystem
import RouseWire

extension Agent {
    /// A socket-path connection the accept thread admitted (see ``IPCAdmission``), its peer's pidfd open: it must
    /// register (or, for an admin request, finish) within ``registrationTimeout``.
    func accepted(_ fd: Int32, peer: IPCConnection.Peer) {
        let connection = makeConnection(fd: fd, peer: peer, launchedFor: nil)
        ipc.expectRegistration(connection, by: now + IPCRegistry.registrationTimeout)
        armRegistrationSweep()
    }

    /// One timer for every connection that has not registered yet.
    private func armRegistrationSweep() {
        guard let next = ipc.nextDeadline else { return }
        ipc.sweep.arm(at: time.instant(next)) { await self.sweepRegistrations($0) }
    }

    private func sweepRegistrations(_ generation: UInt64) {
        guard ipc.sweep.fired(generation) else { return }
        for connection in ipc.overdue(now: now) {
            connection.sendError("registrationTimeout", "no register within \(IPCRegistry.registrationTimeout)")
            connection.close()
        }
        armRegistrationSweep()
    }

    func makeConnection(fd: Int32, peer: IPCConnection.Peer?, launchedFor: String?) -> IPCConnection {
        let connection = ipc.open(fd: fd, peer: peer, launchedFor: launchedFor)
        Task {
            for await inbound in connection.inbound {
                connection.took(inbound)
                // A frame is off the connection's budget once handled (an upload's copy: once copied).
                if self.handle(connection, inbound) { connection.handled() }
                // The end of a run of frames: the transfer changes it made are saved once, then answered.
                if connection.framesReady == 0 { self.transferRunEnded() }
            }
        }
        return connection
    }

    /// One thing from the connection's reader; false when a frame's handling goes on (an upload's copy, which calls
    /// ``IPCConnection/handled()`` when it ends).
    private func handle(_ connection: IPCConnection, _ inbound: IPCConnection.Inbound) -> Bool {
        switch inbound {
        case .closed:
            let name = ipc.closed(connection)
            if let peer = connection.peer, connection.launchedFor == nil {
                // Its slot is the peer's until every descriptor it passed is closed: a reconnecting peer cannot pin
                // more than its quota's worth of never-ending closes.
                let admission = admission
                if !connection.whenDescriptorsReleased({ admission.release(uid: peer.uid) }) {
                    ipc.meter.count(\.slotsKeptForCloses)
                }
            }
            guard let name, handlers.detach(name, connection) else { return false }
            let running = handlers.process(of: name) != nil
            if !running, preservations.flags(of: name).launchBegun {
                launchAbandoned(name)
                preservations.reset(name)
            }
            preservations.wake(name)  // it can no longer answer
            holderGone(name, reason: .connectionClosed)
            closeOpenProtectedFiles(name)
            if !running {
                terminations.stopAsked.remove(name)
                terminationEnded(name)
                fetchHandlerGone(name)
                // A handler we did not launch: its connection is its life.
                apply(name, handlers.step(name) { $0.exited(now: now) })
            }
            return false
        case .messageWithDescriptor(let frame, let descriptor):
            defer { connection.descriptorReleased() }  // held by the reader; a close queued holds it again
            guard let name = ipc.handler(of: connection) else {
                // Never closed here: a peer's descriptor can make close block (SO_LINGER, FUSE).
                closePeerDescriptor(descriptor, from: connection)
                handleUnregistered(connection, frame)
                return true
            }
            if handlers.connection(of: name) === connection { thawIfWrittenBeforeTheFreeze(name) }
            if case .addVoIPSocket = frame.message {
                handleVoIP(name, connection, frame, descriptor: descriptor)
                return true
            }
            return handleTransfer(name, connection, frame, descriptor: descriptor)
        case .malformed(let error):
            logger.warning(
                "malformed IPC frame: connection closed",
                metadata: ["conn-id": "\(connection.id)", "error": "\(error)"])
            connection.close()
            return false
        case .message(let frame):
            if let name = ipc.handler(of: connection) {
                handleRegistered(name, connection, frame)
            } else {
                handleUnregistered(connection, frame)
            }
            return true
        }
    }

    /// Closes a descriptor `connection`'s peer passed off the executor, on its budget: its reader stops while
    /// ``IPCConnection/pendingDescriptors`` of its descriptors wait (to be handled or closed), and it is closed
    /// (`closeQueueFull`) when the agent's close queue is over its limit.
    func closePeerDescriptor(_ descriptor: Int32, from connection: IPCConnection) {
        connection.descriptorHeld()
        guard blocking.closePeerDescriptor(descriptor, done: { connection.descriptorReleased() }) else {
            ipc.meter.count(\.closeQueueFull)
            logger.warning("descriptor close queue full: connection closed", metadata: ["conn-id": "\(connection.id)"])
            connection.close()
            return
        }
    }

    private var agentUID: UInt32 { Sys.uid }

    /// Admin requests come from root, the agent's own user or a member of the configured admin group, and never
    /// from a handler: not on the connection its launch created, nor from any process in a handler's cgroup or
    /// process group (a handler may run as root with allow-root, or as the agent's user in the per-user mode).
    private func isAdmin(_ connection: IPCConnection) -> Bool {
        guard connection.launchedFor == nil, let peer = connection.peer, !isHandlerProcess(peer) else { return false }
        if peer.uid == 0 || peer.uid == agentUID { return true }
        guard let name = configuration.adminGroup, let group = (try? Sys.group(named: name)) ?? nil else {
            return false
        }
        return peer.gid == group || peer.groups.contains(group)
    }

    /// Whether `connection` may send the admin request `request`; when not, answers `notAuthorized` naming who may.
    private func requireAdmin(_ connection: IPCConnection, _ request: String, requestID: Int?) -> Bool {
        guard isAdmin(connection) else {
            let group = configuration.adminGroup.map { ", members of group \($0)" } ?? ""
            connection.sendError(
                "notAuthorized", "\(request) is for root, the agent's user\(group) (never a handler)",
                requestID: requestID)
            return false
        }
        return true
    }

    /// Whether the peer is one of our handlers or something a handler started. Read from `/proc`, then checked
    /// against the peer's pidfd: a peer that is gone (its pid perhaps reused) counts as a handler (refused).
    private func isHandlerProcess(_ peer: IPCConnection.Peer) -> Bool {
        let leaders = Set(handlers.processes.map(\.pid))
        let inCgroup = Sys.cgroupPath(pid: peer.pid).map { control.holds(cgroupPath: $0) } ?? true
        let group = Sys.processGroup(pid: peer.pid)
        guard peer.pidfd >= 0, Sys.pid(ofPidfd: peer.pidfd) == peer.pid else { return true }
        return inCgroup || leaders.contains(peer.pid) || group.map { leaders.contains($0) } ?? true
    }

    /// A message on a connection that has not registered: `register`, or an admin request.
    private func handleUnregistered(_ connection: IPCConnection, _ frame: IPCFrame<AgentRequest>) {
        let requestID = frame.requestID
        switch frame.message {
        case .register(let register):
            guard let name = register.handler, handlers.contains(name) else {
                connection.sendError("unknownHandler", "no handler named \(register.handler ?? "(none)")")
                connection.close()
                return
            }
            if let reason = authorize(connection, as: name) {
                logger.warning(
                    "handler impersonation refused",
                    metadata: ["handler": "\(name)", "conn-id": "\(connection.id)", "reason": "\(reason)"])
                connection.sendError("notAuthorized", reason, requestID: requestID)
                connection.close()
                return
            }
            handlers.attach(name, connection)
            ipc.register(connection, as: name)
            connection.send(
                .registered(.init(handler: name, launchReason: handlers.launchReason(of: name) ?? "connected")))
            handTokens(name, force: true)
            connection.send(.reachability(.init(reachable: link.reachable)))
            logger.info("handler registered", metadata: ["handler": "\(name)", "conn-id": "\(connection.id)"])
            registeredForPreservation(name, connection, optIn: register.preserves == true)
            activations.flushOutbox(name)
            voipRegistered(name, connection)
            apply(name, handlers.step(name) { $0.registered(now: now) })
            flushNotificationResponses(name)
            transfersRegistered(name)
            sendFetch(name)
        case .status:
            guard requireAdmin(connection, "status", requestID: requestID) else { return }
            connection.send(.statusReply(.init(detail: statusJSON())), requestID: requestID)
        case .sessions:
            guard requireAdmin(connection, "sessions", requestID: requestID) else { return }
            connection.send(.sessionsReply(.init(detail: activations.snapshot.json())), requestID: requestID)
        case .routeChanged(let change):
            guard requireAdmin(connection, "routeChanged", requestID: requestID) else { return }
            guard let reason = change.reason, !reason.isEmpty else {
                connection.sendError("badRequest", "routeChanged needs reason", requestID: requestID)
                return
            }
            routeChanged(reason)
            connection.send(.ok(.init()), requestID: requestID)
        case .reregister(let request):
            guard let name = adminTarget(connection, "reregister", request.handler, requestID: requestID) else {
                return
            }
            apply(name, handlers.step(name) { $0.reregister() })
            connection.send(.ok(.init()), requestID: requestID)
        case .userControl(let control):
            guard let name = adminTarget(connection, "userControl", control.handler, requestID: requestID) else {
                return
            }
            if control.state == "stopped" {
                quitByUser(name)
                transfersUserStopped(name)
                voipHandlerGone(name)
                apply(name, handlers.step(name) { $0.userStop() })
            } else {
                apply(name, handlers.step(name) { $0.userStart(now: now) })
            }
            connection.send(.ok(.init()), requestID: requestID)
        case .rotateKey:
            guard requireAdmin(connection, "rotateKey", requestID: requestID) else { return }
            rotateKey(connection, requestID: requestID)
        case .transfers:
            guard isAdmin(connection) else {
                connection.sendError("notAuthorized", "transfers is for the agent's user or root", requestID: requestID)
                return
            }
            connection.send(.statusReply(.init(detail: transfersJSON())), requestID: requestID)
        case .reportCall, .callEnded, .complete, .beginTask, .endTask, .setState, .activate, .deactivate, .preserve,
            .restoreReply, .transferSession, .addTransfer, .cancelTransfer, .transfersHandled, .fetchComplete,
            .addVoIPSocket, .removeVoIPSocket, .voipWakeHandled, .setKeepAlive, .clearKeepAlive, .keepAliveDone,
            .protectedFile, .scheduleNotification, .listNotifications, .cancelNotifications, .restorationFinished,
            .unknown:
            connection.sendError("notRegistered", "the first message must be register (got \(frame.message.type))")
            connection.close()
        }
    }

    /// The configured handler an admin request names; nil when the peer is not an admin (answered
    /// `notAuthorized`) or names no configured handler (answered `unknownHandler`).
    private func adminTarget(
        _ connection: IPCConnection, _ request: String, _ handler: String?, requestID: Int?
    ) -> String? {
        guard requireAdmin(connection, request, requestID: requestID) else { return nil }
        guard let name = handler, handlers.contains(name) else {
            connection.sendError(
                "unknownHandler", "\(request): no handler named \(handler ?? "(none)")", requestID: requestID)
            return nil
        }
        return name
    }

    /// Who may act as handler `name`: the connection its launch created, or a peer whose uid is the
    /// handler's, whose executable is the handler's command (checked through its pidfd) and which is part of no
    /// other handler's launch (``launchIdentityProblem(_:as:)``).
    private func authorize(_ connection: IPCConnection, as name: String) -> String? {
        guard let handler = handlers.configuration(of: name) else { return "unknown handler" }
        let connected = handlers.connection(of: name) != nil
        if let launchedFor = connection.launchedFor {
            return launchedFor == name ? nil : "this connection belongs to handler \(launchedFor)"
        }
        if preservations.flags(of: name).adopted, !connected {
            return isAdoptedProcess(name, connection) ? nil : "handler \(name) runs as a re-attached process"
        }
        guard let peer = connection.peer, peer.pidfd >= 0 else { return "no peer credentials" }
        guard
            let expectedUID = try? HandlerCredentials.resolve(
                handler, agentUID: agentUID, agentGID: Sys.gid,
                defaultUser: configuration.handlerUser
            ).account.uid
        else { return "handler \(name) may not run (see its launch error)" }
        guard peer.uid == expectedUID else { return "uid \(peer.uid) is not the handler's uid \(expectedUID)" }
        guard let executable = Sys.executable(pid: peer.pid), let command = handler.command.first,
            let expected = Sys.realPath(command)
        else { return "cannot read the peer's executable" }
        // The pidfd pins the process: if it still has pid `peer.pid`, the executable read above is its own.
        guard Sys.pid(ofPidfd: peer.pidfd) == peer.pid else { return "peer exited while being checked" }
        guard executable == expected else { return "executable \(executable) is not \(expected)" }
        if let problem = launchIdentityProblem(peer, as: name) { return problem }
        if connected { return "handler \(name) is already connected" }
        return nil
    }

    /// A request of handler `name` read while it is suspended was written before the freeze (a frozen process writes
    /// nothing): it is thawed first (`HandlerMachine.requestReadWhileSuspended`), or the answer would wait in a
    /// frozen process, and a request that needs it running (setState active, an activation, a socket to watch)
    /// would leave it frozen. Seen on a loaded machine: a foreground handler left frozen, its `activate` never
    /// answered; a watched socket's answer unread until the next wake.
    private func thawIfWrittenBeforeTheFreeze(_ name: String) {
        guard handlers.machine(of: name)?.lifecycle == .suspended else { return }
        let current = now
        apply(name, handlers.step(name) { $0.requestReadWhileSuspended(now: current) })
    }

    /// A message from registered handler `name`.
    private func handleRegistered(_ name: String, _ connection: IPCConnection, _ frame: IPCFrame<AgentRequest>) {
        let requestID = frame.requestID
        guard handlers.connection(of: name) === connection else {
            // Its handler was removed by a reload (or replaced): nothing to act on.
            connection.sendError("unknownHandler", "handler \(name) is no longer configured", requestID: requestID)
            connection.close()
            return
        }
        let current = now
        thawIfWrittenBeforeTheFreeze(name)
        switch frame.message {
        case .reportCall(let report):
            guard let callID = report.callID else {
                connection.sendError("badRequest", "reportCall needs callID", requestID: requestID)
                return
            }
            apply(name, handlers.step(name) { $0.reportCall(pushID: report.pushID, callID: callID, now: current) })
            callStarted(name, connection, report)
        case .callEnded(let ended):
            apply(name, handlers.step(name) { $0.callEnded(callID: ended.callID ?? "", now: current) })
            if handlers.machine(of: name)?.activeCalls.isEmpty == true {
                callEnded(name, notifyOthers: ended.notifyOthers ?? true)
            }
        case .activate(let request):
            activate(name, connection, request, requestID: requestID)
        case .deactivate(let request):
            deactivate(name, connection, request, requestID: requestID)
        case .complete(let complete):
            guard let pushID = complete.pushID, let result = complete.result,
                BackgroundFetchResult(rawValue: result) != nil
            else {
                connection.sendError(
                    "badRequest", "complete needs pushID and result newData|noData|failed", requestID: requestID)
                return
            }
            apply(name, handlers.step(name) { $0.complete(pushID: pushID, result: result, now: current) })
        case .beginTask(let task):
            guard
                let (id, actions) = handlers.step(
                    name, { $0.beginTask(name: task.taskName ?? "unnamed", now: current) })
            else { return }
            if id == nil {
                connection.sendError("taskInvalid", "no background time left", requestID: requestID)
            }
            apply(name, actions)
        case .endTask(let task):
            apply(name, handlers.step(name) { $0.endTask(id: task.taskID ?? -1, now: current) })
        case .setState(let request):
            guard let state = request.state.flatMap(HandlerLifecycle.init(rawValue:)),
                [.active, .inactive, .background].contains(state)
            else {
                connection.sendError(
                    "badRequest", "setState needs state active|inactive|background", requestID: requestID)
                return
            }
            apply(name, handlers.step(name) { $0.setState(state, now: current) })
            if state == .background { wentToBackground(name) }
        case .status:
            // A handler sees itself: its own state and tokens, not the others' nor the device id.
            connection.send(.statusReply(.init(detail: statusJSON(only: name))), requestID: requestID)
        case .preserve(let preserve):
            preserveReceived(name, connection, preserve)
        case .restoreReply(let reply):
            restoreReplied(name, connection, reply)
        case .restorationFinished:
            restorationFinished(name, connection, requestID: requestID)
        case .transferSession, .addTransfer, .cancelTransfer, .transfersHandled:
            _ = handleTransfer(name, connection, frame, descriptor: nil)
        case .fetchComplete(let request):
            fetchCompleted(name, connection, request, requestID: requestID)
        case .addVoIPSocket, .removeVoIPSocket, .voipWakeHandled, .setKeepAlive, .clearKeepAlive, .keepAliveDone:
            handleVoIP(name, connection, frame, descriptor: nil)
        case .protectedFile(let request):
            protectedFile(name, connection, request, requestID: requestID)
        case .scheduleNotification(let request):
            scheduleNotification(name, connection, request, requestID: requestID)
        case .listNotifications:
            listNotifications(name, connection, requestID: requestID)
        case .cancelNotifications(let request):
            cancelNotifications(name, connection, request, requestID: requestID)
        case .register, .sessions, .routeChanged, .reregister, .userControl, .rotateKey, .transfers, .unknown:
            // A second register and the admin requests are not a handler's (version 1 answers them so too).
            connection.sendError(
                "unknownType", "unknown message type \(frame.message.type)", requestID: requestID)
        }
    }
}
