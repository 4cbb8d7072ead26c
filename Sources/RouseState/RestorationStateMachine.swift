/// What is persisted about a handler's launches, next to its archive.
package struct LaunchRecord: Sendable, Equatable {
    /// Launches started in a row that have not finished (the current one included, once it started).
    package var unfinishedLaunches: Int
    /// The user explicitly quit the handler: no restoration at its next launch, no preservation until then.
    package var quitByUser: Bool

    /// A record; the default is a handler that never launched.
    package init(unfinishedLaunches: Int = 0, quitByUser: Bool = false) {
        self.unfinishedLaunches = unfinishedLaunches
        self.quitByUser = quitByUser
    }

    func encoded() -> [UInt8] {
        var writer = BinaryWriter()
        writer.integer(1, bytes: 2)
        writer.integer(UInt64(max(0, unfinishedLaunches)), bytes: 4)
        writer.integer(quitByUser ? 1 : 0, bytes: 1)
        return writer.bytes
    }

    static func decode(_ bytes: [UInt8], file: String) throws(StateError) -> LaunchRecord {
        var reader = BinaryReader(bytes, file: file)
        let version = UInt16(truncatingIfNeeded: try reader.integer(bytes: 2))
        guard version == 1 else { throw StateError(.unsupportedFormatVersion(version), file: file) }
        let launches = Int(try reader.integer(bytes: 4))
        let quit = try reader.integer(bytes: 1) != 0
        try reader.finish()
        return LaunchRecord(unfinishedLaunches: launches, quitByUser: quit)
    }
}

/// Why preserved state was not restored.
package enum DiscardReason: String, Sendable, Equatable {
    /// Two launches in a row crashed before finishing (the agent's own archive).
    case crashLoop = "crash-loop"
    /// The last launch crashed during restoration (before `restorationFinished` or the grace): the guide's rule.
    case crashedDuringRestoration = "crashed-during-restoration"
    /// The user explicitly quit the handler.
    case quitByUser = "quit-by-user"
    /// The archive's format version is not one this reader accepts.
    case unsupportedVersion = "unsupported-version"
    /// The handler refused it (e.g. after reading the version that wrote it).
    case refusedByHandler = "refused-by-handler"
    /// The sealed file failed its checks (tampered, truncated, foreign, wrong key).
    case integrityFailure = "integrity-failure"
    /// Restoring a piece failed: the rest is discarded and the handler starts clean.
    case restoreFailed = "restore-failed"
    /// It was offered during a launch that finished.
    case consumed = "consumed"
    /// The handler no longer opts in to preservation.
    case optedOut = "opted-out"
}

