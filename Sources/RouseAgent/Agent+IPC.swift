import Foundation
import Logging
import RouseAgentClient

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
        case .message(let message):
            if let name = registered[connection.id] {
                handleRegistered(name, connection, message)
            } else {
                handleUnregistered(connection, message)
            }
        }
    }

    private var agentUID: UInt32 { AgentSyscalls.uid }

    private func isAdmin(_ connection: IPCConnection) -> Bool {
        guard let peer = connection.peer else { return false }
        return peer.uid == 0 || peer.uid == agentUID
    }

    private func handleUnregistered(_ connection: IPCConnection, _ message: AgentMessage) {
        switch message.kind {
        case .register:
            guard let name = message.handler, slots[name] != nil else {
                connection.sendError("unknownHandler", "no handler named \(message.handler ?? "(none)")")
                connection.close()
                return
            }
            if let reason = authorize(connection, as: name) {
                logger.warning(
                    "handler impersonation refused",
                    metadata: ["handler": "\(name)", "conn-id": "\(connection.id)", "reason": "\(reason)"])
                connection.sendError("notAuthorized", reason, requestID: message.requestID)
                connection.close()
                return
            }
            var slot = slots[name]!
            slot.connection = connection
            slots[name] = slot
            registered[connection.id] = name
            registrationTimers.removeValue(forKey: connection.id)?.cancel()
            var reply = AgentMessage(type: .registered)
            reply.handler = name
            reply.launchReason = slot.launchReason ?? "connected"
            connection.send(reply)
            handTokens(name, force: true)
            var notice = AgentMessage(type: .reachability)
            notice.reachable = gatewayReachable
            connection.send(notice)
            logger.info("handler registered", metadata: ["handler": "\(name)", "conn-id": "\(connection.id)"])
            registeredForPreservation(name, connection, optIn: message.preserves == true)
            flushActivationOutbox(name)
            apply(name, slots[name]!.machine.registered(now: now))
        case .status:
            guard isAdmin(connection) else {
                connection.sendError(
                    "notAuthorized", "status is for the agent's user or root", requestID: message.requestID)
                return
            }
            var reply = AgentMessage(type: .statusReply)
            reply.detail = statusJSON()
            connection.send(reply, answering: message)
        case .sessions:
            guard isAdmin(connection) else {
                connection.sendError(
                    "notAuthorized", "sessions is for the agent's user or root", requestID: message.requestID)
                return
            }
            var reply = AgentMessage(type: .sessionsReply)
            reply.detail = arbiter.snapshot.json()
            connection.send(reply, answering: message)
        case .routeChanged:
            guard isAdmin(connection) else {
                connection.sendError(
                    "notAuthorized", "route changes come from the agent's user or root", requestID: message.requestID)
                return
            }
            guard let reason = message.reason, !reason.isEmpty else {
                connection.sendError("badRequest", "routeChanged needs reason", requestID: message.requestID)
                return
            }
            routeChanged(reason)
            connection.send(AgentMessage(type: .ok), answering: message)
        case .reregister, .userControl:
            guard isAdmin(connection), let name = message.handler, slots[name] != nil else {
                connection.sendError(
                    "notAuthorized", "admin requests are for the agent's user or root, naming a handler",
                    requestID: message.requestID)
                return
            }
            if message.kind == .reregister {
                apply(name, slots[name]!.machine.reregister())
            } else if message.state == "stopped" {
                quitByUser(name)
                apply(name, slots[name]!.machine.userStop())
            } else {
                apply(name, slots[name]!.machine.userStart(now: now))
            }
            connection.send(AgentMessage(type: .ok), answering: message)
        case .rotateKey:
            guard isAdmin(connection) else {
                connection.sendError(
                    "notAuthorized", "rotateKey is for the agent's user or root", requestID: message.requestID)
                return
            }
            rotateKey(connection, message)
        default:
            connection.sendError("notRegistered", "the first message must be register (got \(message.type))")
            connection.close()
        }
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

    private func handleRegistered(_ name: String, _ connection: IPCConnection, _ message: AgentMessage) {
        guard slots[name]?.connection === connection else {
            // Its handler was removed by a reload (or replaced): nothing to act on.
            connection.sendError(
                "unknownHandler", "handler \(name) is no longer configured", requestID: message.requestID)
            connection.close()
            return
        }
        let current = now
        switch message.kind {
        case .reportCall:
            guard let callID = message.callID else {
                connection.sendError("badRequest", "reportCall needs callID", requestID: message.requestID)
                return
            }
            apply(name, slots[name]!.machine.reportCall(pushID: message.pushID, callID: callID, now: current))
            callStarted(name, connection, message)
        case .callEnded:
            apply(name, slots[name]!.machine.callEnded(callID: message.callID ?? "", now: current))
            if slots[name]?.machine.activeCalls.isEmpty == true {
                callEnded(name, notifyOthers: message.notifyOthers ?? true)
            }
        case .activate:
            activate(name, connection, message)
        case .deactivate:
            deactivate(name, connection, message)
        case .complete:
            guard let pushID = message.pushID, let result = message.result,
                BackgroundFetchResult(rawValue: result) != nil
            else {
                connection.sendError(
                    "badRequest", "complete needs pushID and result newData|noData|failed", requestID: message.requestID
                )
                return
            }
            apply(name, slots[name]!.machine.complete(pushID: pushID, result: result, now: current))
        case .beginTask:
            let (id, actions) = slots[name]!.machine.beginTask(name: message.taskName ?? "unnamed", now: current)
            if id == nil {
                connection.sendError("taskInvalid", "no background time left", requestID: message.requestID)
            }
            apply(name, actions)
        case .endTask:
            apply(name, slots[name]!.machine.endTask(id: message.taskID ?? -1, now: current))
        case .setState:
            guard let state = message.state.flatMap(HandlerLifecycle.init(rawValue:)),
                [.active, .inactive, .background].contains(state)
            else {
                connection.sendError(
                    "badRequest", "setState needs state active|inactive|background", requestID: message.requestID)
                return
            }
            apply(name, slots[name]!.machine.setState(state, now: current))
            if state == .background { wentToBackground(name) }
        case .status:
            var reply = AgentMessage(type: .statusReply)
            reply.detail = statusJSON()
            connection.send(reply, answering: message)
        case .preserve:
            preserveReceived(name, connection, message)
        case .restoreReply:
            restoreReplied(name, connection, message)
        default:
            connection.sendError("unknownType", "unknown message type \(message.type)", requestID: message.requestID)
        }
    }
}
