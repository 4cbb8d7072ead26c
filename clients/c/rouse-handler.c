/* rouse-handler.c: see rouse-handler.h and docs/handler-protocol.md.
 *
 * Why hand-written JSON: the protocol's frames are one flat JSON object whose members are strings, numbers,
 * booleans, arrays of strings and (rarely) small objects; a handler written in C needs to read a handful of
 * string and number members and write a few. A general JSON library (libjansson, json-c) would be a second
 * dependency for every softphone that links this, for ~300 lines of code here. The decoder below is a
 * complete, strict RFC 8259 validator (depth-limited to 32) that keeps the top-level members: strings
 * decoded to UTF-8 (\u escapes and surrogate pairs included), everything else as its JSON text.
 */
#define _GNU_SOURCE
#include "rouse-handler.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))
#define MAX_MEMBERS 64
#define MAX_DEPTH 32
#define MAX_PENDING_FDS 8
#define BUFFER_BYTES (2 * (4 + ROUSE_MAX_FRAME_BYTES))

struct rouse_agent {
    int fd;
    unsigned char buffer[BUFFER_BYTES];
    size_t used;
    int fds[MAX_PENDING_FDS];
    int fd_count;
    int broken;
    char error[256];
};

struct rouse_message {
    char *text;
    size_t length, capacity;
    int failed;
};

struct member {
    const char *key;
    char kind;          /* 's' string, 'n' number, 't' true, 'f' false, 'z' null, 'o' object, 'a' array */
    const char *value;  /* decoded string, or the JSON text */
};

struct rouse_event {
    struct member members[MAX_MEMBERS];
    int count;
    int fd;
    char arena[];       /* keys and values, NUL-terminated */
};

static int fail(rouse_agent *agent, int code, const char *format, ...) {
    if (agent != NULL) {
        va_list arguments;
        va_start(arguments, format);
        vsnprintf(agent->error, sizeof agent->error, format, arguments);
        va_end(arguments);
    }
    errno = code;
    return -1;
}

/* Connecting. */

EXPORT rouse_agent *rouse_agent_connect(const char *socket_path) {
    rouse_agent *agent = calloc(1, sizeof *agent);
    if (agent == NULL) return NULL;
    agent->fd = -1;
    const char *inherited = getenv("ROUSE_AGENT_FD");
    if (socket_path == NULL && inherited != NULL && *inherited != '\0') {
        char *end = NULL;
        long fd = strtol(inherited, &end, 10);
        if (*end != '\0' || fd < 0 || fd > 65535 || fcntl((int)fd, F_SETFD, FD_CLOEXEC) != 0) {
            free(agent);
            errno = EBADF;
            return NULL;
        }
        agent->fd = (int)fd;
        return agent;
    }
    const char *path = socket_path != NULL ? socket_path : getenv("ROUSE_AGENT_SOCKET");
    if (path == NULL || *path == '\0') path = ROUSE_DEFAULT_SOCKET;
    struct sockaddr_un address = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof address.sun_path) {
        free(agent);
        errno = ENAMETOOLONG;
        return NULL;
    }
    strcpy(address.sun_path, path);
    agent->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (agent->fd < 0 || connect(agent->fd, (struct sockaddr *)&address, sizeof address) != 0) {
        int saved = errno;
        if (agent->fd >= 0) close(agent->fd);
        free(agent);
        errno = saved;
        return NULL;
    }
    return agent;
}

EXPORT int rouse_agent_fd(const rouse_agent *agent) { return agent->fd; }

EXPORT const char *rouse_agent_error(const rouse_agent *agent) { return agent->error; }

EXPORT void rouse_agent_close(rouse_agent *agent) {
    if (agent == NULL) return;
    for (int i = 0; i < agent->fd_count; i++) close(agent->fds[i]);
    if (agent->fd >= 0) close(agent->fd);
    free(agent);
}

/* Building messages. */

static void append(rouse_message *message, const char *bytes, size_t length) {
    if (message->failed) return;
    if (message->length + length + 2 > message->capacity) {
        size_t capacity = (message->length + length + 2) * 2;
        char *grown = realloc(message->text, capacity);
        if (grown == NULL) {
            message->failed = 1;
            return;
        }
        message->text = grown;
        message->capacity = capacity;
    }
    memcpy(message->text + message->length, bytes, length);
    message->length += length;
    message->text[message->length] = '\0';
}

