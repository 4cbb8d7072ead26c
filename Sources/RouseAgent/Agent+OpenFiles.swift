import FoundationEssentials
import Logging
import RouseState
import RouseWire

/// Open `complete-unless-open` files (docs/agent.md, "completeUnlessOpen"): `open` gives the handler a handle; reads
/// and writes naming it go through the file's own key, so they work after the session locks; `close`, the handler's
/// connection closing or its process exiting forget the key.
extension Agent {
    /// `open`: an existing `complete-unless-open` file (needs the session unlocked), or a new one when `create` names
    /// that class (possible while locked).
    func openProtected(
        _ name: String, _ connection: IPCConnection, _ file: String, create: ProtectionClass?, store: SealedStore,
        requestID: Int?
    ) throws(StateError) {
        if let create, create != .completeUnlessOpen {
            connection.sendError(
                "badRequest", "only complete-unless-open files are opened; the others are read and written whole",
                requestID: requestID)
            return
        }
        guard let opened = try store.open(name: file, kind: Self.protectedKind, create: create != nil) else {
            connection.sendError("notFound", "no protected file \(file)", requestID: requestID)
            return
        }
        guard let handle = session.openFiles.add(opened, handler: name) else {
            logger.warning(
                "open protected file refused: too many open", metadata: ["handler": "\(name)", "file": "\(file)"])
            connection.sendError(
                "tooManyOpenFiles", "at most \(OpenProtectedFiles.limit) open protected files per handler",
                requestID: requestID)
            return
        }
        logger.debug(
            "protected file opened", metadata: ["handler": "\(name)", "file": "\(file)", "handle": "\(handle)"])
        connection.send(
            .protectedFileReply(
                .init(name: file, protection: ProtectionClass.completeUnlessOpen.rawValue, handle: handle)),
            requestID: requestID)
    }

    /// `read`, `write` or `close` naming an open file's handle.
    func throughOpenFile(
        _ name: String, _ connection: IPCConnection, _ request: AgentRequest.ProtectedFile, handle: Int,
        store: SealedStore, requestID: Int?
    ) throws(StateError) {
        guard let opened = session.openFiles.file(handle, handler: name), opened.name == request.name else {
            connection.sendError(
                "notFound", "no open protected file \(request.name ?? "") with handle \(handle)", requestID: requestID)
            return
        }
        switch request.op {
        case .read:
            guard let bytes = try store.read(opened) else {
                connection.sendError("notFound", "protected file \(opened.name) was removed", requestID: requestID)
                return
            }
            connection.send(
                .protectedFileReply(.init(name: opened.name, data: Data(bytes).base64EncodedString(), handle: handle)),
                requestID: requestID)
        case .write:
            guard let text = request.data, let data = Data(base64Encoded: text), data.count <= Self.protectedFileLimit
            else {
                connection.sendError(
                    "badRequest", "write needs data (base64, at most 256 KiB)", requestID: requestID)
                return
            }
            try store.write(Array(data), to: opened)
            connection.send(
                .protectedFileReply(
                    .init(name: opened.name, protection: ProtectionClass.completeUnlessOpen.rawValue, handle: handle)),
                requestID: requestID)
        case .close:
            _ = session.openFiles.close(handle, handler: name)
            connection.send(.protectedFileReply(.init(name: opened.name, handle: handle)), requestID: requestID)
        case .open, .reclass, .remove, nil:
            connection.sendError(
                "badRequest", "a handle goes with read, write or close only", requestID: requestID)
        }
    }

    /// The handler's connection closed or its process exited: its open files close.
    func closeOpenProtectedFiles(_ name: String) {
        let closed = session.openFiles.closeAll(handler: name)
        if closed > 0 {
            logger.debug("open protected files closed", metadata: ["handler": "\(name)", "count": "\(closed)"])
        }
    }

    /// The kind every handler's protected file is sealed with.
    static let protectedKind = "protected-file"
}

extension Agent {
    /// Open protected files, all handlers together (tests).
    package var openProtectedFileCount: Int { session.openFiles.count }
}
