import CNghttp2

/// The nghttp2 client callbacks, created once. Each gets the `ClientConnection` as `user_data`.
final class ClientCallbacks: @unchecked Sendable {  // immutable after init; nghttp2 only reads the callback table.
    static let shared = ClientCallbacks()
    let callbacks: OpaquePointer

    private init() {
        let cbs = newCallbackTable()
        callbacks = cbs
        nghttp2_session_callbacks_set_on_header_callback(cbs, ClientCallbacks.onHeader)
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, ClientCallbacks.onDataChunk)
        nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, ClientCallbacks.onFrameRecv)
        nghttp2_session_callbacks_set_on_stream_close_callback(cbs, ClientCallbacks.onStreamClose)
    }

    @inline(__always)
    static func connection(_ userData: UnsafeMutableRawPointer?) -> ClientConnection? {
        guard let userData else { return nil }
        return Unmanaged<ClientConnection>.fromOpaque(userData).takeUnretainedValue()
    }

    /// The request's stream, from nghttp2's stream user data (set by `submit`, cleared when the connection closes).
    @inline(__always)
    static func request(_ session: OpaquePointer?, _ id: Int32) -> ClientStream? {
        guard let session else { return nil }
        return ClientStream.from(nghttp2_session_get_stream_user_data(session, id))
    }

    static let onHeader: nghttp2_on_header_callback = {
        session, frame, name, nameLength, value, valueLength, _, userData in
        guard let frame, let c = connection(userData), let stream = request(session, frame.pointee.hd.stream_id) else {
            return 0
        }
        guard let name, let value else { return 0 }
        // `:status` is read from the bytes (nghttp2 has checked it is three digits): no strings for it.
        if nameLength == 7 && UnsafeBufferPointer(start: name, count: 7).elementsEqual(":status".utf8) {
            var status = 0
            for i in 0..<valueLength where value[i] >= UInt8(ascii: "0") && value[i] <= UInt8(ascii: "9") {
                status = status * 10 + Int(value[i] - UInt8(ascii: "0"))
            }
            stream.status = status
        } else if let kept = c.keptResponseHeaders,
            !kept.contains(where: { $0.elementsEqual(UnsafeBufferPointer(start: name, count: nameLength)) })
        {
            return 0
        } else {
            stream.headers.append(
                HTTP2Header(String(nghttp2: name, length: nameLength), String(nghttp2: value, length: valueLength)))
        }
        return 0
    }

    static let onDataChunk: nghttp2_on_data_chunk_recv_callback = { session, _, streamID, data, length, _ in
        guard let stream = request(session, streamID), let data else { return 0 }
        // Responses are small (APNs: a JSON reason); cap what is kept so a hostile server cannot exhaust memory.
        let room = max(0, (1 << 20) - stream.body.count)
        stream.body.append(contentsOf: UnsafeBufferPointer(start: data, count: min(length, room)))
        return 0
    }

    static let onFrameRecv: nghttp2_on_frame_recv_callback = { session, frame, userData in
        guard let frame, let c = connection(userData) else { return 0 }
        let flags = frame.pointee.hd.flags
        switch UInt32(frame.pointee.hd.type) {
        case NGHTTP2_SETTINGS.rawValue:
            if flags & UInt8(NGHTTP2_FLAG_ACK.rawValue) == 0 { c.remoteSettingsReceived() }
        case NGHTTP2_HEADERS.rawValue, NGHTTP2_DATA.rawValue:
            if flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) != 0,
                let s = request(session, frame.pointee.hd.stream_id)
            {
                s.complete = true
            }
        case NGHTTP2_GOAWAY.rawValue:
            let g = frame.pointee.goaway
            let debug =
                g.opaque_data.map { Array(UnsafeBufferPointer(start: $0, count: g.opaque_data_len)) } ?? []
            c.goAwayReceived(
                code: HTTP2ErrorCode(rawValue: g.error_code), lastStreamID: g.last_stream_id, debugData: debug)
        case NGHTTP2_PING.rawValue:
            if flags & UInt8(NGHTTP2_FLAG_ACK.rawValue) != 0 {
                let opaque = withUnsafeBytes(of: frame.pointee.ping.opaque_data) {
                    UInt64(bigEndian: $0.load(as: UInt64.self))
                }
                c.pingAcknowledged(opaque)
            }
        default:
            break
        }
        return 0
    }

    static let onStreamClose: nghttp2_on_stream_close_callback = { _, streamID, errorCode, userData in
        connection(userData)?.streamClosed(streamID, code: errorCode)
        return 0
    }

    static let readRequestBody: nghttp2_data_source_read_callback = {
        session, streamID, buffer, length, flags, _, _ in
        guard let stream = request(session, streamID), let buffer, let flags else {
            return Int(NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE.rawValue)
        }
        let n = min(stream.requestBody.count - stream.requestOffset, length)
        if n > 0 {
            stream.requestBody.withUnsafeBytes { raw in
                let bytes = raw.bindMemory(to: UInt8.self)[stream.requestOffset..<stream.requestOffset + n]
                _ = UnsafeMutableBufferPointer(start: buffer, count: n).initialize(fromContentsOf: bytes)
            }
            stream.requestOffset += n
        }
        if stream.requestOffset == stream.requestBody.count {
            flags.pointee |= NGHTTP2_DATA_FLAG_EOF.rawValue
            stream.requestBody = []
            stream.requestOffset = 0
        }
        return n
    }
}
