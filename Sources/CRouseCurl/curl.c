#include "CRouseCurl.h"

#include "rouse_library.h"
#include <pthread.h>

// libcurl is loaded with dlopen on first use rather than linked. Hand-written because no library does this for
// libcurl: the multi-call binary holds programs that never make a curl transfer (`rouse send` on its native engine,
// the mock, the gateway, rouse-pushd), and linking libcurl made each of them load its dependency tree at start-up
// (27 shared libraries: GnuTLS, Kerberos, LDAP, SASL, libssh2, librtmp, brotli…; docs/benchmarks.md, "Start-up").
// The table below is every libcurl function Rouse calls; it is filled once (pthread_once) and read-only after.
static struct {
    CURLcode (*global_init)(long flags);
    CURL *(*easy_init)(void);
    void (*easy_cleanup)(CURL *handle);
    CURLcode (*easy_setopt)(CURL *handle, CURLoption option, ...);
    CURLcode (*easy_getinfo)(CURL *handle, CURLINFO info, ...);
    const char *(*easy_strerror)(CURLcode code);
    CURLM *(*multi_init)(void);
    CURLMcode (*multi_cleanup)(CURLM *multi);
    CURLMcode (*multi_setopt)(CURLM *multi, CURLMoption option, ...);
    CURLMcode (*multi_add_handle)(CURLM *multi, CURL *handle);
    CURLMcode (*multi_remove_handle)(CURLM *multi, CURL *handle);
    CURLMcode (*multi_perform)(CURLM *multi, int *running);
    CURLMcode (*multi_poll)(CURLM *multi, struct curl_waitfd *extra, unsigned count, int timeout_ms, int *numfds);
    CURLMcode (*multi_timeout)(CURLM *multi, long *milliseconds);
    CURLMcode (*multi_wakeup)(CURLM *multi);
    CURLMsg *(*multi_info_read)(CURLM *multi, int *queued);
    const char *(*multi_strerror)(CURLMcode code);
    struct curl_slist *(*slist_append)(struct curl_slist *list, const char *text);
    void (*slist_free_all)(struct curl_slist *list);
    curl_version_info_data *(*version_info)(CURLversion stamp);
} curl;
static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static int curl_loaded;
static char curl_load_error[512];

#define ROUSE_CURL_LIBRARY "libcurl.so.4"

static void rouse_curl_resolve(void) {
    void *library = rouse_library_open(ROUSE_CURL_LIBRARY, "libcurl4", curl_load_error, sizeof curl_load_error);
    if (library == NULL) return;
#define ROUSE_CURL_SYMBOL(field, name)                                                                               \
    do {                                                                                                             \
        if (rouse_library_symbol(library, ROUSE_CURL_LIBRARY, name, (void **)&curl.field, curl_load_error,           \
                                 sizeof curl_load_error) != 0)                                                       \
            return;                                                                                                  \
    } while (0)
    ROUSE_CURL_SYMBOL(global_init, "curl_global_init");
    ROUSE_CURL_SYMBOL(easy_init, "curl_easy_init");
    ROUSE_CURL_SYMBOL(easy_cleanup, "curl_easy_cleanup");
    ROUSE_CURL_SYMBOL(easy_setopt, "curl_easy_setopt");
    ROUSE_CURL_SYMBOL(easy_getinfo, "curl_easy_getinfo");
    ROUSE_CURL_SYMBOL(easy_strerror, "curl_easy_strerror");
    ROUSE_CURL_SYMBOL(multi_init, "curl_multi_init");
    ROUSE_CURL_SYMBOL(multi_cleanup, "curl_multi_cleanup");
    ROUSE_CURL_SYMBOL(multi_setopt, "curl_multi_setopt");
    ROUSE_CURL_SYMBOL(multi_add_handle, "curl_multi_add_handle");
    ROUSE_CURL_SYMBOL(multi_remove_handle, "curl_multi_remove_handle");
    ROUSE_CURL_SYMBOL(multi_perform, "curl_multi_perform");
    ROUSE_CURL_SYMBOL(multi_poll, "curl_multi_poll");
    ROUSE_CURL_SYMBOL(multi_timeout, "curl_multi_timeout");
    ROUSE_CURL_SYMBOL(multi_wakeup, "curl_multi_wakeup");
    ROUSE_CURL_SYMBOL(multi_info_read, "curl_multi_info_read");
    ROUSE_CURL_SYMBOL(multi_strerror, "curl_multi_strerror");
    ROUSE_CURL_SYMBOL(slist_append, "curl_slist_append");
    ROUSE_CURL_SYMBOL(slist_free_all, "curl_slist_free_all");
    ROUSE_CURL_SYMBOL(version_info, "curl_version_info");
#undef ROUSE_CURL_SYMBOL
    curl_loaded = 1;
}

