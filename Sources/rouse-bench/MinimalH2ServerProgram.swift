import Foundation

/// The reference server of `rouse-bench send --versus-floor --server minimal`: a minimal C HTTP/2 server on
/// nghttp2 and OpenSSL that answers 200 with no body to every request, compiled by the bench with `cc`.
///
/// Hand-written C (nghttpd serves files and does more per request; the point here is a server so cheap that the
/// client's own cost shows): one thread, one epoll loop, TLS with ALPN `h2`, SETTINGS_MAX_CONCURRENT_STREAMS 1000
/// as APNs advertises, and for each stream that ends (a request's HEADERS or last DATA frame) a `:status 200`
/// response that ends the stream. Usage: `minimal-h2 PORT CERT-CHAIN-PEM KEY-PEM`; listens on 127.0.0.1.
enum MinimalH2ServerProgram {
    static let source = #"""
        #define _GNU_SOURCE
        #include <nghttp2/nghttp2.h>
        #include <openssl/err.h>
        #include <openssl/ssl.h>
        #include <arpa/inet.h>
        #include <errno.h>
        #include <netinet/in.h>
        #include <netinet/tcp.h>
        #include <signal.h>
        #include <stdio.h>
        #include <stdlib.h>
        #include <string.h>
        #include <sys/epoll.h>
        #include <sys/socket.h>
        #include <unistd.h>

        typedef struct {
            int fd;
            int ready; /* TLS handshake done, session made */
            int writing; /* EPOLLOUT registered */
            SSL *ssl;
            nghttp2_session *session;
            unsigned char *out;
            size_t outLength, outOffset, outCapacity;
        } Connection;

        static int epollFd;
        static nghttp2_session_callbacks *callbacks;

        static int onFrameRecv(nghttp2_session *session, const nghttp2_frame *frame, void *user) {
            (void)user;
            if ((frame->hd.type == NGHTTP2_HEADERS || frame->hd.type == NGHTTP2_DATA)
                && (frame->hd.flags & NGHTTP2_FLAG_END_STREAM)) {
                static const nghttp2_nv status[] = {
                    {(uint8_t *)":status", (uint8_t *)"200", 7, 3, NGHTTP2_NV_FLAG_NO_COPY_NAME | NGHTTP2_NV_FLAG_NO_COPY_VALUE}};
                nghttp2_submit_response(session, frame->hd.stream_id, status, 1, NULL);
            }
            return 0;
        }

        static int selectProtocol(SSL *ssl, const unsigned char **out, unsigned char *outLength,
                                  const unsigned char *in, unsigned int inLength, void *arg) {
            (void)ssl; (void)arg;
            if (nghttp2_select_next_protocol((unsigned char **)out, outLength, in, inLength) != 1)
                return SSL_TLSEXT_ERR_NOACK;
            return SSL_TLSEXT_ERR_OK;
        }

        static void closeConnection(Connection *c) {
            epoll_ctl(epollFd, EPOLL_CTL_DEL, c->fd, NULL);
            close(c->fd);
            SSL_free(c->ssl);
            if (c->session) nghttp2_session_del(c->session);
            free(c->out);
            free(c);
        }

        static void watch(Connection *c, int writing) {
            if (c->writing == writing) return;
            struct epoll_event event = {.events = EPOLLIN | (writing ? EPOLLOUT : 0), .data.ptr = c};
            epoll_ctl(epollFd, EPOLL_CTL_MOD, c->fd, &event);
            c->writing = writing;
        }

        /* Sends what nghttp2 has queued; -1: close the connection. */
        static int flush(Connection *c) {
            for (;;) {
                if (c->outOffset == c->outLength) {
                    c->outOffset = c->outLength = 0;
                    while (c->outLength < 65536) {
                        const uint8_t *data;
                        ssize_t n = nghttp2_session_mem_send(c->session, &data);
                        if (n < 0) return -1;
                        if (n == 0) break;
                        if (c->outLength + (size_t)n > c->outCapacity) {
                            c->outCapacity = (c->outLength + (size_t)n) * 2;
                            c->out = realloc(c->out, c->outCapacity);
                            if (!c->out) return -1;
                        }
                        memcpy(c->out + c->outLength, data, (size_t)n);
                        c->outLength += (size_t)n;
                    }
                    if (c->outLength == 0) {
                        watch(c, 0);
                        return nghttp2_session_want_read(c->session) || nghttp2_session_want_write(c->session) ? 0 : -1;
                    }
                }
                int n = SSL_write(c->ssl, c->out + c->outOffset, (int)(c->outLength - c->outOffset));
                if (n > 0) { c->outOffset += (size_t)n; continue; }
                int error = SSL_get_error(c->ssl, n);
                if (error == SSL_ERROR_WANT_WRITE) { watch(c, 1); return 0; }
                if (error == SSL_ERROR_WANT_READ) return 0;
                return -1;
            }
        }

