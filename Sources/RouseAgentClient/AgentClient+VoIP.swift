import RouseWire
import Synchronization

/// The socket-woken VoIP model (docs/voip-sockets.md): a handler hands the agent its connected signalling socket
/// (iOS: "configure one of the app's sockets for VoIP usage"); while the handler is suspended or gone the agent
/// watches it, and data on it wakes the handler (`voipSocketWake`, launch reason `voipSocket`), which then owes a
/// call report as for a VoIP push. A keep-alive (`setKeepAliveTimeout:handler:`) wakes it at an interval to keep
/// its registration alive.
extension AgentClient {
    /// Hands the connected socket `descriptor` to the agent to watch (the handler keeps its own descriptor and goes
    /// on using it): its id. Throws ``AgentRequestError`` `badDescriptor` (not a connected socket) or `tooManySockets`.
    public func addVoIPSocket(_ descriptor: Int32) async throws -> AgentEvent.VoIPSocket {
        let answer = try await request(.addVoIPSocket(.init()), descriptor: descriptor)
        guard case .voipSocket(let socket) = answer else {
            throw AgentRequestError(code: "badAnswer", detail: "addVoIPSocket answered with \(answer.type)")
        }
        return socket
    }

    /// The agent stops watching socket `socketID` and closes its copy.
    public func removeVoIPSocket(_ socketID: Int) async throws {
        _ = try await request(.removeVoIPSocket(.init(socketID: socketID)))
    }

    /// The data of socket wake `wakeID` was no incoming call (no report is owed for it). For a call, report it with
    /// ``reportCall(pushID:callID:configuration:)`` and `pushID: wakeID` instead.
    public func voipWakeHandled(_ wakeID: String) async throws {
        _ = try await request(.voipWakeHandled(.init(wakeID: wakeID)))
    }

    /// Asks for a keep-alive wake every `seconds` (at least 600, as iOS's `setKeepAliveTimeout`): `keepAlive`
    /// messages arrive in ``messages``. Throws `keepAliveTooShort` below 600 s.
    public func setKeepAlive(seconds: Double) async throws {
        _ = try await request(.setKeepAlive(.init(seconds: seconds)))
    }

    /// No more keep-alive wakes (`clearKeepAliveTimeout`).
    public func clearKeepAlive() async throws {
        _ = try await request(.clearKeepAlive)
    }

    /// The keep-alive `keepAliveID` is done: the handler may be suspended before its budget ends.
    public func keepAliveDone(_ keepAliveID: String) async throws {
        _ = try await request(.keepAliveDone(.init(keepAliveID: keepAliveID)))
    }

    /// The descriptor of watched socket `socketID` handed back after a relaunch (`voipSocket` with `returned: true`),
    /// once; the caller owns it. The agent keeps its own copy and goes on watching the socket.
    public func takeReturnedSocket(socketID: Int) -> Int32? {
        returnedSockets.take(socketID)
    }

    private func request(_ message: AgentRequest, descriptor: Int32) async throws -> AgentEvent {
        let answer: AgentEvent = try await withCheckedThrowingContinuation { waiter in
            guard let id = requests.register(waiter) else {
                waiter.resume(throwing: AgentRequestError(code: "connectionClosed", detail: "the connection is closed"))
                return
            }
            do {
                try connection.withLock { $0.socket }.write(
                    FrameCodec.encode(message, requestID: id), descriptor: descriptor)
            } catch {
                requests.take(id)?.resume(throwing: error)
            }
        }
        if case .error(let failure) = answer { throw AgentRequestError(failure) }
        return answer
    }
}