static void append_string(rouse_message *message, const char *value) {
    static const char hex[] = "0123456789abcdef";
    append(message, "\"", 1);
    for (const unsigned char *c = (const unsigned char *)value; *c != '\0'; c++) {
        if (*c == '"' || *c == '\\') {
            char escaped[2] = {'\\', (char)*c};
            append(message, escaped, 2);
        } else if (*c < 0x20) {
            char escaped[6] = {'\\', 'u', '0', '0', hex[*c >> 4], hex[*c & 15]};
            append(message, escaped, 6);
        } else {
            append(message, (const char *)c, 1);
        }
    }
    append(message, "\"", 1);
}

static int begin_member(rouse_message *message, const char *key) {
    if (message == NULL || key == NULL) return -1;
    append(message, ",", 1);
    append_string(message, key);
    append(message, ":", 1);
    return message->failed ? -1 : 0;
}

EXPORT rouse_message *rouse_message_new(const char *type) {
    rouse_message *message = calloc(1, sizeof *message);
    if (message == NULL) return NULL;
    append(message, "{\"v\":1,\"type\":", 14);
    append_string(message, type);
    if (message->failed) {
        rouse_message_free(message);
        return NULL;
    }
    return message;
}

EXPORT int rouse_message_add_string(rouse_message *message, const char *key, const char *value) {
    if (value == NULL || begin_member(message, key) != 0) return -1;
    append_string(message, value);
    return message->failed ? -1 : 0;
}

EXPORT int rouse_message_add_int(rouse_message *message, const char *key, long long value) {
    char text[32];
    int length = snprintf(text, sizeof text, "%lld", value);
    if (begin_member(message, key) != 0) return -1;
    append(message, text, (size_t)length);
    return message->failed ? -1 : 0;
}

EXPORT int rouse_message_add_number(rouse_message *message, const char *key, double value) {
    char text[40];
    if (!isfinite(value)) return -1;
    int length = snprintf(text, sizeof text, "%.17g", value);
    if (begin_member(message, key) != 0) return -1;
    append(message, text, (size_t)length);
    return message->failed ? -1 : 0;
}

EXPORT int rouse_message_add_bool(rouse_message *message, const char *key, int value) {
    if (begin_member(message, key) != 0) return -1;
    append(message, value ? "true" : "false", value ? 4 : 5);
    return message->failed ? -1 : 0;
}

EXPORT int rouse_message_add_strings(rouse_message *message, const char *key, const char *const *values,
                                     size_t count) {
    if (begin_member(message, key) != 0) return -1;
    append(message, "[", 1);
    for (size_t i = 0; i < count; i++) {
        if (i > 0) append(message, ",", 1);
        append_string(message, values[i] != NULL ? values[i] : "");
    }
    append(message, "]", 1);
    return message->failed ? -1 : 0;
}

EXPORT int rouse_message_add_json(rouse_message *message, const char *key, const char *json) {
    if (json == NULL || begin_member(message, key) != 0) return -1;
    append(message, json, strlen(json));
    return message->failed ? -1 : 0;
}

EXPORT void rouse_message_free(rouse_message *message) {
    if (message == NULL) return;
    free(message->text);
    free(message);
}

/* Sending. */

static int send_all(rouse_agent *agent, const unsigned char *bytes, size_t length, int fd) {
    while (length > 0) {
        struct iovec vector = {.iov_base = (void *)bytes, .iov_len = length};
        union {
            struct cmsghdr header;
            char space[CMSG_SPACE(sizeof(int))];
        } control;
        struct msghdr header = {.msg_iov = &vector, .msg_iovlen = 1};
        if (fd >= 0) {
            memset(&control, 0, sizeof control);
            header.msg_control = control.space;
            header.msg_controllen = sizeof control.space;
            struct cmsghdr *message = CMSG_FIRSTHDR(&header);
            message->cmsg_level = SOL_SOCKET;
            message->cmsg_type = SCM_RIGHTS;
            message->cmsg_len = CMSG_LEN(sizeof(int));
            memcpy(CMSG_DATA(message), &fd, sizeof fd);
        }
        ssize_t sent = sendmsg(agent->fd, &header, MSG_NOSIGNAL);
        if (sent < 0) {
            if (errno == EINTR) continue;
            return fail(agent, errno, "send: %s", strerror(errno));
        }
        bytes += sent;
        length -= (size_t)sent;
        fd = -1;  // passed with the first bytes
    }
    return 0;
}

