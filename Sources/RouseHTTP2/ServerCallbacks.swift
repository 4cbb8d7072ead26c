import CNghttp2
import Logging

/// The nghttp2 server callbacks, created once. Each gets the `ServerConnection` as `user_data`.
final class ServerCallbacks: @unchecked Sendable {  // immutable after init; nghttp2 only reads the callback table.
    static let shared = ServerCallbacks()
    let callbacks: OpaquePointer

    private init() {
        let cbs = newCallbackTable()
        callbacks = cbs
        nghttp2_session_callbacks_set_on_begin_headers_callback(cbs, ServerCallbacks.onBeginHeaders)
        nghttp2_session_callbacks_set_on_header_callback(cbs, ServerCallbacks.onHeader)
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, ServerCallbacks.onDataChunk)
        nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, ServerCallbacks.onFrameRecv)
        nghttp2_session_callbacks_set_on_stream_close_callback(cbs, ServerCallbacks.onStreamClose)
    }

    /// Session options (the caller frees them): our own rapid-reset guard replaces nghttp2's (see
    /// `RapidResetGuard`).
    static func makeOption(resetProtection: HTTP2ServerConfiguration.ResetProtection) -> OpaquePointer? {
        var option: OpaquePointer?
        guard nghttp2_option_new(&option) == 0, let option else { return nil }
        // The kernel charges resets itself; nghttp2's limiter would also charge harmless ones.
        if resetProtection == .rouse {
            nghttp2_option_set_stream_reset_rate_limit(option, UInt64(Int64.max), UInt64(Int64.max))
        }
        nghttp2_option_set_max_settings(option, 32)
        // Request bodies are acknowledged (WINDOW_UPDATE) only once the application took them or they were dropped:
        // flow control then bounds what a peer can park in half-open streams (see `maxBufferedRequestBytes`).
        nghttp2_option_set_no_auto_window_update(option, 1)
        return option
    }

    @inline(__always)
    static func connection(_ userData: UnsafeMutableRawPointer?) -> ServerConnection? {
        guard let userData else { return nil }
        return Unmanaged<ServerConnection>.fromOpaque(userData).takeUnretainedValue()
    }

    static let onBeginHeaders: nghttp2_on_begin_headers_callback = { _, frame, userData in
        guard let frame, let c = connection(userData) else { return 0 }
        if frame.pointee.hd.type == UInt8(NGHTTP2_HEADERS.rawValue)
            && frame.pointee.headers.cat == NGHTTP2_HCAT_REQUEST
        {
            let id = frame.pointee.hd.stream_id
            let stream = ServerStream(id: id)
            c.streams[id] = stream
            c.requestStarted(stream)
            // A header block arrives contiguously (HEADERS + CONTINUATION): remember its stream for onHeader.
            c.headerStream = stream
            c.headerStrings.startBlock()
        }
        return 0
    }

    static let onHeader: nghttp2_on_header_callback = { _, frame, name, nameLength, value, valueLength, _, userData in
        guard let frame, let userData else { return 0 }
        // Called for every field of every request: the connection is borrowed, not retained (it owns the session
        // that calls back, so it outlives the call). A retain of an object with weak references (the handles'
        // `ConnectionRef`) takes the runtime's slow path.
        return Unmanaged<ServerConnection>.fromOpaque(userData)._withUnsafeGuaranteedRef { c in
            header(c, frame, name, nameLength, value, valueLength)
        }
    }

    private static func header(
        _ c: ServerConnection, _ frame: UnsafePointer<nghttp2_frame>, _ name: UnsafePointer<UInt8>?,
        _ nameLength: Int, _ value: UnsafePointer<UInt8>?, _ valueLength: Int
    ) -> Int32 {
        let id = frame.pointee.hd.stream_id
        let cached = c.headerStream.flatMap { $0.id == id ? $0 : nil }
        guard let stream = cached ?? c.streams[id], !stream.refused else { return 0 }
        stream.headerListSize += nameLength + valueLength + 32
        if stream.headerListSize > Int(c.shared.configuration.settings.maxHeaderListSize) {
            stream.headerListTooLarge = true
            return 0
        }
        guard c.chargeRequestBytes(stream, nameLength + valueLength) else { return 0 }
        let (n, v) = c.headerStrings.strings(
            name: name, nameLength: nameLength, value: value, valueLength: valueLength)
        if frame.pointee.headers.cat == NGHTTP2_HCAT_REQUEST {
            if n.utf8.first == UInt8(ascii: ":") {
                _ = stream.setPseudo(n, v)
            } else {
                stream.headers.append(HTTP2Header(n, v))
            }
        } else {
            stream.trailers.append(HTTP2Header(n, v))
        }
        return 0
    }

    static let onDataChunk: nghttp2_on_data_chunk_recv_callback = { _, _, streamID, data, length, userData in
        guard let c = connection(userData) else { return 0 }
        guard let stream = c.streams[streamID], let data, !stream.refused else {
            // Nothing keeps these bytes: their window goes back at once.
            c.consume(length)
            return 0
        }
        stream.bodyLength += length
        // The stream's window comes back at once; the connection's once the bytes leave the buffer.
        if let session = c.session { _ = nghttp2_session_consume_stream(session, streamID, length) }
        let limit = c.shared.configuration.maxRequestBodySize
        var take = stream.body.count < limit ? min(length, limit - stream.body.count) : 0
        if take > 0 && !c.chargeRequestBytes(stream, take) { take = 0 }
        if take > 0 {
            stream.body.append(contentsOf: UnsafeBufferPointer(start: data, count: take))
        }
        if take < length {
            if !stream.refused { stream.bodyTruncated = true }
            c.consume(length - take)
        }
        return 0
    }

    static let onFrameRecv: nghttp2_on_frame_recv_callback = { session, frame, userData in
        guard let frame, let c = connection(userData) else { return 0 }
        let type = frame.pointee.hd.type
        let id = frame.pointee.hd.stream_id
        switch UInt32(type) {
        case NGHTTP2_DATA.rawValue, NGHTTP2_HEADERS.rawValue:
            if frame.pointee.hd.flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) != 0, let stream = c.streams[id] {
                c.dispatch(stream)
            }
        case NGHTTP2_RST_STREAM.rawValue:
            if c.shared.configuration.resetProtection == .rouse && !c.streamResetReceived(id) && !c.closeAfterFlush {
                c.logger.info("rapid reset limit reached", metadata: ["remote": "\(c.info.remoteAddress)"])
                c.goAway(code: .enhanceYourCalm, lastStreamID: nil, debugData: [])
            }
        default:
            break
        }
        return 0
    }

    static let onStreamClose: nghttp2_on_stream_close_callback = { _, streamID, _, userData in
        guard let c = connection(userData) else { return 0 }
        if c.headerStream?.id == streamID { c.headerStream = nil }
        if let stream = c.streams.removeValue(forKey: streamID) {
            c.releaseBuffers(stream)
            if stream.responseFinished { c.rapidReset.streamCompleted(streamID) }
            c.handler?.streamClosed(streamID)
        }
        return 0
    }

    /// Supplies response body bytes; defers when a streaming response has nothing buffered yet.
    static let readResponseBody: nghttp2_data_source_read_callback = {
        session, streamID, buffer, length, flags, _, userData in
        guard let c = connection(userData), let stream = c.streams[streamID], let buffer, let flags else {
            return Int(NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE.rawValue)
        }
        let available = stream.responseBody.count - stream.responseOffset
        let n = min(available, length)
        if n > 0 {
            stream.responseBody.withUnsafeBytes { raw in
                let bytes = raw.bindMemory(to: UInt8.self)[stream.responseOffset..<stream.responseOffset + n]
                _ = UnsafeMutableBufferPointer(start: buffer, count: n).initialize(fromContentsOf: bytes)
            }
            stream.responseOffset += n
        }
        if stream.responseOffset == stream.responseBody.count {
            if stream.responseFinished {
                flags.pointee |= NGHTTP2_DATA_FLAG_EOF.rawValue
                if !stream.responseTrailers.isEmpty {
                    flags.pointee |= NGHTTP2_DATA_FLAG_NO_END_STREAM.rawValue
                    _ = withNGHTTP2Headers(stream.responseTrailers) { nva, count in
                        nghttp2_submit_trailer(session, streamID, nva, count)
                    }
                }
            } else if n == 0 {
                // A streaming response (a device channel) drained: a buffer a burst grew is not kept while it idles.
                if stream.responseBody.capacity > ServerConnection.keptBufferCapacity {
                    stream.responseBody = []
                    stream.responseOffset = 0
                }
                stream.dataDeferred = true
                return Int(NGHTTP2_ERR_DEFERRED.rawValue)
            }
        }
        return n
    }
}

/// A new, empty nghttp2 callback table (server and client fill in their own); only memory exhaustion fails.
func newCallbackTable() -> OpaquePointer {
    var cbs: OpaquePointer?
    guard nghttp2_session_callbacks_new(&cbs) == 0, let cbs else {
        fatalError("nghttp2_session_callbacks_new: out of memory")
    }
    return cbs
}
