/// logind (`org.freedesktop.login1`, on the system bus): the sessions and their lock state.
///
/// A session's lock is reported two ways, and both are followed: the `Lock`/`Unlock` signals of
/// `org.freedesktop.login1.Session` (sent when someone asks logind to lock, `loginctl lock-session`; the screen
/// locker reacts to them) and the session's `LockedHint` property (set by the screen locker once the screen is
/// actually locked or unlocked, announced with `PropertiesChanged`).
package struct Logind: Sendable {
    /// logind's bus name.
    package static let name = "org.freedesktop.login1"
    /// The manager object.
    package static let managerPath = "/org/freedesktop/login1"
    static let managerInterface = "org.freedesktop.login1.Manager"
    static let sessionInterface = "org.freedesktop.login1.Session"

    /// One entry of `ListSessions`.
    package struct SessionEntry: Sendable, Equatable {
        /// The session id (`c2`, `3`).
        package var id: String
        /// Its user's uid.
        package var uid: UInt32
        /// Its user's name.
        package var user: String
        /// Its seat (`seat0`), empty for none (SSH, a user manager).
        package var seat: String
        /// Its object path.
        package var path: String
    }

    /// What a session's lock events say.
    package enum LockEvent: Sendable, Equatable {
        /// The `Lock` signal: lock now.
        case lock
        /// The `Unlock` signal.
        case unlock
        /// `LockedHint` changed to this value.
        case lockedHint(Bool)
    }

    let connection: DBusConnection

    /// logind on `connection` (the system bus, or a test's).
    package init(connection: DBusConnection) { self.connection = connection }

    /// Every session (`ListSessions`).
    package func sessions() async throws(DBusError) -> [SessionEntry] {
        let reply = try await connection.call(
            destination: Self.name, path: Self.managerPath, interface: Self.managerInterface, member: "ListSessions")
        guard let rows = reply.first?.elements else { throw DBusError.unexpected("ListSessions: \(reply)") }
        return rows.compactMap { row in
            guard let fields = row.fields, fields.count == 5, let id = fields[0].string, let uid = fields[1].uint32,
                let user = fields[2].string, let seat = fields[3].string, let path = fields[4].string
            else { return nil }
            return SessionEntry(id: id, uid: uid, user: user, seat: seat, path: path)
        }
    }

    /// The session to follow for `uid`: `preferredID` (`XDG_SESSION_ID`) when it is one of the user's, else the
    /// user's first session on a seat, else the user's first session; for `uid` nil (system mode), seat0's first.
    package func session(uid: UInt32?, preferredID: String? = nil) async throws(DBusError) -> SessionEntry? {
        let all = try await sessions()
        let mine = uid.map { uid in all.filter { $0.uid == uid } } ?? all.filter { $0.seat == "seat0" }
        if let preferredID, let chosen = mine.first(where: { $0.id == preferredID }) { return chosen }
        return mine.first { !$0.seat.isEmpty } ?? mine.first
    }

    /// The session's `LockedHint`.
    package func lockedHint(session path: String) async throws(DBusError) -> Bool {
        let value = try await connection.property(
            destination: Self.name, path: path, interface: Self.sessionInterface, "LockedHint")
        guard let locked = value.bool else { throw DBusError.unexpected("LockedHint is a \(value.signature)") }
        return locked
    }

    /// Calls `handler` (on the connection's loop) with each lock event of the session at `path`: `Lock`, `Unlock`,
    /// and `LockedHint` changes. Two subscriptions; both are returned to be cancelled.
    package func watchLock(session path: String, _ handler: @escaping @Sendable (LockEvent) -> Void)
        async throws(DBusError) -> [DBusRegistration]
    {
        let signals = try await connection.subscribe(DBusMatch(path: path, interface: Self.sessionInterface)) {
            signal in
            switch signal.member {
            case "Lock": handler(.lock)
            case "Unlock": handler(.unlock)
            default: break
            }
        }
        let properties = try await connection.subscribe(
            DBusMatch(path: path, interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged")
        ) { signal in
            guard signal.arguments.first?.string == Self.sessionInterface,
                let changed = signal.arguments.dropFirst().first?.stringKeyed,
                let locked = changed["LockedHint"]?.bool
            else { return }
            handler(.lockedHint(locked))
        }
        return [signals, properties]
    }
}