EXPORT int rouse_agent_send(rouse_agent *agent, const rouse_message *message, int request_id, int fd) {
    if (message == NULL || message->failed) return fail(agent, ENOMEM, "message not built (out of memory)");
    rouse_message copy = *message;
    copy.text = malloc(message->length + 40);
    if (copy.text == NULL) return fail(agent, ENOMEM, "out of memory");
    memcpy(copy.text, message->text, message->length);
    size_t length = message->length;
    if (request_id > 0) length += (size_t)sprintf(copy.text + length, ",\"requestID\":%d", request_id);
    copy.text[length++] = '}';
    if (length > ROUSE_MAX_FRAME_BYTES) {
        free(copy.text);
        return fail(agent, EMSGSIZE, "frame of %zu bytes (at most %d)", length, ROUSE_MAX_FRAME_BYTES);
    }
    unsigned char prefix[4] = {(unsigned char)(length >> 24), (unsigned char)(length >> 16),
                               (unsigned char)(length >> 8), (unsigned char)length};
    int result = send_all(agent, prefix, 4, fd);
    if (result == 0) result = send_all(agent, (const unsigned char *)copy.text, length, -1);
    free(copy.text);
    return result;
}

static int send_built(rouse_agent *agent, rouse_message *message, int failed, int request_id) {
    int result = failed || message == NULL ? fail(agent, ENOMEM, "message not built")
                                           : rouse_agent_send(agent, message, request_id, -1);
    rouse_message_free(message);
    return result;
}

EXPORT int rouse_agent_register(rouse_agent *agent, const char *handler) {
    rouse_message *message = rouse_message_new("register");
    int failed = rouse_message_add_string(message, "handler", handler);
    return send_built(agent, message, failed, 0);
}

EXPORT int rouse_agent_report_call(rouse_agent *agent, const char *push_id, const char *call_id) {
    rouse_message *message = rouse_message_new("reportCall");
    int failed = rouse_message_add_string(message, "callID", call_id);
    if (push_id != NULL) failed |= rouse_message_add_string(message, "pushID", push_id);
    return send_built(agent, message, failed, 0);
}

EXPORT int rouse_agent_call_ended(rouse_agent *agent, const char *call_id) {
    rouse_message *message = rouse_message_new("callEnded");
    int failed = rouse_message_add_string(message, "callID", call_id);
    return send_built(agent, message, failed, 0);
}

EXPORT int rouse_agent_complete(rouse_agent *agent, const char *push_id, const char *result) {
    rouse_message *message = rouse_message_new("complete");
    int failed = rouse_message_add_string(message, "pushID", push_id);
    failed |= rouse_message_add_string(message, "result", result);
    return send_built(agent, message, failed, 0);
}

EXPORT int rouse_agent_set_state(rouse_agent *agent, const char *state) {
    rouse_message *message = rouse_message_new("setState");
    int failed = rouse_message_add_string(message, "state", state);
    return send_built(agent, message, failed, 0);
}

EXPORT int rouse_agent_activate(rouse_agent *agent, int request_id, const char *session, const char *category,
                                const char *mode) {
    rouse_message *message = rouse_message_new("activate");
    int failed = rouse_message_add_string(message, "session", session);
    failed |= rouse_message_add_string(message, "category", category);
    if (mode != NULL) failed |= rouse_message_add_string(message, "mode", mode);
    return send_built(agent, message, failed, request_id);
}

EXPORT int rouse_agent_deactivate(rouse_agent *agent, int request_id, const char *session, int notify_others) {
    rouse_message *message = rouse_message_new("deactivate");
    int failed = rouse_message_add_string(message, "session", session);
    failed |= rouse_message_add_bool(message, "notifyOthers", notify_others);
    return send_built(agent, message, failed, request_id);
}

/* Socket-woken VoIP (docs/handler-protocol.md sections 6.12, 6.13, 7.14). */

EXPORT int rouse_agent_add_voip_socket(rouse_agent *agent, int request_id, int socket_fd) {
    if (socket_fd < 0) return fail(agent, EBADF, "addVoIPSocket needs a socket descriptor");
    rouse_message *message = rouse_message_new("addVoIPSocket");
    int failed = rouse_message_add_bool(message, "descriptor", 1);
    int result = failed || message == NULL ? fail(agent, ENOMEM, "message not built")
                                           : rouse_agent_send(agent, message, request_id, socket_fd);
    rouse_message_free(message);
    return result;
}

EXPORT int rouse_agent_remove_voip_socket(rouse_agent *agent, int request_id, long long socket_id) {
    rouse_message *message = rouse_message_new("removeVoIPSocket");
    int failed = rouse_message_add_int(message, "socketID", socket_id);
    return send_built(agent, message, failed, request_id);
}

