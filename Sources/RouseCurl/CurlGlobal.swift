import CCurl
import CRouseCurl

/// `curl_global_init`, run exactly once per process (Swift initialises globals lazily and atomically).
private let curlGlobalInitResult: CURLcode = rouse_curl_global_init_default()

/// Makes sure libcurl's global state is initialised; throws if that failed.
func ensureCurlGlobalInit() throws {
    let result = curlGlobalInitResult
    guard result == CURLE_OK else {
        throw CurlError(code: CurlCode(result), operation: "curl_global_init")
    }
}
