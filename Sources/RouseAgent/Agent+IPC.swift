import Foundation
import Logging
import RouseWire

extension Agent {
    func accepted(_ fd: Int32) {
        let peer: IPCConnection.Peer
        do {
            let credentials = try AgentSyscalls.peer(fd)
            peer = IPCConnection.Peer(
                pid: credentials.pid, uid: credentials.uid, gid: credentials.gid, pidfd: credentials.pidfd,
                kernelPidfd: credentials.kernelPidfd)
        } catch {
            logger.warning("peer credentials unavailable: connection refused", metadata: ["error": "\(error)"])
            AgentSyscalls.close(fd)
            return
        }
        guard connections.count < Self.maxConnections else {
            logger.warning("too many IPC connections: refused", metadata: ["uid": "\(peer.uid)", "pid": "\(peer.pid)"])
            AgentSyscalls.close(fd)
            if peer.pidfd >= 0 { AgentSyscalls.close(peer.pidfd) }
            return
        }
        let connection = makeConnection(fd: fd, peer: peer, launchedFor: nil)
        // A peer that neither registers nor leaves is dropped after a while.
        registrationTimers[connection.id] = Task {
            try? await Task.sleep(for: Self.registrationTimeout)
            guard !Task.isCancelled else { return }
            self.dropIfUnregistered(connection)
        }
    }

    /// Most IPC connections at once (each has a reader thread).
    static let maxConnections = 256
    /// Time a socket-path connection has to register (admin connections: to finish).
    static let registrationTimeout = Duration.seconds(30)

    private func dropIfUnregistered(_ connection: IPCConnection) {
        guard connections[connection.id] != nil, registered[connection.id] == nil else { return }
        connection.sendError("registrationTimeout", "no register within \(Self.registrationTimeout)")
        connection.close()
    }

    func makeConnection(fd: Int32, peer: IPCConnection.Peer?, launchedFor: String?) -> IPCConnection {
        let connection = IPCConnection(id: nextConnectionID, fd: fd, peer: peer, launchedFor: launchedFor)
        nextConnectionID += 1
        connections[connection.id] = connection
        connection.start()
        Task {
            for await inbound in connection.inbound { self.handle(connection, inbound) }
        }
        return connection
    }

    private func handle(_ connection: IPCConnection, _ inbound: IPCConnection.Inbound) {
        switch inbound {
        case .closed:
            connections.removeValue(forKey: connection.id)
            registrationTimers.removeValue(forKey: connection.id)?.cancel()
            guard let name = registered.removeValue(forKey: connection.id), var slot = slots[name],
                slot.connection === connection
            else { return }
            slot.connection = nil
            if slot.process == nil, slot.preservation.launchBegun {
                launchAbandoned(name)
                slot.preservation = Preservation()
            }
            slots[name] = slot
            wakePreserveWaiters(name)  // it can no longer answer
            holderGone(name, reason: .connectionClosed)
            if slot.process == nil {
                // A handler we did not launch: its connection is its life.
                apply(name, slots[name]!.machine.exited(now: now))
            }
        case .malformed(let error):
            logger.warning(
                "malformed IPC frame: connection closed",
                metadata: ["conn-id": "\(connection.id)", "error": "\(error)"])
            connection.close()
        case .message(let frame):
            if let name = registered[connection.id] {
                handleRegistered(name, connection, frame)
            } else {
                handleUnregistered(connection, frame)
            }
        }
    }

    private var agentUID: UInt32 { AgentSyscalls.uid }

    private func isAdmin(_ connection: IPCConnection) -> Bool {
        guard let peer = connection.peer else { return false }
        return peer.uid == 0 || peer.uid == agentUID
    }