EXPORT int rouse_agent_voip_wake_handled(rouse_agent *agent, int request_id, const char *wake_id) {
    rouse_message *message = rouse_message_new("voipWakeHandled");
    int failed = rouse_message_add_string(message, "wakeID", wake_id);
    return send_built(agent, message, failed, request_id);
}

EXPORT int rouse_agent_set_keep_alive(rouse_agent *agent, int request_id, double seconds) {
    rouse_message *message = rouse_message_new("setKeepAlive");
    int failed = rouse_message_add_number(message, "seconds", seconds);
    return send_built(agent, message, failed, request_id);
}

EXPORT int rouse_agent_clear_keep_alive(rouse_agent *agent, int request_id) {
    return send_built(agent, rouse_message_new("clearKeepAlive"), 0, request_id);
}

EXPORT int rouse_agent_keep_alive_done(rouse_agent *agent, int request_id, const char *keep_alive_id) {
    rouse_message *message = rouse_message_new("keepAliveDone");
    int failed = rouse_message_add_string(message, "keepAliveID", keep_alive_id);
    return send_built(agent, message, failed, request_id);
}

EXPORT int rouse_agent_restoration_finished(rouse_agent *agent, int request_id) {
    return send_built(agent, rouse_message_new("restorationFinished"), 0, request_id);
}

EXPORT int rouse_event_will_terminate(const rouse_event *event, double *seconds) {
    const char *type = rouse_event_type(event);
    if (type == NULL || strcmp(type, "willTerminate") != 0) return 0;
    double grace = 0;
    if (rouse_event_number(event, "seconds", &grace) != 0) grace = 0;
    if (seconds != NULL) *seconds = grace;
    return 1;
}

EXPORT int rouse_event_time_changed(const rouse_event *event, int *clock_step, int *time_zone) {
    const char *type = rouse_event_type(event);
    if (type == NULL || strcmp(type, "timeChanged") != 0) return 0;
    if (clock_step != NULL) *clock_step = rouse_event_is_true(event, "clockStep");
    if (time_zone != NULL) *time_zone = rouse_event_is_true(event, "timeZone");
    return 1;
}

/* Protected files (docs/handler-protocol.md section 10, "Protected files in the client libraries"). */

