import RouseAgentCore
import Testing

/// The lock screen's order of events for protected data.
struct SessionLockMachineTests {
    /// Lock: handlers told, then keys dropped once the grace is over (not before); unlock: keys first, then told.
    @Test func lockTellsThenDropsAfterTheGraceAndUnlockLoadsThenTells() {
        var machine = SessionLockMachine(locked: false, grace: 0.5)
        #expect(machine.unlockedOnce)
        #expect(machine.locked(now: 10) == [.tellWillBecomeUnavailable, .armTimer(deadline: 10.5)])
        #expect(machine.completeAvailable)
        #expect(machine.locked(now: 10.1) == [])  // LockedHint after the Lock signal: one lock
        #expect(machine.tick(now: 10.4) == [])
        #expect(machine.tick(now: 10.5) == [.dropKeys])
        #expect(!machine.completeAvailable)
        #expect(machine.unlocked(now: 20) == [.loadKeys, .tellDidBecomeAvailable])
        #expect(machine.unlocked(now: 20.1) == [])
    }

    /// Unlocked within the grace: the keys never go, and the handlers hear that data is back.
    @Test func unlockWithinTheGraceKeepsTheKeys() {
        var machine = SessionLockMachine(locked: false, grace: 0.5)
        _ = machine.locked(now: 1)
        #expect(machine.unlocked(now: 1.2) == [.cancelTimer, .tellDidBecomeAvailable])
        #expect(machine.tick(now: 2) == [])
        #expect(machine.completeAvailable)
    }

    /// An agent started in a locked session (boot, before the user logged in) reports the first unlock once.
    @Test func theFirstUnlockIsReportedOnce() {
        var machine = SessionLockMachine(locked: true)
        #expect(!machine.unlockedOnce)
        #expect(!machine.completeAvailable)
        #expect(machine.unlocked(now: 5) == [.loadKeys, .tellDidBecomeAvailable, .firstUnlock])
        _ = machine.locked(now: 6)
        _ = machine.tick(now: 7)
        #expect(machine.unlocked(now: 8) == [.loadKeys, .tellDidBecomeAvailable])
    }
}
