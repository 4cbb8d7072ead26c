import FoundationEssentials
import Logging
import RouseAgentCore
import RouseCurl
import RouseSystem
import RouseWire

/// The agent's steps for a task being added (`addTransfer`): its checks, an upload's body copied into the spool (the
/// agent's own copy, from a descriptor or the frame), then the task in ``Transfers``.
extension Agent {
    /// An upload's body from the descriptor a handler passed, copied into the spool on the handler's thread of
    /// ``copies`` (a 1 GiB file, or one on a mount that never answers, holds that thread, never the agent nor another
    /// handler's uploads), then added.
    func copyUpload(
        _ name: String, _ connection: IPCConnection, _ frame: IPCFrame<AgentRequest>,
        _ request: AgentRequest.AddTransfer, descriptor: Int32
    ) {
        let directory = spoolDirectory + "/" + name
        let path = "\(directory)/incoming-\(transfers.makeToken())"
        let account = account(name)
        let limit = min(configuration.transferLimits.uploadBytes, account.limit)
        let (copies, blocking) = (copies.pool(for: name), blocking)
        Task {
            let copied = await copies.run { () -> Result<Int64, TransferRefusal> in
                defer { blocking.closeNow(descriptor) }
                copies.countCopy()
                return Self.copy(descriptor, to: path, directory: directory, account: account, limit: limit)
            }
            switch copied {
            case .success(let size) where handlers.connection(of: name) === connection:
                transferRequest(name, connection, frame, copied: (path, size))
                transferRunEnded()  // not part of a run of the connection's frames
            case .success(let size):
                _ = try? Sys.remove(path)  // the handler went away meanwhile: nobody to answer
                account.release(size)
            case .failure(let error):
                transfers.count("refused-\(error.code)")
                logger.notice(
                    "transfer request refused", metadata: ["handler": "\(name)", "error": "\(error.code)"])
                connection.sendError(error.code, error.detail, requestID: frame.requestID)
            }
            connection.handled()
        }
    }

    /// Copies `descriptor` (a regular file of at most `limit` bytes that fits `account`) to `path` (on a blocking
    /// thread): its size.
    private static func copy(
        _ descriptor: Int32, to path: String, directory: String, account: SpoolAccount, limit: Int64
    ) -> Result<Int64, TransferRefusal> {
        guard let status = Sys.fileSize(descriptor), status.regular else {
            return .failure(TransferRefusal(code: "badDescriptor", detail: "the descriptor is not a regular file"))
        }
        let size = status.size
        guard size <= limit else {
            return .failure(
                TransferRefusal(code: "tooLarge", detail: "\(size) bytes are more than an upload may be (\(limit))"))
        }
        guard account.reserve(size) else {
            return .failure(
                TransferRefusal(
                    code: "spoolFull", detail: "\(size) bytes do not fit the handler's spool budget of \(account.limit)"
                ))
        }
        do throws(AgentError) {
            try AgentError.wrapping(try Sys.makeDirectories(directory))
            let fd = try AgentError.wrapping(try Sys.openSpool(path))
            defer { Sys.close(fd) }
            try AgentError.wrapping(try Sys.truncate(fd, to: 0))
            try AgentError.wrapping(try Sys.copy(from: descriptor, to: fd, count: size))
        } catch {
            _ = try? Sys.remove(path)
            account.release(size)
            return .failure(TransferRefusal(code: "spoolFull", detail: "copying the upload: \(error.detail)"))
        }
        return .success(size)
    }

    func addTransfer(_ name: String, _ request: AgentRequest.AddTransfer, copied: (path: String, size: Int64)?)
        throws(TransferRefusal) -> TransferRecord
    {
        var incoming = copied
        func dropCopy() {
            guard let incoming else { return }
            _ = try? Sys.remove(incoming.path)
            account(name).release(incoming.size)
        }
        guard let kind = request.kind.flatMap(TransferRecord.Kind.init(rawValue:)), let url = request.url else {
            dropCopy()
            throw TransferRefusal(code: "badRequest", detail: "addTransfer needs kind download|upload and url")
        }
        if handlers.configuration(of: name)?.allowPrivateDestinations != true, CurlDestination.isInternal(url: url) {
            dropCopy()
            throw TransferRefusal(
                code: "forbiddenDestination",
                detail: "\(url) is an internal address (allow-private-destinations is not set for this handler)")
        }
        let directory = spoolDirectory + "/" + name
        do {
            try AgentError.wrapping(try Sys.makeDirectories(directory))
        } catch {
            dropCopy()
            throw TransferRefusal(code: "spoolFull", detail: "spool directory: \(error.detail)")
        }
        if kind == .upload, incoming == nil {
            incoming = try spoolBody(name, request, directory: directory)
        } else if kind == .download && (request.descriptor == true || request.body != nil) {
            throw TransferRefusal(code: "badRequest", detail: "a download takes no body and no descriptor")
        }
        do throws(TransferRefusal) {
            let method = kind == .download ? "GET" : (request.method ?? "PUT")
            let (record, actions) = try transfers.add(
                handler: name, session: request.session ?? "", kind: kind, url: url, method: method,
                headers: request.headers ?? [], discretionary: request.discretionary ?? false, directory: directory,
                uploadBytes: incoming?.size)
            if let incoming { _ = try? Sys.rename(incoming.path, record.spoolFile) }
            perform(transfers: actions)
            return transfers.task(record.id) ?? record
        } catch {
            dropCopy()
            throw error
        }
    }

    /// An upload's body (`body`, base64: at most a frame) into the spool: the agent's own copy, so the upload
    /// survives the handler and an agent restart.
    private func spoolBody(_ name: String, _ request: AgentRequest.AddTransfer, directory: String)
        throws(TransferRefusal) -> (path: String, size: Int64)
    {
        if request.descriptor == true {
            throw TransferRefusal(code: "badDescriptor", detail: "no descriptor came with the frame (SCM_RIGHTS)")
        }
        guard let body = request.body else {
            throw TransferRefusal(code: "badRequest", detail: "an upload needs descriptor: true or body")
        }
        guard let decoded = Data(base64Encoded: body) else {
            throw TransferRefusal(code: "badRequest", detail: "body is not base64")
        }
        let bytes = Array(decoded)
        let size = Int64(bytes.count)
        guard account(name).reserve(size) else {
            throw TransferRefusal(
                code: "spoolFull",
                detail: "\(size) bytes do not fit the handler's spool budget of \(account(name).limit)")
        }
        let path = "\(directory)/incoming-\(transfers.makeToken())"
        do throws(AgentError) {
            let fd = try AgentError.wrapping(try Sys.openSpool(path))
            defer { Sys.close(fd) }
            try AgentError.wrapping(try Sys.truncate(fd, to: 0))
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(1, bytes.count), alignment: 16)
            defer { buffer.deallocate() }
            buffer.copyBytes(from: bytes)
            try AgentError.wrapping(
                try Sys.writeAll(fd, UnsafeRawBufferPointer(rebasing: buffer[..<bytes.count]), at: 0))
        } catch {
            _ = try? Sys.remove(path)
            account(name).release(size)
            throw TransferRefusal(code: "spoolFull", detail: "copying the upload: \(error.detail)")
        }
        return (path, size)
    }

}