const char *rouse_curl_load(void) {
    pthread_once(&curl_once, rouse_curl_resolve);
    return curl_loaded ? NULL : curl_load_error;
}

static int rouse_curl_ready(void) {
    return rouse_curl_load() == NULL;
}

CURL *rouse_curl_easy_init(void) {
    return rouse_curl_ready() ? curl.easy_init() : NULL;
}
void rouse_curl_easy_cleanup(CURL *handle) {
    curl.easy_cleanup(handle);
}
const char *rouse_curl_easy_strerror(CURLcode code) {
    return rouse_curl_ready() ? curl.easy_strerror(code) : "libcurl is not loaded";
}
CURLM *rouse_curl_multi_init(void) {
    return rouse_curl_ready() ? curl.multi_init() : NULL;
}
void rouse_curl_multi_cleanup(CURLM *multi) {
    (void)curl.multi_cleanup(multi);
}
CURLMcode rouse_curl_multi_add_handle(CURLM *multi, CURL *handle) {
    return curl.multi_add_handle(multi, handle);
}
CURLMcode rouse_curl_multi_remove_handle(CURLM *multi, CURL *handle) {
    return curl.multi_remove_handle(multi, handle);
}
CURLMcode rouse_curl_multi_perform(CURLM *multi, int *running) {
    return curl.multi_perform(multi, running);
}
CURLMcode rouse_curl_multi_poll(CURLM *multi, int timeout_ms, int *events) {
    return curl.multi_poll(multi, NULL, 0, timeout_ms, events);
}
CURLMcode rouse_curl_multi_timeout(CURLM *multi, long *milliseconds) {
    return curl.multi_timeout(multi, milliseconds);
}
CURLMcode rouse_curl_multi_wakeup(CURLM *multi) {
    return curl.multi_wakeup(multi);
}
const char *rouse_curl_multi_strerror(CURLMcode code) {
    return rouse_curl_ready() ? curl.multi_strerror(code) : "libcurl is not loaded";
}
struct curl_slist *rouse_curl_slist_append(struct curl_slist *list, const char *text) {
    return rouse_curl_ready() ? curl.slist_append(list, text) : NULL;
}
void rouse_curl_slist_free_all(struct curl_slist *list) {
    if (list != NULL) curl.slist_free_all(list);
}
unsigned int rouse_curl_version_number(void) {
    if (!rouse_curl_ready()) return 0;
    curl_version_info_data *info = curl.version_info(CURLVERSION_NOW);
    return info != NULL ? info->version_num : 0;
}

CURLcode rouse_curl_easy_setopt_long(CURL *handle, CURLoption option, long value) {
    return curl.easy_setopt(handle, option, value);
}
CURLcode rouse_curl_easy_setopt_ptr(CURL *handle, CURLoption option, const void *value) {
    return curl.easy_setopt(handle, option, value);
}
CURLcode rouse_curl_easy_setopt_off(CURL *handle, CURLoption option, curl_off_t value) {
    return curl.easy_setopt(handle, option, value);
}
CURLcode rouse_curl_easy_setopt_data_cb(CURL *handle, CURLoption option, rouse_curl_data_cb cb) {
    return curl.easy_setopt(handle, option, cb);
}
CURLcode rouse_curl_easy_getinfo_long(CURL *handle, CURLINFO info, long *out) {
    return curl.easy_getinfo(handle, info, out);
}
CURLcode rouse_curl_easy_getinfo_double(CURL *handle, CURLINFO info, double *out) {
    return curl.easy_getinfo(handle, info, out);
}
CURLcode rouse_curl_easy_getinfo_ptr(CURL *handle, CURLINFO info, void **out) {
    return curl.easy_getinfo(handle, info, out);
}
CURLMcode rouse_curl_multi_setopt_long(CURLM *multi, CURLMoption option, long value) {
    return curl.multi_setopt(multi, option, value);
}
CURLcode rouse_curl_easy_getinfo_off(CURL *handle, CURLINFO info, curl_off_t *out) {
    return curl.easy_getinfo(handle, info, out);
}
CURLcode rouse_curl_global_init_default(void) {
    return rouse_curl_ready() ? curl.global_init(CURL_GLOBAL_DEFAULT) : CURLE_FAILED_INIT;
}
int rouse_curl_multi_next_done(CURLM *multi, CURL **easy, CURLcode *result) {
    int queued = 0;
    CURLMsg *msg;
    while ((msg = curl.multi_info_read(multi, &queued)) != NULL) {
        if (msg->msg == CURLMSG_DONE) {
            *easy = msg->easy_handle;
            *result = msg->data.result;
            return 1;
        }
    }
    return 0;
}
CURLcode rouse_curl_easy_setopt_blob(CURL *handle, CURLoption option, const void *data, size_t length) {
    struct curl_blob blob;
    blob.data = (void *)data;
    blob.len = length;
    blob.flags = CURL_BLOB_COPY;
    return curl.easy_setopt(handle, option, &blob);
}

