/* example-handler: an example rouse-agent handler in C on librouse-handler (used by the tests of the library).
 *
 * Follows the rules: reports the call of a VoIP push at once, completes a background push, ends its call once
 * the call's session was activated, asks for an ambient audio session once registered. Logs one line per
 * step to the file named by its second argument (or stderr).
 *
 * With a third argument HOST:PORT it is a socket-woken VoIP handler (docs/voip-sockets.md): it connects there over
 * TCP, hands the connection to the agent (addVoIPSocket), asks for a 300 s keep-alive (refused: below iOS's
 * minimum) and a 600 s one, and then, woken by data on the connection, reads it itself: an INVITE is reported
 * with the wake's id (and answered "SIP/2.0 200 OK" on the connection), anything else answers voipWakeHandled.
 * Relaunched for data, it takes the connection back from the agent ("voipSocket" with "returned": true).
 *
 *     example-handler NAME [LOG [HOST:PORT]]
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "rouse-handler.h"

static const char *or_empty(const char *text) { return text != NULL ? text : ""; }

/* A TCP connection to "HOST:PORT" (IPv4 literal), -1 on failure. */
static int connect_to(const char *target) {
    char host[64];
    const char *colon = strrchr(target, ':');
    if (colon == NULL || (size_t)(colon - target) >= sizeof host) return -1;
    memcpy(host, target, (size_t)(colon - target));
    host[colon - target] = '\0';
    struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = htons((unsigned short)atoi(colon + 1))};
    if (inet_pton(AF_INET, host, &address.sin_addr) != 1) return -1;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    if (connect(fd, (struct sockaddr *)&address, sizeof address) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s NAME [LOG]\n", argv[0]);
        return 2;
    }
    FILE *log = argc > 2 ? fopen(argv[2], "a") : stderr;
    if (log == NULL) return 1;
    setvbuf(log, NULL, _IOLBF, 0);
    rouse_agent *agent = rouse_agent_connect(NULL);
    if (agent == NULL) {
        fprintf(log, "connect failed: %s\n", strerror(errno));
        return 1;
    }
    if (rouse_agent_register(agent, argv[1]) != 0) {
        fprintf(log, "register failed: %s\n", rouse_agent_error(agent));
        return 1;
    }
    const char *voip_target = argc > 3 ? argv[3] : NULL;
    int voip = -1;  // the watched connection
    char call[128] = "";
    rouse_event *event;
    double grace = 0;
    while (rouse_agent_next(agent, &event, -1) == 1) {
        const char *type = rouse_event_type(event);
        if (strcmp(type, "push") == 0 && rouse_event_is_true(event, "mustReport")) {
            // The PushKit rule: report first, everything else after.
            const char *push = or_empty(rouse_event_string(event, "pushID"));
            snprintf(call, sizeof call, "call-%s", push);
            if (rouse_agent_report_call(agent, push, call) != 0) fprintf(log, "report failed\n");
            unsigned char payload[4096];
            long length = rouse_base64_decode(or_empty(rouse_event_string(event, "payload")), payload,
                                              sizeof payload - 1);
            fprintf(log, "reported push=%s call=%s payload=%.*s\n", push, call, length < 0 ? 0 : (int)length,
                    (const char *)payload);
        } else if (strcmp(type, "push") == 0 &&
                   strcmp(or_empty(rouse_event_string(event, "pushType")), "background") == 0) {
            const char *push = or_empty(rouse_event_string(event, "pushID"));
            rouse_agent_complete(agent, push, "newData");
            fprintf(log, "completed push=%s\n", push);
        } else if (strcmp(type, "registered") == 0) {
            const char *reason = or_empty(rouse_event_string(event, "launchReason"));
            fprintf(log, "registered handler=%s launchReason=%s\n", or_empty(rouse_event_string(event, "handler")),
                    reason);
            if (voip_target == NULL) {
                rouse_agent_activate(agent, 1, "chime", "ambient", NULL);
            } else if (strcmp(reason, "voipSocket") != 0 && strcmp(reason, "keepAlive") != 0) {
                voip = connect_to(voip_target);
                if (voip < 0 || rouse_agent_add_voip_socket(agent, 10, voip) != 0) {
                    fprintf(log, "voip connect failed: %s\n", rouse_agent_error(agent));
                }
                rouse_agent_set_keep_alive(agent, 11, 300);  // refused: below 600 s
                rouse_agent_set_keep_alive(agent, 12, 600);
            }
        } else if (strcmp(type, "voipSocket") == 0) {
            long long id = -1;
            rouse_event_int(event, "socketID", &id);
            int returned = rouse_event_is_true(event, "returned");
            if (returned) {
                int fd = rouse_event_take_fd(event);
                if (fd >= 0) {
                    if (voip >= 0) close(voip);
                    voip = fd;
                }
            }
            fprintf(log, "voipSocket id=%lld kind=%s returned=%d fd=%s\n", id,
                    or_empty(rouse_event_string(event, "kind")), returned, voip >= 0 ? "yes" : "no");
        } else if (strcmp(type, "ok") == 0 && rouse_event_request_id(event) == 12) {
            fprintf(log, "keepAliveSet seconds=600\n");
        } else if (strcmp(type, "voipSocketWake") == 0) {
            const char *wake = or_empty(rouse_event_string(event, "wakeID"));
            char data[512];
            ssize_t got = voip >= 0 ? recv(voip, data, sizeof data - 1, MSG_DONTWAIT) : -1;
            if (got < 0) got = 0;
            data[got] = '\0';
            char *end = strstr(data, "\r\n");
            if (end != NULL) *end = '\0';
            fprintf(log, "wake id=%s mustReport=%d data=%s\n", wake, rouse_event_is_true(event, "mustReport"), data);
            if (strncmp(data, "INVITE ", 7) == 0) {
                rouse_agent_report_call(agent, wake, "socket-call");
                static const char ok[] = "SIP/2.0 200 OK\r\n\r\n";
                if (send(voip, ok, sizeof ok - 1, MSG_NOSIGNAL) < 0) fprintf(log, "answer failed\n");
                rouse_agent_call_ended(agent, "socket-call");
                fprintf(log, "reported wake=%s\n", wake);
            } else {
                rouse_agent_voip_wake_handled(agent, 13, wake);
                fprintf(log, "wakeHandled id=%s\n", wake);
            }
        } else if (strcmp(type, ROUSE_EVENT_MEMORY_WARNING) == 0) {
            long long bytes = -1;
            (void)rouse_event_int(event, "memoryBytes", &bytes);
            fprintf(log, "memoryWarning memoryBytes=%lld\n", bytes);
        } else if (strcmp(type, "keepAlive") == 0) {
            const char *id = or_empty(rouse_event_string(event, "keepAliveID"));
            rouse_agent_keep_alive_done(agent, 14, id);
            fprintf(log, "keepAlive id=%s\n", id);
        } else if (strcmp(type, "activation") == 0) {
            const char *session = or_empty(rouse_event_string(event, "session"));
            const char *what = or_empty(rouse_event_string(event, "event"));
            if (rouse_event_request_id(event) == 1) {
                fprintf(log, "activate session=%s event=%s\n", session, what);
            } else {
                fprintf(log, "activation session=%s event=%s\n", session, what);
            }
            if (strcmp(session, "call") == 0 && strcmp(what, "callActivated") == 0 && call[0] != '\0') {
                rouse_agent_call_ended(agent, call);
                fprintf(log, "ended call=%s\n", call);
                call[0] = '\0';
            }
        } else if (rouse_event_will_terminate(event, &grace)) {
            // The agent stops this handler: end the call, say goodbye, and exit within the grace.
            fprintf(log, "willTerminate reason=%s seconds=%g\n", or_empty(rouse_event_string(event, "reason")), grace);
            if (call[0] != '\0') rouse_agent_call_ended(agent, call);
            rouse_event_free(event);
            break;
        } else if (strcmp(type, "credentials") == 0) {
            fprintf(log, "credentials topic=%s\n", or_empty(rouse_event_string(event, "topic")));
        } else if (strcmp(type, "error") == 0) {
            fprintf(log, "error requestID=%d %s %s\n", rouse_event_request_id(event), or_empty(rouse_event_string(event, "error")),
                    or_empty(rouse_event_string(event, "detail")));
        } else {
            fprintf(log, "event %s\n", type);
        }
        rouse_event_free(event);
    }
    fprintf(log, "closed: %s\n", rouse_agent_error(agent));
    if (voip >= 0) close(voip);
    rouse_agent_close(agent);
    return 0;
}