static const char base64_alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* data as base64 text (malloc'd, NUL-terminated), NULL when out of memory or too large for a frame anyway. */
static char *base64_encode(const unsigned char *data, size_t size) {
    if (size > ROUSE_MAX_FRAME_BYTES) return NULL;
    char *text = malloc((size + 2) / 3 * 4 + 1);
    if (text == NULL) return NULL;
    char *out = text;
    for (size_t i = 0; i < size; i += 3) {
        unsigned long chunk = (unsigned long)data[i] << 16;
        if (i + 1 < size) chunk |= (unsigned long)data[i + 1] << 8;
        if (i + 2 < size) chunk |= data[i + 2];
        *out++ = base64_alphabet[(chunk >> 18) & 63];
        *out++ = base64_alphabet[(chunk >> 12) & 63];
        *out++ = i + 1 < size ? base64_alphabet[(chunk >> 6) & 63] : '=';
        *out++ = i + 2 < size ? base64_alphabet[chunk & 63] : '=';
    }
    *out = '\0';
    return text;
}

static rouse_message *protected_message(const char *op, const char *name, int *failed) {
    rouse_message *message = rouse_message_new("protectedFile");
    *failed = rouse_message_add_string(message, "op", op);
    *failed |= rouse_message_add_string(message, "name", name);
    return message;
}

EXPORT int rouse_agent_write_protected(rouse_agent *agent, int request_id, const char *name, const void *data,
                                       size_t size, const char *protection, long long handle) {
    if (data == NULL && size > 0) return fail(agent, EINVAL, "write_protected: no data");
    char *text = base64_encode(data, size);
    if (text == NULL) return fail(agent, size > ROUSE_MAX_FRAME_BYTES ? EMSGSIZE : ENOMEM, "data not encoded");
    int failed;
    rouse_message *message = protected_message("write", name, &failed);
    failed |= rouse_message_add_string(message, "data", text);
    free(text);
    if (protection != NULL) failed |= rouse_message_add_string(message, "protection", protection);
    if (handle > 0) failed |= rouse_message_add_int(message, "handle", handle);
    return send_built(agent, message, failed, request_id);
}

EXPORT int rouse_agent_read_protected(rouse_agent *agent, int request_id, const char *name, long long handle) {
    int failed;
    rouse_message *message = protected_message("read", name, &failed);
    if (handle > 0) failed |= rouse_message_add_int(message, "handle", handle);
    return send_built(agent, message, failed, request_id);
}

EXPORT int rouse_agent_reclass_protected(rouse_agent *agent, int request_id, const char *name,
                                         const char *protection) {
    int failed;
    rouse_message *message = protected_message("reclass", name, &failed);
    failed |= rouse_message_add_string(message, "protection", protection);
    return send_built(agent, message, failed, request_id);
}

EXPORT int rouse_agent_remove_protected(rouse_agent *agent, int request_id, const char *name) {
    int failed;
    rouse_message *message = protected_message("remove", name, &failed);
    return send_built(agent, message, failed, request_id);
}

EXPORT int rouse_agent_open_protected(rouse_agent *agent, int request_id, const char *name, int create) {
    int failed;
    rouse_message *message = protected_message("open", name, &failed);
    if (create) failed |= rouse_message_add_string(message, "protection", "complete-unless-open");
    return send_built(agent, message, failed, request_id);
}

EXPORT int rouse_agent_close_protected(rouse_agent *agent, int request_id, const char *name, long long handle) {
    int failed;
    rouse_message *message = protected_message("close", name, &failed);
    failed |= rouse_message_add_int(message, "handle", handle);
    return send_built(agent, message, failed, request_id);
}

/* Decoding JSON (strict RFC 8259) into the top-level members. */

typedef struct {
    const char *at, *end;
    char *arena;        /* where decoded strings and copies go */
} parser;

static void skip_space(parser *p) {
    while (p->at < p->end && (*p->at == ' ' || *p->at == '\t' || *p->at == '\n' || *p->at == '\r')) p->at++;
}

static int hex4(const char *at, unsigned *value) {
    *value = 0;
    for (int i = 0; i < 4; i++) {
        char c = at[i];
        unsigned digit = c >= '0' && c <= '9' ? (unsigned)(c - '0')
                         : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10)
                         : c >= 'A' && c <= 'F' ? (unsigned)(c - 'A' + 10)
                                                : 16u;
        if (digit == 16) return -1;
        *value = *value * 16 + digit;
    }
    return 0;
}

static void put_utf8(char **out, unsigned code) {
    char *o = *out;
    if (code < 0x80) {
        *o++ = (char)code;
    } else if (code < 0x800) {
        *o++ = (char)(0xC0 | (code >> 6));
        *o++ = (char)(0x80 | (code & 0x3F));
    } else if (code < 0x10000) {
        *o++ = (char)(0xE0 | (code >> 12));
        *o++ = (char)(0x80 | ((code >> 6) & 0x3F));
        *o++ = (char)(0x80 | (code & 0x3F));
    } else {
        *o++ = (char)(0xF0 | (code >> 18));
        *o++ = (char)(0x80 | ((code >> 12) & 0x3F));
        *o++ = (char)(0x80 | ((code >> 6) & 0x3F));
        *o++ = (char)(0x80 | (code & 0x3F));
    }
    *out = o;
}

/* A string at p->at ('"'); decoded into the arena when decode is set (then *result points at it). */
static int parse_string(parser *p, int decode, const char **result) {
    char *out = p->arena;
    p->at++;
    while (p->at < p->end) {
        unsigned char c = (unsigned char)*p->at++;
        if (c == '"') {
            if (decode) {
                *out++ = '\0';
                *result = p->arena;
                p->arena = out;
            }
            return 0;
        }
        if (c < 0x20) return -1;
        if (c != '\\') {
            if (decode) *out++ = (char)c;
            continue;
        }
        if (p->at >= p->end) return -1;
        char e = *p->at++;
        unsigned code;
        switch (e) {
        case '"': case '\\': case '/': code = (unsigned char)e; break;
        case 'b': code = '\b'; break;
        case 'f': code = '\f'; break;
        case 'n': code = '\n'; break;
        case 'r': code = '\r'; break;
        case 't': code = '\t'; break;
        case 'u':
            if (p->end - p->at < 4 || hex4(p->at, &code) != 0) return -1;
            p->at += 4;
            if (code >= 0xD800 && code < 0xDC00) {
                unsigned low;
                if (p->end - p->at < 6 || p->at[0] != '\\' || p->at[1] != 'u' || hex4(p->at + 2, &low) != 0 ||
                    low < 0xDC00 || low > 0xDFFF)
                    return -1;
                p->at += 6;
                code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
            } else if (code >= 0xDC00 && code < 0xE000) {
                return -1;
            }
            break;
        default: return -1;
        }
        if (decode) put_utf8(&out, code);
    }
    return -1;
}

