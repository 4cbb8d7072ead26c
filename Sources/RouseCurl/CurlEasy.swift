import CCurl
import CRouseCurl

/// Owns one libcurl easy handle (`CURL*`) and the memory libcurl borrows from it (error buffer, header
/// list); frees all of it in `deinit`. Not thread-safe: one thread at a time, and only the multi loop
/// thread while the handle is attached to a multi handle.
package final class CurlEasy {
    /// The `CURL*`; valid for the lifetime of this object.
    package let handle: UnsafeMutableRawPointer
    private let errorBuffer: UnsafeMutablePointer<CChar>
    private var headerList: CurlStringList?

    /// Creates a handle with an error buffer attached.
    package init() throws {
        try ensureCurlGlobalInit()
        guard let handle = rouse_curl_easy_init() else {
            throw CurlError(code: .failedInit, operation: "curl_easy_init")
        }
        self.handle = handle
        let size = Int(CURL_ERROR_SIZE)
        self.errorBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: size)
        self.errorBuffer.initialize(repeating: 0, count: size)
        try setPointer(CURLOPT_ERRORBUFFER, UnsafeRawPointer(errorBuffer), name: "CURLOPT_ERRORBUFFER")
    }

    deinit {
        rouse_curl_easy_cleanup(handle)
        errorBuffer.deallocate()
        // headerList is released after the handle that borrowed it.
    }

    /// Sets a `long` option.
    package func set(_ option: CURLoption, _ value: Int, name: String) throws {
        try check(rouse_curl_easy_setopt_long(handle, option, value), name)
    }

    /// Sets a string option; libcurl copies the string.
    package func set(_ option: CURLoption, _ value: String, name: String) throws {
        guard !value.utf8.contains(0) else {
            throw CurlError.invalidRequest("\(name) contains a NUL byte")
        }
        let result = value.withCString { rouse_curl_easy_setopt_ptr(handle, option, $0) }
        try check(result, name)
    }

    /// Sets a `curl_off_t` option.
    package func set(_ option: CURLoption, offset value: Int64, name: String) throws {
        try check(rouse_curl_easy_setopt_off(handle, option, curl_off_t(value)), name)
    }

    /// Sets a blob option; libcurl copies the bytes (`CURL_BLOB_COPY`).
    package func set(_ option: CURLoption, blob: [UInt8], name: String) throws {
        let result = blob.withUnsafeBytes { rouse_curl_easy_setopt_blob(handle, option, $0.baseAddress, $0.count) }
        try check(result, name)
    }

    /// Sets a pointer option; the caller keeps the memory alive while the handle may use it.
    package func setPointer(_ option: CURLoption, _ value: UnsafeRawPointer?, name: String) throws {
        try check(rouse_curl_easy_setopt_ptr(handle, option, value), name)
    }

    /// Sets a data callback (`CURLOPT_WRITEFUNCTION`, `CURLOPT_HEADERFUNCTION`).
    package func setCallback(_ option: CURLoption, _ callback: rouse_curl_data_cb, name: String) throws {
        try check(rouse_curl_easy_setopt_data_cb(handle, option, callback), name)
    }

    /// Sockets opened close-on-exec (`CURLOPT_OPENSOCKETFUNCTION`): a child started meanwhile inherits none.
    package func closeOnExec() throws {
        try check(rouse_curl_easy_cloexec_sockets(handle), "CURLOPT_OPENSOCKETFUNCTION")
    }

    /// Sockets opened close-on-exec, and only to public addresses (``CurlRequest/publicDestinationsOnly``).
    package func publicSocketsOnly() throws {
        try check(rouse_curl_easy_public_sockets(handle), "CURLOPT_OPENSOCKETFUNCTION")
    }

    /// Sets `CURLOPT_HTTPHEADER`; this handle keeps the list alive.
    package func setHeaders(_ lines: [String]) throws {
        let list = try CurlStringList(lines)
        try setPointer(CURLOPT_HTTPHEADER, list.head.map { UnsafeRawPointer($0) }, name: "CURLOPT_HTTPHEADER")
        headerList = list
    }

    /// A `long` info value, or nil if libcurl does not have it.
    package func info(long info: CURLINFO) -> Int? {
        var value = 0
        return rouse_curl_easy_getinfo_long(handle, info, &value) == CURLE_OK ? value : nil
    }

    /// A `curl_off_t` info value, or nil if libcurl does not have it.
    package func info(offset info: CURLINFO) -> Int64? {
        var value: curl_off_t = 0
        return rouse_curl_easy_getinfo_off(handle, info, &value) == CURLE_OK ? Int64(value) : nil
    }

    /// A string info value, or nil if libcurl does not have it.
    package func info(string info: CURLINFO) -> String? {
        var value: UnsafeMutableRawPointer?
        guard rouse_curl_easy_getinfo_ptr(handle, info, &value) == CURLE_OK, let value else { return nil }
        return String(cString: value.assumingMemoryBound(to: CChar.self))
    }

    /// libcurl's error buffer text for the last failure on this handle ("" if none).
    package var errorDetail: String {
        String(cString: errorBuffer)
    }

    private func check(_ result: CURLcode, _ name: String) throws {
        guard result == CURLE_OK else {
            throw CurlError(code: CurlCode(result), operation: "setopt \(name)")
        }
    }
}

/// Owns one `curl_slist`; frees it in `deinit`.
package final class CurlStringList {
    /// The first node, nil for an empty list.
    package private(set) var head: UnsafeMutablePointer<curl_slist>?

    /// Builds the list; libcurl copies each string.
    package init(_ lines: [String]) throws {
        for line in lines {
            guard let next = rouse_curl_slist_append(head, line) else {
                throw CurlError(code: .outOfMemory, operation: "curl_slist_append")
            }
            head = next
        }
    }

    deinit {
        rouse_curl_slist_free_all(head)
    }
}
