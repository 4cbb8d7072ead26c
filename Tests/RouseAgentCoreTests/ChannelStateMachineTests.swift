import RouseAgentCore
import Testing

@Suite("Device channel connection machine", .timeLimit(.minutes(1)))
struct ChannelStateMachineTests {
    @Test func reachabilityDrivesConnectAndClose() {
        var machine = ChannelStateMachine()
        #expect(machine.reachability(true) == [.cancelTimer, .connect])
        #expect(machine.opened(heartbeatSeconds: 0) == [.cancelTimer])
        #expect(machine.state == .open)
        #expect(machine.reachability(false) == [.close, .cancelTimer])
        #expect(machine.state == .waitingForNetwork)
        #expect(machine.reachability(true) == [.cancelTimer, .connect])
    }

    /// A heartbeat no gateway would send (a day at most is accepted) fails the channel instead of trapping.
    @Test(arguments: [Int.max, Int(Int32.max), 86_401, -1])
    func anOutOfRangeHeartbeatFailsTheChannel(_ heartbeat: Int) {
        var machine = ChannelStateMachine()
        _ = machine.reachability(true)
        let actions = machine.opened(heartbeatSeconds: heartbeat)
        #expect(actions.first == .close && machine.state == .backingOff, "\(actions)")
        _ = machine.timerFired()
        #expect(machine.opened(heartbeatSeconds: 86_400) == [.armTimer(.seconds(86_400 * 2 + 10))])
    }

    @Test func failuresBackOffWithJitterAndNetworkBackSkipsBackoff() {
        var machine = ChannelStateMachine()
        _ = machine.reachability(true)
        var previous = Duration.zero
        for attempt in 0..<6 {
            let actions = machine.failed(.retryable)
            guard case .armTimer(let delay)? = actions.last else {
                Issue.record("no timer: \(actions)")
                return
            }
            let nominal = Duration.milliseconds(500) * (1 << attempt)
            #expect(delay >= nominal / 2 && delay <= nominal, "attempt \(attempt): \(delay)")
            #expect(machine.timerFired() == [.connect])
            previous = delay
        }
        _ = previous
        _ = machine.failed(.retryable)
        #expect(machine.state == .backingOff)
        _ = machine.reachability(false)
        #expect(machine.reachability(true) == [.cancelTimer, .connect])
    }

    @Test func heartbeatDeadlineAndSourceAddress() {
        var machine = ChannelStateMachine()
        _ = machine.reachability(true)
        #expect(machine.opened(heartbeatSeconds: 240) == [.armTimer(.seconds(490))])
        #expect(machine.recordReceived() == [.armTimer(.seconds(490))])
        let dead = machine.timerFired()
        #expect(dead.first == .close)
        #expect(machine.state == .backingOff)
        _ = machine.timerFired()
        _ = machine.opened(heartbeatSeconds: 0)
        #expect(machine.sourceAddressChanged() == [.close, .cancelTimer, .connect])
    }

    @Test func revokedStops() {
        var machine = ChannelStateMachine()
        _ = machine.reachability(true)
        _ = machine.opened(heartbeatSeconds: 0)
        #expect(machine.failed(.fatal) == [.close, .cancelTimer])
        #expect(machine.state == .stopped)
        #expect(machine.reachability(true).isEmpty)
    }
}

@Suite("Device channel machine with several gateway nodes", .timeLimit(.minutes(1)))
struct ChannelStateMachineNodesTests {
    @Test("a failure or an end by the gateway moves to the next node, in turn, after the usual backoff")
    func rotatesOnFailure() {
        var machine = ChannelStateMachine(gateways: 3)
        _ = machine.reachability(true)
        #expect(machine.gateway == 0)
        _ = machine.opened(heartbeatSeconds: 0)
        guard case .armTimer(let delay)? = machine.closedByGateway().last else {
            Issue.record("no backoff")
            return
        }
        #expect(delay >= .milliseconds(250) && delay <= .milliseconds(500))
        #expect(machine.gateway == 1)
        #expect(machine.timerFired() == [.connect])
        _ = machine.failed(.retryable)
        #expect(machine.gateway == 2)
        _ = machine.timerFired()
        _ = machine.failed(.retryable)
        #expect(machine.gateway == 0)
    }

    @Test("the network going away is not the node's fault: the node stays; one gateway never moves")
    func networkLossKeepsTheNode() {
        var machine = ChannelStateMachine(gateways: 2)
        _ = machine.reachability(true)
        _ = machine.opened(heartbeatSeconds: 0)
        _ = machine.reachability(false)
        #expect(machine.gateway == 0)
        var single = ChannelStateMachine()
        _ = single.reachability(true)
        _ = single.failed(.retryable)
        #expect(single.gateway == 0)
    }
}