static int parse_value(parser *p, int depth, char *kind);

static int parse_number(parser *p) {
    const char *at = p->at;
    if (at < p->end && *at == '-') at++;
    if (at >= p->end) return -1;
    if (*at == '0') {
        at++;
    } else if (*at >= '1' && *at <= '9') {
        while (at < p->end && *at >= '0' && *at <= '9') at++;
    } else {
        return -1;
    }
    if (at < p->end && *at == '.') {
        at++;
        if (at >= p->end || *at < '0' || *at > '9') return -1;
        while (at < p->end && *at >= '0' && *at <= '9') at++;
    }
    if (at < p->end && (*at == 'e' || *at == 'E')) {
        at++;
        if (at < p->end && (*at == '+' || *at == '-')) at++;
        if (at >= p->end || *at < '0' || *at > '9') return -1;
        while (at < p->end && *at >= '0' && *at <= '9') at++;
    }
    p->at = at;
    return 0;
}

static int literal(parser *p, const char *word) {
    size_t length = strlen(word);
    if ((size_t)(p->end - p->at) < length || memcmp(p->at, word, length) != 0) return -1;
    p->at += length;
    return 0;
}

static int parse_container(parser *p, int depth, char close) {
    if (depth > MAX_DEPTH) return -1;
    p->at++;
    skip_space(p);
    if (p->at < p->end && *p->at == close) {
        p->at++;
        return 0;
    }
    while (1) {
        char kind;
        skip_space(p);
        if (close == '}') {
            if (p->at >= p->end || *p->at != '"' || parse_string(p, 0, NULL) != 0) return -1;
            skip_space(p);
            if (p->at >= p->end || *p->at++ != ':') return -1;
            skip_space(p);
        }
        if (parse_value(p, depth + 1, &kind) != 0) return -1;
        skip_space(p);
        if (p->at >= p->end) return -1;
        char c = *p->at++;
        if (c == close) return 0;
        if (c != ',') return -1;
    }
}

static int parse_value(parser *p, int depth, char *kind) {
    if (p->at >= p->end) return -1;
    switch (*p->at) {
    case '"': *kind = 's'; return parse_string(p, 0, NULL);
    case '{': *kind = 'o'; return parse_container(p, depth, '}');
    case '[': *kind = 'a'; return parse_container(p, depth, ']');
    case 't': *kind = 't'; return literal(p, "true");
    case 'f': *kind = 'f'; return literal(p, "false");
    case 'n': *kind = 'z'; return literal(p, "null");
    default: *kind = 'n'; return parse_number(p);
    }
}

/* Whether bytes are well-formed UTF-8 (RFC 3629: no overlongs, no surrogates, at most U+10FFFF). */
static int valid_utf8(const unsigned char *bytes, size_t length) {
    size_t i = 0;
    while (i < length) {
        unsigned char c = bytes[i];
        size_t extra;
        unsigned code, minimum;
        if (c < 0x80) { i++; continue; }
        if (c >= 0xC2 && c <= 0xDF) { extra = 1; code = c & 0x1F; minimum = 0x80; }
        else if (c >= 0xE0 && c <= 0xEF) { extra = 2; code = c & 0x0F; minimum = 0x800; }
        else if (c >= 0xF0 && c <= 0xF4) { extra = 3; code = c & 0x07; minimum = 0x10000; }
        else return 0;
        if (length - i <= extra) return 0;
        for (size_t k = 1; k <= extra; k++) {
            if ((bytes[i + k] & 0xC0) != 0x80) return 0;
            code = code << 6 | (bytes[i + k] & 0x3F);
        }
        if (code < minimum || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) return 0;
        i += extra + 1;
    }
    return 1;
}