#include <fcntl.h>
#include <sys/socket.h>
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>

// libcurl 7.88 opens its sockets without SOCK_CLOEXEC: a program the process starts meanwhile (a handler, a
// hook) would inherit them. Opened here instead, close-on-exec from the first instant.
static curl_socket_t rouse_curl_open_cloexec(void *clientp, curlsocktype purpose, struct curl_sockaddr *address) {
    (void)clientp;
    (void)purpose;
    return socket(address->family, address->socktype | SOCK_CLOEXEC, address->protocol);
}

CURLcode rouse_curl_easy_cloexec_sockets(CURL *handle) {
    return curl.easy_setopt(handle, CURLOPT_OPENSOCKETFUNCTION, rouse_curl_open_cloexec);
}

static int rouse_ipv4_is_internal(uint32_t a) {  // host order
    return (a >> 24) == 0 || (a >> 24) == 10 || (a >> 24) == 127 || (a & 0xFFC00000u) == 0x64400000u
        || (a & 0xFFFF0000u) == 0xA9FE0000u || (a & 0xFFF00000u) == 0xAC100000u || (a & 0xFFFF0000u) == 0xC0A80000u
        || (a >> 28) == 0xE || (a >> 28) == 0xF;
}

int rouse_curl_address_is_internal(const struct sockaddr *address) {
    if (address->sa_family == AF_INET) {
        const struct sockaddr_in *v4 = (const struct sockaddr_in *)address;
        return rouse_ipv4_is_internal(ntohl(v4->sin_addr.s_addr));
    }
    if (address->sa_family != AF_INET6) return 1;
    const unsigned char *b = ((const struct sockaddr_in6 *)address)->sin6_addr.s6_addr;
    static const unsigned char mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF};
    static const unsigned char nat64[12] = {0, 0x64, 0xFF, 0x9B, 0, 0, 0, 0, 0, 0, 0, 0};
    if (memcmp(b, mapped, 12) == 0 || memcmp(b, nat64, 12) == 0) {
        return rouse_ipv4_is_internal((uint32_t)b[12] << 24 | (uint32_t)b[13] << 16 | (uint32_t)b[14] << 8 | b[15]);
    }
    int zero = 1;
    for (int i = 0; i < 15; i++) zero &= b[i] == 0;
    if (zero && (b[15] == 0 || b[15] == 1)) return 1;  // :: and ::1
    return (b[0] == 0xFE && (b[1] & 0xC0) == 0x80) || (b[0] & 0xFE) == 0xFC || b[0] == 0xFF;
}

int rouse_curl_literal_is_internal(const char *text) {
    struct sockaddr_in v4 = {.sin_family = AF_INET};
    struct sockaddr_in6 v6 = {.sin6_family = AF_INET6};
    if (inet_pton(AF_INET, text, &v4.sin_addr) == 1) return rouse_curl_address_is_internal((struct sockaddr *)&v4);
    if (inet_pton(AF_INET6, text, &v6.sin6_addr) == 1) return rouse_curl_address_is_internal((struct sockaddr *)&v6);
    return -1;
}

static curl_socket_t rouse_curl_open_public(void *clientp, curlsocktype purpose, struct curl_sockaddr *address) {
    (void)clientp;
    (void)purpose;
    if (rouse_curl_address_is_internal(&address->addr)) {
        errno = EACCES;
        return CURL_SOCKET_BAD;
    }
    return socket(address->family, address->socktype | SOCK_CLOEXEC, address->protocol);
}

CURLcode rouse_curl_easy_public_sockets(CURL *handle) {
    return curl.easy_setopt(handle, CURLOPT_OPENSOCKETFUNCTION, rouse_curl_open_public);
}
