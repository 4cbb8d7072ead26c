// The curl binding's shim: libcurl loaded with dlopen on first use (rouse_curl_load), and every libcurl call Rouse
// makes, as a function of this file (typed wrappers for the variadic setopt/getinfo calls among them). Nothing else
// calls libcurl: the programs that never make a transfer do not load it.
#ifndef ROUSE_CURL_SHIM_H
#define ROUSE_CURL_SHIM_H
#include <curl/curl.h>

/// Loads libcurl (libcurl.so.4) and resolves the functions below, once per process; NULL when done, else why not
/// (dlerror's text). Every other function here except the two strerror calls and the cleanups requires it to have
/// succeeded; easy_init, multi_init and slist_append return NULL and global_init CURLE_FAILED_INIT otherwise.
const char *rouse_curl_load(void);
CURL *rouse_curl_easy_init(void);
void rouse_curl_easy_cleanup(CURL *handle);
/// libcurl's text for a code, or "libcurl is not loaded".
const char *rouse_curl_easy_strerror(CURLcode code);
CURLM *rouse_curl_multi_init(void);
void rouse_curl_multi_cleanup(CURLM *multi);
CURLMcode rouse_curl_multi_add_handle(CURLM *multi, CURL *handle);
CURLMcode rouse_curl_multi_remove_handle(CURLM *multi, CURL *handle);
CURLMcode rouse_curl_multi_perform(CURLM *multi, int *running);
/// curl_multi_poll with no extra descriptors; `events` (may be NULL) gets how many of libcurl's sockets had an
/// event (a wake-up by curl_multi_wakeup is not one).
CURLMcode rouse_curl_multi_poll(CURLM *multi, int timeout_ms, int *events);
CURLMcode rouse_curl_multi_timeout(CURLM *multi, long *milliseconds);
CURLMcode rouse_curl_multi_wakeup(CURLM *multi);
/// libcurl's text for a multi code, or "libcurl is not loaded".
const char *rouse_curl_multi_strerror(CURLMcode code);
struct curl_slist *rouse_curl_slist_append(struct curl_slist *list, const char *text);
/// curl_slist_free_all; NULL is nothing to free.
void rouse_curl_slist_free_all(struct curl_slist *list);
/// The loaded libcurl's version as 0xXXYYZZ (curl_version_info's version_num: 7.88.1 is 0x075801); 0 when libcurl
/// cannot be loaded.
unsigned int rouse_curl_version_number(void);

typedef size_t (*rouse_curl_data_cb)(char *ptr, size_t size, size_t nmemb, void *userdata);

CURLcode rouse_curl_easy_setopt_long(CURL *handle, CURLoption option, long value);
CURLcode rouse_curl_easy_setopt_ptr(CURL *handle, CURLoption option, const void *value);
CURLcode rouse_curl_easy_setopt_off(CURL *handle, CURLoption option, curl_off_t value);
CURLcode rouse_curl_easy_setopt_data_cb(CURL *handle, CURLoption option, rouse_curl_data_cb cb);
CURLcode rouse_curl_easy_getinfo_long(CURL *handle, CURLINFO info, long *out);
CURLcode rouse_curl_easy_getinfo_double(CURL *handle, CURLINFO info, double *out);
CURLcode rouse_curl_easy_getinfo_ptr(CURL *handle, CURLINFO info, void **out);
CURLMcode rouse_curl_multi_setopt_long(CURLM *multi, CURLMoption option, long value);
CURLcode rouse_curl_easy_getinfo_off(CURL *handle, CURLINFO info, curl_off_t *out);
/// curl_global_init(CURL_GLOBAL_DEFAULT); the flag macro does not import into Swift reliably.
CURLcode rouse_curl_global_init_default(void);
/// Reads the multi handle's message queue up to the next CURLMSG_DONE; returns 1 and fills `easy` and
/// `result` for it, or 0 when the queue holds no finished transfer. Avoids importing CURLMsg's union.
int rouse_curl_multi_next_done(CURLM *multi, CURL **easy, CURLcode *result);
/// Sets a `struct curl_blob` option (CURLOPT_SSLCERT_BLOB, CURLOPT_SSLKEY_BLOB, CURLOPT_CAINFO_BLOB …) with
/// CURL_BLOB_COPY, so libcurl keeps its own copy of the bytes.
CURLcode rouse_curl_easy_setopt_blob(CURL *handle, CURLoption option, const void *data, size_t length);
/// Makes the handle open its sockets with SOCK_CLOEXEC (CURLOPT_OPENSOCKETFUNCTION), so no program started by
/// the process inherits a connection.
CURLcode rouse_curl_easy_cloexec_sockets(CURL *handle);
/// As rouse_curl_easy_cloexec_sockets, and refuses (EACCES, the transfer fails with CURLE_COULDNT_CONNECT) every
/// address that is not public: the address libcurl is about to connect to, after resolution, for each connection
/// (redirects included). See rouse_curl_address_is_internal.
CURLcode rouse_curl_easy_public_sockets(CURL *handle);
/// 1 for an address a public-only transfer may not reach: unspecified, loopback, link-local (169.254.0.0/16,
/// fe80::/10), private (10/8, 172.16/12, 192.168/16), shared (100.64/10), unique local (fc00::/7), multicast,
/// reserved (240/4, broadcast), and IPv4 addresses of those kinds mapped into IPv6 (::ffff:0:0/96) or NAT64
/// (64:ff9b::/96); 0 otherwise.
int rouse_curl_address_is_internal(const struct sockaddr *address);
/// rouse_curl_address_is_internal of an address literal (`127.0.0.1`, `::1`); -1 when `text` is no literal.
int rouse_curl_literal_is_internal(const char *text);
#endif