        static int readable(Connection *c) {
            unsigned char buffer[16384];
            for (;;) {
                int n = SSL_read(c->ssl, buffer, sizeof buffer);
                if (n > 0) {
                    if (nghttp2_session_mem_recv(c->session, buffer, (size_t)n) < 0) return -1;
                    continue;
                }
                int error = SSL_get_error(c->ssl, n);
                if (error == SSL_ERROR_WANT_READ || error == SSL_ERROR_WANT_WRITE) break;
                return -1;
            }
            return flush(c);
        }

        static int handshake(Connection *c) {
            int n = SSL_accept(c->ssl);
            if (n <= 0) {
                int error = SSL_get_error(c->ssl, n);
                if (error == SSL_ERROR_WANT_READ) { watch(c, 0); return 0; }
                if (error == SSL_ERROR_WANT_WRITE) { watch(c, 1); return 0; }
                return -1;
            }
            const unsigned char *protocol = NULL;
            unsigned int protocolLength = 0;
            SSL_get0_alpn_selected(c->ssl, &protocol, &protocolLength);
            if (protocolLength != 2 || memcmp(protocol, "h2", 2) != 0) return -1;
            if (nghttp2_session_server_new(&c->session, callbacks, c) != 0) return -1;
            nghttp2_settings_entry settings[] = {{NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, 1000}};
            if (nghttp2_submit_settings(c->session, NGHTTP2_FLAG_NONE, settings, 1) != 0) return -1;
            c->ready = 1;
            return readable(c);
        }

        int main(int argc, char **argv) {
            if (argc != 4) {
                fprintf(stderr, "usage: minimal-h2 PORT CERT-CHAIN-PEM KEY-PEM\n");
                return 64;
            }
            signal(SIGPIPE, SIG_IGN);
            SSL_CTX *context = SSL_CTX_new(TLS_server_method());
            if (!context || SSL_CTX_use_certificate_chain_file(context, argv[2]) != 1
                || SSL_CTX_use_PrivateKey_file(context, argv[3], SSL_FILETYPE_PEM) != 1) {
                ERR_print_errors_fp(stderr);
                return 66;
            }
            SSL_CTX_set_min_proto_version(context, TLS1_2_VERSION);
            SSL_CTX_set_mode(context, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
            SSL_CTX_set_alpn_select_cb(context, selectProtocol, NULL);
            nghttp2_session_callbacks_new(&callbacks);
            nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, onFrameRecv);

            int listener = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
            int one = 1;
            setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
            struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argv[1]))};
            address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
            if (bind(listener, (struct sockaddr *)&address, sizeof address) != 0 || listen(listener, 128) != 0) {
                perror("bind/listen");
                return 71;
            }
            epollFd = epoll_create1(EPOLL_CLOEXEC);
            struct epoll_event event = {.events = EPOLLIN, .data.ptr = NULL};
            epoll_ctl(epollFd, EPOLL_CTL_ADD, listener, &event);
            struct epoll_event events[64];
            for (;;) {
                int count = epoll_wait(epollFd, events, 64, -1);
                if (count < 0) {
                    if (errno == EINTR) continue;
                    perror("epoll_wait");
                    return 71;
                }
                for (int i = 0; i < count; i++) {
                    Connection *c = events[i].data.ptr;
                    if (!c) {
                        int fd;
                        while ((fd = accept4(listener, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
                            setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                            Connection *fresh = calloc(1, sizeof *fresh);
                            fresh->fd = fd;
                            fresh->ssl = SSL_new(context);
                            SSL_set_fd(fresh->ssl, fd);
                            struct epoll_event add = {.events = EPOLLIN, .data.ptr = fresh};
                            epoll_ctl(epollFd, EPOLL_CTL_ADD, fd, &add);
                        }
                        continue;
                    }
                    int result;
                    if (!c->ready) result = handshake(c);
                    else if (events[i].events & (EPOLLERR | EPOLLHUP)) result = -1;
                    else {
                        result = 0;
                        if (events[i].events & EPOLLOUT) result = flush(c);
                        if (result == 0 && (events[i].events & EPOLLIN)) result = readable(c);
                    }
                    if (result < 0) closeConnection(c);
                }
            }
        }
        """#

    /// Writes the source into `directory` and compiles it; returns the executable's path.
    static func build(in directory: String) throws -> String {
        let sourcePath = directory + "/minimal-h2.c"
        let binary = directory + "/minimal-h2"
        try source.write(toFile: sourcePath, atomically: true, encoding: .utf8)
        let cc = try Bench.tool("/usr/bin/cc")
        let result = try SendBench.runProcess(
            cc, ["-O2", "-o", binary, sourcePath, "-lnghttp2", "-lssl", "-lcrypto"])
        guard result.status == 0 else {
            throw Bench.Failure(
                description: "cc minimal-h2.c failed (libnghttp2-dev and libssl-dev installed?): \(result.output)")
        }
        return binary
    }
}
