import Glibc

// Users and groups (the agent's handler identities, the state store's key-file owner check). An entry that does
// not exist is `nil`: that is the answer, not an error. A lookup that could not be made (`EMFILE` opening
// /etc/passwd, `ENOMEM`, an NSS module's `EIO`) throws: a user who exists must not be taken for one who does not
// while the agent sits at its descriptor limit.

extension Sys {
    /// What Rouse needs of a passwd entry.
    package struct Account: Sendable, Equatable {
        package var name: String
        package var uid: UInt32
        package var gid: UInt32
        package var home: String

        package init(name: String, uid: UInt32, gid: UInt32, home: String) {
            self.name = name
            self.uid = uid
            self.gid = gid
            self.home = home
        }

        init(_ entry: UnsafeMutablePointer<passwd>) {
            name = String(cString: entry.pointee.pw_name)
            uid = entry.pointee.pw_uid
            gid = entry.pointee.pw_gid
            home = entry.pointee.pw_dir.map { String(cString: $0) } ?? "/"
        }
    }

    /// Current real uid.
    package static var uid: UInt32 { getuid() }

    /// Current real gid.
    package static var gid: UInt32 { getgid() }

    /// The effective user id of this process.
    package static var effectiveUID: UInt32 { geteuid() }

    /// A user's account (passwd entry) by name.
    package static func account(named name: String) throws(SystemError) -> Account? {
        try lookup("getpwnam", name) { getpwnam(name) }.map(Account.init)
    }

    /// A user's account by uid.
    package static func account(uid: UInt32) throws(SystemError) -> Account? {
        try lookup("getpwuid", "\(uid)") { getpwuid(uid) }.map(Account.init)
    }

    /// Runs a `getpw*`/`getgr*` call: its entry, nil when there is none (NULL with `errno` 0, or one of the values
    /// getpwnam(3) lists for "not found": `ENOENT`, `ESRCH`, `EBADF`, `EPERM`), else the error it left.
    private static func lookup<Entry>(
        _ call: String, _ key: String, _ body: () -> UnsafeMutablePointer<Entry>?
    ) throws(SystemError) -> UnsafeMutablePointer<Entry>? {
        errno = 0
        if let entry = body() { return entry }
        let code = errno
        guard code != 0, ![ENOENT, ESRCH, EBADF, EPERM].contains(code) else { return nil }
        throw SystemError(call: call, errno: code, path: key)
    }

    /// Every group `user` is a member of, with `gid` (getgrouplist(3)); just `gid` when it cannot be read.
    package static func groups(of user: String, gid: UInt32) -> [UInt32] {
        var count: Int32 = 32
        while true {
            var groups = [gid_t](repeating: 0, count: Int(count))
            let previous = count
            if getgrouplist(user, gid, &groups, &count) >= 0 { return Array(groups.prefix(Int(count))) }
            guard count > previous, count <= 65536 else { return [gid] }
        }
    }

    /// gid of a group name.
    package static func group(named name: String) throws(SystemError) -> UInt32? {
        try lookup("getgrnam", name) { getgrnam(name) }?.pointee.gr_gid
    }
}
