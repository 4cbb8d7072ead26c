import CCurl
import CRouseCurl

/// libcurl loaded (`dlopen`, on first use: programs that make no transfer never load it) and `curl_global_init` run,
/// exactly once per process (Swift initialises globals lazily and atomically); nil when both succeeded.
private let curlGlobalInitFailure: CurlError? = {
    if let why = rouse_curl_load() {
        return CurlError.libraryLoad(String(cString: why))
    }
    let result = rouse_curl_global_init_default()
    return result == CURLE_OK ? nil : CurlError(code: CurlCode(result), operation: "curl_global_init")
}()

/// Makes sure libcurl is loaded and its global state initialised; throws if either failed.
func ensureCurlGlobalInit() throws {
    if let failure = curlGlobalInitFailure { throw failure }
}

/// The loaded libcurl's version as 0xXXYYZZ (7.88.1 is 0x075801); 0 when libcurl cannot be loaded.
package var curlVersionNumber: UInt32 { UInt32(rouse_curl_version_number()) }