/* The event of one frame body; NULL with *why set when it is not a protocol object. */
static rouse_event *decode(const char *body, size_t length, const char **why) {
    if (!valid_utf8((const unsigned char *)body, length)) {
        *why = "not UTF-8";
        return NULL;
    }
    rouse_event *event = calloc(1, sizeof *event + 2 * length + 2);
    if (event == NULL) {
        *why = "out of memory";
        return NULL;
    }
    event->fd = -1;
    parser p = {.at = body, .end = body + length, .arena = event->arena};
    skip_space(&p);
    if (p.at >= p.end || *p.at != '{') goto bad;
    p.at++;
    skip_space(&p);
    if (p.at < p.end && *p.at == '}') {
        p.at++;
    } else {
        while (1) {
            skip_space(&p);
            const char *key;
            if (p.at >= p.end || *p.at != '"' || parse_string(&p, 1, &key) != 0) goto bad;
            skip_space(&p);
            if (p.at >= p.end || *p.at++ != ':') goto bad;
            skip_space(&p);
            const char *start = p.at;
            char kind;
            const char *value = NULL;
            if (p.at < p.end && *p.at == '"') {
                kind = 's';
                if (parse_string(&p, 1, &value) != 0) goto bad;
            } else {
                if (parse_value(&p, 1, &kind) != 0) goto bad;
                size_t size = (size_t)(p.at - start);
                memcpy(p.arena, start, size);
                p.arena[size] = '\0';
                value = p.arena;
                p.arena += size + 1;
            }
            if (event->count == MAX_MEMBERS) {
                *why = "more than 64 members";
                free(event);
                return NULL;
            }
            event->members[event->count++] = (struct member){key, kind, value};
            skip_space(&p);
            if (p.at >= p.end) goto bad;
            char c = *p.at++;
            if (c == '}') break;
            if (c != ',') goto bad;
        }
    }
    skip_space(&p);
    if (p.at != p.end) goto bad;
    return event;
bad:
    *why = "not a JSON object";
    free(event);
    return NULL;
}

static const struct member *find(const rouse_event *event, const char *key) {
    for (int i = event->count - 1; i >= 0; i--) {  // the last of duplicates wins, as in Foundation's decoder
        if (strcmp(event->members[i].key, key) == 0) return &event->members[i];
    }
    return NULL;
}

/* Receiving. */

static int take_frame(rouse_agent *agent, rouse_event **out) {
    if (agent->used < 4) return 0;
    size_t length = (size_t)agent->buffer[0] << 24 | (size_t)agent->buffer[1] << 16 |
                    (size_t)agent->buffer[2] << 8 | agent->buffer[3];
    if (length == 0 || length > ROUSE_MAX_FRAME_BYTES) {
        agent->broken = 1;
        return fail(agent, EPROTO, "malformedFrame: frame length %zu", length);
    }
    if (agent->used < 4 + length) return 0;
    const char *why = NULL;
    rouse_event *event = decode((const char *)agent->buffer + 4, length, &why);
    memmove(agent->buffer, agent->buffer + 4 + length, agent->used - 4 - length);
    agent->used -= 4 + length;
    if (event == NULL) {
        agent->broken = 1;
        return fail(agent, EPROTO, "malformedFrame: %s", why);
    }
    const struct member *version = find(event, "v");
    const struct member *type = find(event, "type");
    if (type == NULL || type->kind != 's' || version == NULL || version->kind != 'n') {
        free(event);
        agent->broken = 1;
        return fail(agent, EPROTO, "malformedFrame: no type or v");
    }
    if (strcmp(version->value, "1") != 0) {
        fail(agent, EPROTO, "unsupportedVersion: v=%.32s", version->value);
        free(event);
        agent->broken = 1;
        return -1;
    }
    int claims = (strcmp(type->value, "transferTask") == 0 && rouse_event_is_true(event, "file")) ||
                 (strcmp(type->value, "voipSocket") == 0 && rouse_event_is_true(event, "returned"));
    if (claims && agent->fd_count > 0) {
        event->fd = agent->fds[0];
        memmove(agent->fds, agent->fds + 1, (size_t)(agent->fd_count - 1) * sizeof(int));
        agent->fd_count--;
    }
    *out = event;
    return 1;
}

static long long now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

