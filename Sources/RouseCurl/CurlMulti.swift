import CCurl
import CRouseCurl

/// Owns one libcurl multi handle (`CURLM*`); frees it in `deinit`. Used from one thread (the client's loop
/// thread), except ``wakeup()``, which libcurl allows from any thread while the handle is alive.
package final class CurlMulti {
    /// The `CURLM*`; valid for the lifetime of this object.
    package let handle: UnsafeMutableRawPointer

    /// Creates a multi handle.
    package init() throws {
        try ensureCurlGlobalInit()
        guard let handle = rouse_curl_multi_init() else {
            throw CurlError(code: .failedInit, operation: "curl_multi_init")
        }
        self.handle = handle
    }

    deinit {
        rouse_curl_multi_cleanup(handle)
    }

    /// Sets a `long` multi option.
    package func set(_ option: CURLMoption, _ value: Int, name: String) throws {
        let result = rouse_curl_multi_setopt_long(handle, option, value)
        guard result == CURLM_OK else {
            throw CurlError(multiCode: CurlMultiCode(result), operation: "multi setopt \(name)")
        }
    }

    /// Attaches an easy handle; the caller keeps `easy` alive until ``remove(_:)``.
    package func add(_ easy: CurlEasy) throws {
        let result = rouse_curl_multi_add_handle(handle, easy.handle)
        guard result == CURLM_OK else {
            throw CurlError(multiCode: CurlMultiCode(result), operation: "curl_multi_add_handle")
        }
    }

    /// Detaches an easy handle (harmless if it is not attached).
    package func remove(_ easy: CurlEasy) {
        _ = rouse_curl_multi_remove_handle(handle, easy.handle)
    }

    /// Drives every transfer as far as it can go without blocking; returns the number still running.
    package func perform() throws -> Int {
        var running: Int32 = 0
        let result = rouse_curl_multi_perform(handle, &running)
        guard result == CURLM_OK else {
            throw CurlError(multiCode: CurlMultiCode(result), operation: "curl_multi_perform")
        }
        return Int(running)
    }

    /// Waits for socket activity, libcurl's own timers, a ``wakeup()`` or `timeoutMilliseconds`; returns how many of
    /// libcurl's sockets had an event (a wake-up is none).
    @discardableResult
    package func poll(timeoutMilliseconds: Int32) throws -> Int {
        var events: Int32 = 0
        let result = rouse_curl_multi_poll(handle, timeoutMilliseconds, &events)
        guard result == CURLM_OK else {
            throw CurlError(multiCode: CurlMultiCode(result), operation: "curl_multi_poll")
        }
        return Int(events)
    }

    /// libcurl's next timer (`curl_multi_timeout`), capped at `limit`; `limit` when libcurl has none.
    package func timeoutMilliseconds(atMost limit: Int32) -> Int32 {
        var timeout = -1
        guard rouse_curl_multi_timeout(handle, &timeout) == CURLM_OK, timeout >= 0 else { return limit }
        return Int32(min(timeout, Int(limit)))
    }

    /// Interrupts a ``poll(timeoutMilliseconds:)`` in progress (or the next one). Thread-safe.
    package func wakeup() {
        _ = rouse_curl_multi_wakeup(handle)
    }

    /// The next finished transfer: its `CURL*` and result, or nil when none is queued.
    package func nextDone() -> (easy: UnsafeMutableRawPointer, result: CurlCode)? {
        var easy: UnsafeMutableRawPointer?
        var result = CURLE_OK
        guard rouse_curl_multi_next_done(handle, &easy, &result) == 1, let easy else { return nil }
        return (easy, CurlCode(result))
    }
}