/// The restoration rules for one handler, as a value-type state machine: feed it events, carry out the
/// actions it returns (persist the launch record, load, offer or delete the archive).
///
/// idle ─launchStarted→ launching ─archiveLoaded→ offered ─restoreFinished/Failed→ restored
///  ↑                                     └────────(nothing to offer)──────────────────┘   │
///  └───────────────────────────── launchFinished ←────────────────────────────────────────┘
package struct RestorationStateMachine: Sendable, Equatable {
    /// Unfinished launches in a row after which a handler's archive is discarded: one (the App Programming Guide: "if
    /// your app crashes during the restoration process, the system automatically throws away the state information
    /// during the next launch cycle"). A launch finishes at `restorationFinished` or, failing that, the grace.
    package static let crashLimit = 1
    /// The same for the agent's own archive: two ("crashes twice during launch"), as its launch finishes only by the
    /// grace timer (its restoration is synchronous; the timer guards against a crash the restored state causes).
    package static let crashLoopLimit = 2

    /// Where the current launch is.
    package enum State: Sendable, Equatable {
        /// No launch in progress (before one, or after `launchFinished`).
        case idle
        /// The launch was counted; the archive is being loaded.
        case launching
        /// The archive is on offer to the handler.
        case offered
        /// Restoration is over for this launch (restored, refused, discarded, or nothing to restore).
        case restored
    }

    /// What the I/O shell must do.
    package enum Action: Sendable, Equatable {
        /// Write the launch record (durably, before anything is restored).
        case persist(LaunchRecord)
        /// Load the archive and report it with `archiveLoaded`.
        case loadArchive
        /// Delete the archive, logging the reason.
        case discardArchive(DiscardReason)
        /// Offer the loaded archive to the handler (once).
        case offerArchive
    }

    /// Where the current launch is.
    package private(set) var state: State = .idle
    /// The launch record as it must be persisted.
    package private(set) var record: LaunchRecord
    /// A new archive was written during this launch: finishing it must not delete that one.
    package private(set) var preservedThisLaunch = false

    /// A machine starting from the persisted record (`nil` when there is none).
    package init(record: LaunchRecord?) { self.record = record ?? LaunchRecord() }

    /// A launch begins: count it before restoring anything, apply crash-loop and user-quit rules.
    /// `crashLimit`: unfinished launches before this one that discard the archive (``crashLimit`` for a handler,
    /// ``crashLoopLimit``, the default, for the agent's own).
    package mutating func launchStarted(crashLimit: Int = Self.crashLoopLimit) -> [Action] {
        guard state == .idle else { return [] }
        state = .launching
        preservedThisLaunch = false
        var actions: [Action] = []
        var discard: DiscardReason?
        if record.quitByUser {
            discard = .quitByUser
        } else if record.unfinishedLaunches >= max(1, crashLimit) {
            discard = crashLimit <= 1 ? .crashedDuringRestoration : .crashLoop
        }
        record.quitByUser = false
        record.unfinishedLaunches += 1
        actions.append(.persist(record))
        if let discard {
            actions.append(.discardArchive(discard))
            state = .restored
        } else {
            actions.append(.loadArchive)
        }
        return actions
    }

    /// The archive was loaded: `nil` when there is none, `accepted` whether its version is accepted.
    package mutating func archiveLoaded(present: Bool, accepted: Bool) -> [Action] {
        guard state == .launching else { return [] }
        guard present else {
            state = .restored
            return []
        }
        guard accepted else {
            state = .restored
            return [.discardArchive(.unsupportedVersion)]
        }
        state = .offered
        return [.offerArchive]
    }

    /// The archive failed its checks while loading (the store already discarded it).
    package mutating func archiveFailed() -> [Action] {
        guard state == .launching else { return [] }
        state = .restored
        return []
    }

    /// The handler refused the offered archive.
    package mutating func refused() -> [Action] {
        guard state == .offered else { return [] }
        state = .restored
        return [.discardArchive(.refusedByHandler)]
    }

    /// Restoring went through (pieces that no longer match were skipped).
    package mutating func restoreFinished() -> [Action] {
        guard state == .offered else { return [] }
        state = .restored
        return []
    }

    /// Restoring a piece failed: the rest is discarded.
    package mutating func restoreFailed() -> [Action] {
        guard state == .offered else { return [] }
        state = .restored
        return [.discardArchive(.restoreFailed)]
    }

    /// The launch finished (the handler is up): clear the counter; the archive, offered once, is gone.
    package mutating func launchFinished() -> [Action] {
        guard state != .idle else { return [] }
        state = .idle
        record.unfinishedLaunches = 0
        return preservedThisLaunch ? [.persist(record)] : [.persist(record), .discardArchive(.consumed)]
    }

    /// The launched process ended before `launchFinished` (it crashed or was killed): the counter stays
    /// as persisted, and the next `launchStarted` counts a new launch.
    package mutating func launchAbandoned() {
        guard state != .idle else { return }
        state = .idle
        preservedThisLaunch = false
    }

    /// Whether state may be preserved now (not after an explicit quit, until the next launch).
    package var mayPreserve: Bool { !record.quitByUser }

    /// A new archive was written.
    package mutating func preserved() {
        if state != .idle { preservedThisLaunch = true }
    }

    /// The user explicitly quit the handler: its preserved state is deleted and none is kept until it is
    /// launched again.
    package mutating func quitByUser() -> [Action] {
        state = .idle
        record.quitByUser = true
        record.unfinishedLaunches = 0
        return [.persist(record), .discardArchive(.quitByUser)]
    }
}
