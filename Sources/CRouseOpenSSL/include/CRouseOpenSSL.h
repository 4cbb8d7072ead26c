// The HTTP/2 server's TLS shim (links OpenSSL only): OpenSSL macros turned into functions.
#ifndef ROUSE_OPENSSL_H
#define ROUSE_OPENSSL_H
#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>

int rouse_ssl_ctx_set_min_proto_version(SSL_CTX *ctx, int version);
long rouse_ssl_ctx_set_options(SSL_CTX *ctx, long options);
long rouse_ssl_ctx_set_mode(SSL_CTX *ctx, long mode);
long rouse_ssl_set_tlsext_host_name(SSL *ssl, const char *name);
long rouse_ssl_ctx_set_session_cache_mode(SSL_CTX *ctx, long mode);
int rouse_tls1_2_version(void);
/// Options every HTTP/2 context wants: no compression, no renegotiation.
void rouse_ssl_ctx_set_h2_options(SSL_CTX *ctx);
/// SSL_CTX_add_extra_chain_cert.
long rouse_ssl_ctx_add_extra_chain_cert(SSL_CTX *ctx, X509 *cert);
/// Writes the last OpenSSL error of this thread into `buf` (empty if none) and clears the queue.
void rouse_ssl_last_error(char *buf, size_t len);
#endif