EXPORT int rouse_agent_next(rouse_agent *agent, rouse_event **event, int timeout_ms) {
    *event = NULL;
    if (agent->broken) return fail(agent, EPROTO, "the connection is unusable after a malformed frame");
    long long deadline = timeout_ms < 0 ? -1 : now_ms() + timeout_ms;
    while (1) {
        int taken = take_frame(agent, event);
        if (taken != 0) return taken;
        int wait = -1;
        if (deadline >= 0) {
            long long left = deadline - now_ms();
            wait = left > 0 ? (int)left : 0;
        }
        struct pollfd poller = {.fd = agent->fd, .events = POLLIN};
        int ready = poll(&poller, 1, wait);
        if (ready < 0) {
            if (errno == EINTR) continue;
            return fail(agent, errno, "poll: %s", strerror(errno));
        }
        if (ready == 0) return 0;
        union {
            struct cmsghdr header;
            char space[CMSG_SPACE(4 * sizeof(int))];
        } control;
        struct iovec vector = {.iov_base = agent->buffer + agent->used, .iov_len = BUFFER_BYTES - agent->used};
        struct msghdr header = {
            .msg_iov = &vector, .msg_iovlen = 1, .msg_control = control.space, .msg_controllen = sizeof control};
        ssize_t got = recvmsg(agent->fd, &header, MSG_CMSG_CLOEXEC);
        if (got < 0) {
            if (errno == EINTR || errno == EAGAIN) continue;
            return fail(agent, errno, "receive: %s", strerror(errno));
        }
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&header); c != NULL; c = CMSG_NXTHDR(&header, c)) {
            if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
            size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
            for (size_t i = 0; i < count; i++) {
                int fd;
                memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
                if (agent->fd_count < MAX_PENDING_FDS) {
                    agent->fds[agent->fd_count++] = fd;
                } else {
                    close(fd);  // more than any frame claims: not kept
                }
            }
        }
        if (got == 0) return fail(agent, ECONNRESET, "the agent closed the connection");
        agent->used += (size_t)got;
    }
}

/* Reading events. */

EXPORT const char *rouse_event_type(const rouse_event *event) { return rouse_event_string(event, "type"); }

EXPORT const char *rouse_event_string(const rouse_event *event, const char *key) {
    const struct member *member = find(event, key);
    return member != NULL && member->kind == 's' ? member->value : NULL;
}

EXPORT int rouse_event_int(const rouse_event *event, const char *key, long long *value) {
    const struct member *member = find(event, key);
    if (member == NULL || member->kind != 'n') return -1;
    char *end = NULL;
    errno = 0;
    long long parsed = strtoll(member->value, &end, 10);
    if (errno != 0 || *end != '\0') return -1;
    *value = parsed;
    return 0;
}

EXPORT int rouse_event_number(const rouse_event *event, const char *key, double *value) {
    const struct member *member = find(event, key);
    if (member == NULL || member->kind != 'n') return -1;
    *value = strtod(member->value, NULL);
    return 0;
}

EXPORT int rouse_event_is_true(const rouse_event *event, const char *key) {
    const struct member *member = find(event, key);
    return member != NULL && member->kind == 't';
}

EXPORT const char *rouse_event_json(const rouse_event *event, const char *key) {
    const struct member *member = find(event, key);
    return member != NULL ? member->value : NULL;
}

EXPORT int rouse_event_member_count(const rouse_event *event) { return event->count; }

EXPORT const char *rouse_event_member_name(const rouse_event *event, int index) {
    return index >= 0 && index < event->count ? event->members[index].key : NULL;
}

EXPORT int rouse_event_is_string(const rouse_event *event, const char *key) {
    const struct member *member = find(event, key);
    return member != NULL && member->kind == 's';
}

EXPORT int rouse_event_request_id(const rouse_event *event) {
    long long id;
    return rouse_event_int(event, "requestID", &id) == 0 && id >= 0 && id <= INT32_MAX ? (int)id : -1;
}

EXPORT int rouse_event_take_fd(rouse_event *event) {
    int fd = event->fd;
    event->fd = -1;
    return fd;
}

EXPORT void rouse_event_free(rouse_event *event) {
    if (event == NULL) return;
    if (event->fd >= 0) close(event->fd);
    free(event);
}

EXPORT long rouse_base64_decode(const char *text, unsigned char *out, size_t out_size) {
    size_t written = 0;
    unsigned accumulator = 0;
    int bits = 0, padding = 0;
    for (const char *c = text; *c != '\0'; c++) {
        int value;
        if (*c >= 'A' && *c <= 'Z') value = *c - 'A';
        else if (*c >= 'a' && *c <= 'z') value = *c - 'a' + 26;
        else if (*c >= '0' && *c <= '9') value = *c - '0' + 52;
        else if (*c == '+') value = 62;
        else if (*c == '/') value = 63;
        else if (*c == '=') { padding++; continue; }
        else return -1;
        if (padding > 0) return -1;  // data after padding
        accumulator = (accumulator << 6) | (unsigned)value;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            if (written == out_size) return -1;
            out[written++] = (unsigned char)(accumulator >> bits);
            accumulator &= (1u << bits) - 1;
        }
    }
    if (padding > 2) return -1;
    return (long)written;
}
