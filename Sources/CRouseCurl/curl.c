#include "CRouseCurl.h"

CURLcode rouse_curl_easy_setopt_long(CURL *handle, CURLoption option, long value) {
    return curl_easy_setopt(handle, option, value);
}
CURLcode rouse_curl_easy_setopt_ptr(CURL *handle, CURLoption option, const void *value) {
    return curl_easy_setopt(handle, option, value);
}
CURLcode rouse_curl_easy_setopt_off(CURL *handle, CURLoption option, curl_off_t value) {
    return curl_easy_setopt(handle, option, value);
}
CURLcode rouse_curl_easy_setopt_data_cb(CURL *handle, CURLoption option, rouse_curl_data_cb cb) {
    return curl_easy_setopt(handle, option, cb);
}
CURLcode rouse_curl_easy_getinfo_long(CURL *handle, CURLINFO info, long *out) {
    return curl_easy_getinfo(handle, info, out);
}
CURLcode rouse_curl_easy_getinfo_double(CURL *handle, CURLINFO info, double *out) {
    return curl_easy_getinfo(handle, info, out);
}
CURLcode rouse_curl_easy_getinfo_ptr(CURL *handle, CURLINFO info, void **out) {
    return curl_easy_getinfo(handle, info, out);
}
CURLMcode rouse_curl_multi_setopt_long(CURLM *multi, CURLMoption option, long value) {
    return curl_multi_setopt(multi, option, value);
}
CURLcode rouse_curl_easy_getinfo_off(CURL *handle, CURLINFO info, curl_off_t *out) {
    return curl_easy_getinfo(handle, info, out);
}
CURLcode rouse_curl_global_init_default(void) {
    return curl_global_init(CURL_GLOBAL_DEFAULT);
}
int rouse_curl_multi_next_done(CURLM *multi, CURL **easy, CURLcode *result) {
    int queued = 0;
    CURLMsg *msg;
    while ((msg = curl_multi_info_read(multi, &queued)) != NULL) {
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
    return curl_easy_setopt(handle, option, &blob);
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
    return curl_easy_setopt(handle, CURLOPT_OPENSOCKETFUNCTION, rouse_curl_open_cloexec);
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
    return curl_easy_setopt(handle, CURLOPT_OPENSOCKETFUNCTION, rouse_curl_open_public);
}
