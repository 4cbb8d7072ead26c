import Foundation
import RouseDBus
import RouseTestSupport
import Testing

/// The typed models against python3-dbusmock's logind, notification_daemon and upower templates on a private bus.
@Suite(.stopsWhatItStarts, .serialized)
struct SessionServicesTests {
    static let mockInterface = "org.freedesktop.DBus.Mock"

    /// logind: the user's session is found, `Lock`/`Unlock` and `LockedHint` changes arrive in order, and the hint
    /// reads back.
    @Test func logindLockEventsArriveInOrder() async throws {
        let lab = try await DBusLab.start()
        let connection = try await lab.connect()
        try await lab.startMock(template: "logind", busName: Logind.name, on: connection)
        let added = try await connection.call(
            destination: Logind.name, path: Logind.managerPath, interface: Self.mockInterface, member: "AddSession",
            arguments: [.string("c7"), .string("seat0"), .uint32(1000), .string("alice"), .boolean(true)])
        let path = try #require(added.first?.string)
        let logind = Logind(connection: connection)
        let session = try #require(try await logind.session(uid: 1000))
        #expect(session.path == path)
        #expect(session.id == "c7")
        #expect(try await logind.session(uid: 1001) == nil)
        #expect(try await logind.lockedHint(session: path) == false)

        let events = AsyncStream<Logind.LockEvent>.makeStream()
        _ = try await logind.watchLock(session: path) { events.continuation.yield($0) }
        let sessionInterface = "org.freedesktop.login1.Session"
        for member in ["Lock"] {
            _ = try await connection.call(
                destination: Logind.name, path: path, interface: sessionInterface, member: member)
        }
        _ = try await connection.call(
            destination: Logind.name, path: path, interface: sessionInterface, member: "SetLockedHint",
            arguments: [.boolean(true)])
        _ = try await connection.call(
            destination: Logind.name, path: path, interface: sessionInterface, member: "Unlock")
        _ = try await connection.call(
            destination: Logind.name, path: path, interface: sessionInterface, member: "SetLockedHint",
            arguments: [.boolean(false)])
        var seen: [Logind.LockEvent] = []
        for await event in events.stream {
            seen.append(event)
            if seen.count == 4 { break }
        }
        #expect(seen == [.lock, .lockedHint(true), .unlock, .lockedHint(false)])
        #expect(try await logind.lockedHint(session: path) == false)
    }

    /// Notifications: `Notify` carries every field, and `ActionInvoked`/`NotificationClosed` come back as events.
    @Test func notificationsAreShownAndTheirEventsReported() async throws {
        let lab = try await DBusLab.start()
        let connection = try await lab.connect()
        try await lab.startMock(template: "notification_daemon", busName: Notifications.name, on: connection)
        let notifications = Notifications(connection: connection)
        let events = AsyncStream<Notifications.Event>.makeStream()
        _ = try await notifications.watch { events.continuation.yield($0) }

        var notification = Notifications.Notification(appName: "phone", summary: "Alice", body: "Call me")
        notification.category = "thread-42"
        notification.soundName = "message-new-instant"
        notification.urgency = .critical
        notification.actions = [("default", "Open")]
        let id = try await notifications.notify(notification)
        #expect(id > 0)
        var replacing = notification
        replacing.replacesID = id
        replacing.body = "Call me now"
        #expect(try await notifications.notify(replacing) == id)

        let calls = try await connection.call(
            destination: Notifications.name, path: "/org/freedesktop/Notifications", interface: Self.mockInterface,
            member: "GetMethodCalls", arguments: [.string("Notify")])
        let recorded = try #require(calls.first?.elements)
        #expect(recorded.count == 2)
        let arguments = try #require(recorded.first?.fields?.last?.elements).map(\.unwrapped)
        #expect(arguments.first == .string("phone"))
        #expect(arguments[3] == .string("Alice"))
        #expect(arguments[4] == .string("Call me"))
        #expect(arguments[5] == .array(element: "s", [.string("default"), .string("Open")]))
        let hints = try #require(arguments[6].stringKeyed)
        #expect(hints["category"] == .string("thread-42"))
        #expect(hints["sound-name"] == .string("message-new-instant"))
        #expect(hints["urgency"] == .byte(2))

        _ = try await connection.call(
            destination: Notifications.name, path: "/org/freedesktop/Notifications", interface: Self.mockInterface,
            member: "EmitSignal",
            arguments: [
                .string("org.freedesktop.Notifications"), .string("ActionInvoked"), .string("us"),
                .array(element: "v", [.variant(.uint32(id)), .variant(.string("default"))]),
            ])
        try await notifications.close(id)
        var seen: [Notifications.Event] = []
        for await event in events.stream {
            seen.append(event)
            if seen.count == 2 { break }
        }
        #expect(seen.first == .actionInvoked(id: id, key: "default"))
        if case .closed(let closedID, _) = seen.last { #expect(closedID == id) } else { Issue.record("\(seen)") }
    }

    /// UPower: `OnBattery` and the display device's charge read, and a change is reported.
    @Test func upowerReportsBatteryAndChanges() async throws {
        let lab = try await DBusLab.start()
        let connection = try await lab.connect()
        try await lab.startMock(
            template: "upower", busName: UPower.name, parameters: #"{"OnBattery": true}"#, on: connection)
        _ = try await connection.call(
            destination: UPower.name, path: "/org/freedesktop/UPower", interface: Self.mockInterface,
            member: "SetupDisplayDevice",
            arguments: [
                .uint32(2), .uint32(2), .double(41.0), .double(41.0), .double(100.0), .double(1.0), .int64(3600),
                .int64(0), .boolean(true), .string("battery-good-symbolic"), .uint32(1),
            ])
        let upower = UPower(connection: connection)
        #expect(try await upower.state() == .init(onBattery: true, percentage: 41.0))
        let changed = AsyncStream<Void>.makeStream()
        _ = try await upower.watch { changed.continuation.yield() }
        _ = try await connection.call(
            destination: UPower.name, path: "/org/freedesktop/UPower", interface: Self.mockInterface,
            member: "UpdateProperties",
            arguments: [.string("org.freedesktop.UPower"), .vardict([("OnBattery", .boolean(false))])])
        var iterator = changed.stream.makeAsyncIterator()
        _ = await iterator.next()
        #expect(try await upower.state().onBattery == false)
    }
}
