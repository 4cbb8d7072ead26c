import Logging
import Synchronization

/// Preserved state offered to a handler at launch. Restore it through `PreservationStore.restore`; it can
/// be restored once.
package struct Restoration: Sendable {
    /// What wrote the archive.
    package let info: PreservationArchive.Info
    /// The preserved pieces, parents first.
    package let pieces: [(path: RestorationPath, data: [UInt8])]
}

/// What a restore did.
package struct RestoreOutcome: Sendable, Equatable {
    /// Pieces given back, in order.
    package var restored: [RestorationPath] = []
    /// Pieces whose identifier no longer maps to current data (not an error).
    package var skipped: [RestorationPath] = []
    /// The piece whose restore failed, after which the rest was discarded.
    package var failedAt: RestorationPath?
    /// Whether nothing was done because the archive was not (or no longer) on offer.
    package var notOffered = false
}

/// Preservation and restoration for the agent and its handlers, over a sealed-file store: per handler, the
/// archive `<handler>.state` and the launch record `<handler>.launch`, driven by a
/// `RestorationStateMachine` each. Thread-safe; the calls for one handler are expected one at a time (the
/// agent serialises a handler's lifecycle events).
package final class PreservationStore: Sendable {
    /// The sealed-file kind of archives.
    package static let archiveKind = "preservation"
    /// The sealed-file kind of launch records.
    package static let launchRecordKind = "launch-record"

    /// The store underneath.
    package let store: SealedStore
    let logger: Logger
    let protection: ProtectionClass
    private let machines = Mutex<[String: RestorationStateMachine]>([:])

    /// Archives are sealed with `protection` (launch records always with `.none`: the counter must be
    /// writable before anyone unlocks).
    package init(store: SealedStore, logger: Logger, protection: ProtectionClass = .none) {
        self.store = store
        self.logger = logger
        self.protection = protection
    }

    static func archiveName(_ handler: String) -> String { "\(handler).state" }
    static func recordName(_ handler: String) -> String { "\(handler).launch" }

    /// Preserves `archive` for `archive.info.handler` (an opted-in handler going to the background, or
    /// before it is suspended or terminated). Returns `false`, writing nothing, after the user quit the
    /// handler and until its next launch.
    @discardableResult
    package func preserve(_ archive: PreservationArchive) throws(StateError) -> Bool {
        let handler = archive.info.handler
        var machine = try machine(handler)
        guard machine.mayPreserve else {
            logger.info("preservation refused: the user quit the handler", metadata: ["handler": "\(handler)"])
            return false
        }
        try store.write(
            archive.encoded(), name: Self.archiveName(handler), kind: Self.archiveKind, protection: protection)
        machine.preserved()
        save(handler, machine)
        return true
    }

    /// A launch of `handler` begins. Persists the launch counter first, applies the crash-loop and user-quit
    /// rules, loads the archive and asks `accepts` about its version. Returns the restoration on offer, or
    /// `nil` when there is none (nothing preserved, or discarded — the log says why).
    package func beginLaunch(
        handler: String, crashLimit: Int = RestorationStateMachine.crashLoopLimit,
        accepts: (PreservationArchive.Info) -> Bool = { _ in true }
    ) throws(StateError) -> Restoration? {
        var machine = try machine(handler)
        var archive: PreservationArchive?
        var actions = machine.launchStarted(crashLimit: crashLimit)
        while !actions.isEmpty {
            let action = actions.removeFirst()
            switch action {
            case .persist(let record):
                try persist(record, handler)
            case .discardArchive(let reason):
                try discard(handler, reason)
            case .loadArchive:
                do throws(StateError) {
                    switch try load(handler) {
                    case .none:
                        actions += machine.archiveLoaded(present: false, accepted: false)
                    case .unsupportedFormat(let version):
                        logger.notice(
                            "preserved state has an unsupported archive format",
                            metadata: ["handler": "\(handler)", "format-version": "\(version)"])
                        actions += machine.archiveLoaded(present: true, accepted: false)
                    case .archive(let loaded):
                        archive = loaded
                        actions += machine.archiveLoaded(present: true, accepted: accepts(loaded.info))
                    }
                } catch {
                    if error.isLocked {
                        logger.notice(
                            "preserved state not offered: its protection class is locked",
                            metadata: ["handler": "\(handler)"])
                    } else if error.isIntegrityFailure {
                        logger.error(
                            "discarded preserved state",
                            metadata: ["handler": "\(handler)", "reason": "\(error.reason)", "error": "\(error)"])
                        _ = try? store.remove(Self.archiveName(handler))
                    } else {
                        save(handler, machine)
                        throw error
                    }
                    actions += machine.archiveFailed()
                }
            case .offerArchive:
                break
            }
        }
        save(handler, machine)
        guard machine.state == .offered, let archive else { return nil }
        logger.info(
            "preserved state offered",
            metadata: ["handler": "\(handler)", "pieces": "\(archive.preservedPieces.count)"])
        return Restoration(info: archive.info, pieces: archive.preservedPieces)
    }

    /// Gives every piece back to `apply`, parents first, under the paths they were preserved at. If `apply`
    /// throws, the rest is discarded and the handler starts clean.
    package func restore(
        _ restoration: Restoration, apply: (RestorationPath, [UInt8]) throws -> Void
    ) throws(StateError) -> RestoreOutcome {
        try restore(restoration, identify: { $0 }, apply: { path, data in try apply(path, data) })
    }

    /// Restores through an identifier mapping: `identify` maps a path back to the current object it stands
    /// for; a path that no longer matches (`nil`) is skipped, not an error. If `apply` throws, the rest is
    /// discarded and the handler starts clean.
    package func restore<Item>(
        _ restoration: Restoration, identify: (RestorationPath) -> Item?, apply: (Item, [UInt8]) throws -> Void
    ) throws(StateError) -> RestoreOutcome {
        let handler = restoration.info.handler
        var machine = try machine(handler)
        var outcome = RestoreOutcome()
        guard machine.state == .offered else {
            outcome.notOffered = true
            return outcome
        }
        for piece in restoration.pieces {
            guard let item = identify(piece.path) else {
                outcome.skipped.append(piece.path)
                continue
            }
            do {
                try apply(item, piece.data)
                outcome.restored.append(piece.path)
            } catch {
                outcome.failedAt = piece.path
                logger.error(
                    "restore failed part-way: the rest is discarded",
                    metadata: ["handler": "\(handler)", "path": "\(piece.path)", "error": "\(error)"])
                let actions = machine.restoreFailed()
                save(handler, machine)
                try run(actions, handler)
                return outcome
            }
        }
        _ = machine.restoreFinished()
        save(handler, machine)
        if !outcome.skipped.isEmpty {
            logger.info(
                "restored; pieces that no longer match were skipped",
                metadata: ["handler": "\(handler)", "skipped": "\(outcome.skipped.count)"])
        }
        return outcome
    }

    /// The handler refused the offered state.
    package func refuse(handler: String) throws(StateError) {
        var machine = try machine(handler)
        let actions = machine.refused()
        save(handler, machine)
        try run(actions, handler)
    }

    /// The launch finished (the handler is up and healthy): clears the crash counter; the archive that was
    /// offered is deleted.
    package func finishLaunch(handler: String) throws(StateError) {
        var machine = try machine(handler)
        let actions = machine.launchFinished()
        save(handler, machine)
        try run(actions, handler)
    }

    /// The handler's process ended before ``finishLaunch(handler:)`` (a crashed launch): it stays counted,
    /// and the next ``beginLaunch(handler:accepts:)`` starts a new launch (an agent outlives its handlers).
    package func launchAbandoned(handler: String) throws(StateError) {
        var machine = try machine(handler)
        machine.launchAbandoned()
        save(handler, machine)
    }

    /// The user explicitly quit `handler`: its preserved state is deleted, and none is kept until its next
    /// launch.
    package func quitByUser(handler: String) throws(StateError) {
        var machine = try machine(handler)
        let actions = machine.quitByUser()
        save(handler, machine)
        try run(actions, handler)
    }

    /// The handler no longer opts in to preservation (or is unregistered): its archive and launch record are
    /// deleted.
    package func forget(handler: String) throws(StateError) {
        try SealedStore.validate(Self.archiveName(handler))
        try discard(handler, .optedOut)
        try store.remove(Self.recordName(handler))
        machines.withLock { $0[handler] = nil }
    }

    /// The handler's state machine (for inspection).
    package func state(handler: String) throws(StateError) -> RestorationStateMachine { try machine(handler) }

    private func run(_ actions: [RestorationStateMachine.Action], _ handler: String) throws(StateError) {
        for action in actions {
            switch action {
            case .persist(let record): try persist(record, handler)
            case .discardArchive(let reason): try discard(handler, reason)
            case .loadArchive, .offerArchive: break
            }
        }
    }

    private func machine(_ handler: String) throws(StateError) -> RestorationStateMachine {
        try SealedStore.validate(Self.archiveName(handler))
        if let machine = machines.withLock({ $0[handler] }) { return machine }
        var record: LaunchRecord?
        do throws(StateError) {
            if let bytes = try store.read(name: Self.recordName(handler), kind: Self.launchRecordKind) {
                record = try LaunchRecord.decode(bytes, file: Self.recordName(handler))
            }
        } catch {
            guard error.isIntegrityFailure else { throw error }
            // Discarded by the store (or undecodable): start from a fresh record.
            _ = try? store.remove(Self.recordName(handler))
        }
        let machine = RestorationStateMachine(record: record)
        machines.withLock { $0[handler] = $0[handler] ?? machine }
        return machines.withLock { $0[handler] ?? machine }
    }

    private func save(_ handler: String, _ machine: RestorationStateMachine) {
        machines.withLock { $0[handler] = machine }
    }

    private func persist(_ record: LaunchRecord, _ handler: String) throws(StateError) {
        try store.write(record.encoded(), name: Self.recordName(handler), kind: Self.launchRecordKind)
    }

    /// What loading an archive found.
    private enum Loaded {
        case none
        case archive(PreservationArchive)
        /// The archive's own format version is not this reader's: discarded as a version mismatch.
        case unsupportedFormat(UInt16)
    }

    private func load(_ handler: String) throws(StateError) -> Loaded {
        let name = Self.archiveName(handler)
        guard let bytes = try store.read(name: name, kind: Self.archiveKind) else { return .none }
        do throws(StateError) {
            return .archive(try PreservationArchive.decode(bytes, file: name))
        } catch {
            if case .unsupportedFormatVersion(let version) = error.code { return .unsupportedFormat(version) }
            throw error
        }
    }

    private func discard(_ handler: String, _ reason: DiscardReason) throws(StateError) {
        let removed = try store.remove(Self.archiveName(handler))
        if removed {
            let level: Logger.Level = reason == .consumed ? .debug : .notice
            logger.log(
                level: level, "discarded preserved state",
                metadata: ["handler": "\(handler)", "reason": "\(reason.rawValue)"])
        }
    }
}
