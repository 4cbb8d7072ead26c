#include "CRouseOpenSSL.h"

int rouse_ssl_ctx_set_min_proto_version(SSL_CTX *ctx, int version) {
    return (int)SSL_CTX_set_min_proto_version(ctx, version);
}
long rouse_ssl_ctx_set_options(SSL_CTX *ctx, long options) { return (long)SSL_CTX_set_options(ctx, options); }
long rouse_ssl_ctx_set_mode(SSL_CTX *ctx, long mode) { return SSL_CTX_set_mode(ctx, mode); }
long rouse_ssl_set_tlsext_host_name(SSL *ssl, const char *name) { return SSL_set_tlsext_host_name(ssl, name); }
long rouse_ssl_ctx_set_session_cache_mode(SSL_CTX *ctx, long mode) {
    return SSL_CTX_set_session_cache_mode(ctx, mode);
}
int rouse_tls1_2_version(void) { return TLS1_2_VERSION; }
void rouse_ssl_last_error(char *buf, size_t len) {
    unsigned long code = ERR_get_error();
    if (len == 0) return;
    buf[0] = 0;
    if (code != 0) ERR_error_string_n(code, buf, len);
    ERR_clear_error();
}
void rouse_ssl_ctx_set_h2_options(SSL_CTX *ctx) {
    SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_SESSION_RESUMPTION_ON_RENEGOTIATION |
                                 SSL_OP_NO_RENEGOTIATION);
}
long rouse_ssl_ctx_add_extra_chain_cert(SSL_CTX *ctx, X509 *cert) { return SSL_CTX_add_extra_chain_cert(ctx, cert); }