    /// A message on a connection that has not registered: `register`, or an admin request.
    private func handleUnregistered(_ connection: IPCConnection, _ frame: IPCFrame<AgentRequest>) {
        let requestID = frame.requestID
        switch frame.message {
        case .register(let register):
            guard let name = register.handler, slots[name] != nil else {
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
            var slot = slots[name]!
            slot.connection = connection
            slots[name] = slot
            registered[connection.id] = name
            registrationTimers.removeValue(forKey: connection.id)?.cancel()
            connection.send(.registered(.init(handler: name, launchReason: slot.launchReason ?? "connected")))
            handTokens(name, force: true)
            connection.send(.reachability(.init(reachable: gatewayReachable)))
            logger.info("handler registered", metadata: ["handler": "\(name)", "conn-id": "\(connection.id)"])
            registeredForPreservation(name, connection, optIn: register.preserves == true)
            flushActivationOutbox(name)
            apply(name, slots[name]!.machine.registered(now: now))
        case .status:
            guard isAdmin(connection) else {
                connection.sendError("notAuthorized", "status is for the agent's user or root", requestID: requestID)
                return
            }
            connection.send(.statusReply(.init(detail: statusJSON())), requestID: requestID)
        case .sessions:
            guard isAdmin(connection) else {
                connection.sendError("notAuthorized", "sessions is for the agent's user or root", requestID: requestID)
                return
            }
            connection.send(.sessionsReply(.init(detail: arbiter.snapshot.json())), requestID: requestID)
        case .routeChanged(let change):
            guard isAdmin(connection) else {
                connection.sendError(
                    "notAuthorized", "route changes come from the agent's user or root", requestID: requestID)
                return
            }
            guard let reason = change.reason, !reason.isEmpty else {
                connection.sendError("badRequest", "routeChanged needs reason", requestID: requestID)
                return
            }
            routeChanged(reason)
            connection.send(.ok(.init()), requestID: requestID)
        case .reregister(let request):
            guard let name = adminTarget(connection, request.handler, requestID: requestID) else { return }
            apply(name, slots[name]!.machine.reregister())
            connection.send(.ok(.init()), requestID: requestID)
        case .userControl(let control):
            guard let name = adminTarget(connection, control.handler, requestID: requestID) else { return }
            if control.state == "stopped" {
                quitByUser(name)
                apply(name, slots[name]!.machine.userStop())
            } else {
                apply(name, slots[name]!.machine.userStart(now: now))
            }
            connection.send(.ok(.init()), requestID: requestID)
        case .rotateKey:
            guard isAdmin(connection) else {
                connection.sendError("notAuthorized", "rotateKey is for the agent's user or root", requestID: requestID)
                return
            }
            rotateKey(connection, requestID: requestID)
        case .reportCall, .callEnded, .complete, .beginTask, .endTask, .setState, .activate, .deactivate, .preserve,
            .restoreReply, .unknown:
            connection.sendError("notRegistered", "the first message must be register (got \(frame.message.type))")
            connection.close()
        }
    }

    /// The configured handler an admin request names, nil (answered `notAuthorized`) when the peer is not an
    /// admin or names no configured handler.
    private func adminTarget(_ connection: IPCConnection, _ handler: String?, requestID: Int?) -> String? {
        guard isAdmin(connection), let name = handler, slots[name] != nil else {
            connection.sendError(
                "notAuthorized", "admin requests are for the agent's user or root, naming a handler",
                requestID: requestID)
            return nil
        }
        return name
    }

    /// Who may act as handler `name`: the connection its launch created, or a peer whose uid is the
    /// handler's and whose executable is the handler's command, checked through its pidfd.
    private func authorize(_ connection: IPCConnection, as name: String) -> String? {
        guard let slot = slots[name] else { return "unknown handler" }
        if let launchedFor = connection.launchedFor {
            return launchedFor == name ? nil : "this connection belongs to handler \(launchedFor)"
        }
        if slot.preservation.adopted, slot.connection == nil {
            return isAdoptedProcess(name, connection) ? nil : "handler \(name) runs as a re-attached process"
        }
        guard let peer = connection.peer, peer.pidfd >= 0 else { return "no peer credentials" }
        guard
            let expectedUID = try? HandlerCredentials.resolve(
                slot.configuration, agentUID: agentUID, agentGID: AgentSyscalls.gid,
                defaultUser: configuration.handlerUser
            ).account.uid
        else { return "handler \(name) may not run (see its launch error)" }
        guard peer.uid == expectedUID else { return "uid \(peer.uid) is not the handler's uid \(expectedUID)" }
        guard let executable = AgentSyscalls.executable(pid: peer.pid),
            let expected = AgentSyscalls.realPath(slot.configuration.command[0])
        else { return "cannot read the peer's executable" }
        // The pidfd pins the process: if it still has pid `peer.pid`, the executable read above is its own.
        guard AgentSyscalls.pid(ofPidfd: peer.pidfd) == peer.pid else { return "peer exited while being checked" }
        guard executable == expected else { return "executable \(executable) is not \(expected)" }
        if slot.connection != nil { return "handler \(name) is already connected" }
        return nil
    }

    /// A message from registered handler `name`.
    private func handleRegistered(_ name: String, _ connection: IPCConnection, _ frame: IPCFrame<AgentRequest>) {
        let requestID = frame.requestID
        guard slots[name]?.connection === connection else {
            // Its handler was removed by a reload (or replaced): nothing to act on.
            connection.sendError("unknownHandler", "handler \(name) is no longer configured", requestID: requestID)
            connection.close()
            return
        }
        let current = now
        switch frame.message {
        case .reportCall(let report):
            guard let callID = report.callID else {
                connection.sendError("badRequest", "reportCall needs callID", requestID: requestID)
                return
            }
            apply(name, slots[name]!.machine.reportCall(pushID: report.pushID, callID: callID, now: current))
            callStarted(name, connection, report)
        case .callEnded(let ended):
            apply(name, slots[name]!.machine.callEnded(callID: ended.callID ?? "", now: current))
            if slots[name]?.machine.activeCalls.isEmpty == true {
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
            apply(name, slots[name]!.machine.complete(pushID: pushID, result: result, now: current))
        case .beginTask(let task):
            let (id, actions) = slots[name]!.machine.beginTask(name: task.taskName ?? "unnamed", now: current)
            if id == nil {
                connection.sendError("taskInvalid", "no background time left", requestID: requestID)
            }
            apply(name, actions)
        case .endTask(let task):
            apply(name, slots[name]!.machine.endTask(id: task.taskID ?? -1, now: current))
        case .setState(let request):
            guard let state = request.state.flatMap(HandlerLifecycle.init(rawValue:)),
                [.active, .inactive, .background].contains(state)
            else {
                connection.sendError(
                    "badRequest", "setState needs state active|inactive|background", requestID: requestID)
                return
            }
            apply(name, slots[name]!.machine.setState(state, now: current))
            if state == .background { wentToBackground(name) }
        case .status:
            connection.send(.statusReply(.init(detail: statusJSON())), requestID: requestID)
        case .preserve(let preserve):
            preserveReceived(name, connection, preserve)
        case .restoreReply(let reply):
            restoreReplied(name, connection, reply)
        case .register, .sessions, .routeChanged, .reregister, .userControl, .rotateKey, .unknown:
            // A second register and the admin requests are not a handler's (version 1 answers them so too).
            connection.sendError(
                "unknownType", "unknown message type \(frame.message.type)", requestID: requestID)
        }
    }
}
