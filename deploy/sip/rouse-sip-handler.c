/* rouse-sip-handler (C): the push-woken SIP softphone handler of rouse-sip-handler.py, on librouse-handler.
 * Same rules, same log: reports the call of a VoIP push at once, starts baresip (auto-answer), watches its
 * ctrl_tcp events, and when the call closes quits baresip (which un-REGISTERs) and waits for it, THEN sends
 * callEnded; a push that came meanwhile (within 250 ms of it) is the next call, else it exits. A call not closed
 * within 15 s of the push is given up the same way. C starts in about a
 * millisecond where Python takes ~100 ms on a loaded machine: the difference shows in rouse-bench sip.
 *
 *     rouse-sip-handler NAME BARESIP CONFIG-DIR CTRL-PORT LOG
 *
 * cc -O2 -o rouse-sip-handler rouse-sip-handler.c $(pkg-config --cflags --libs rouse-handler)
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "rouse-handler.h"

extern char **environ;

static FILE *logfile;

static long long now_ms(void) {
    struct timeval t;
    gettimeofday(&t, NULL);
    return (long long)t.tv_sec * 1000 + t.tv_usec / 1000;
}

static long long monotonic_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* One JSON log line: {"event": EVENT, "t": ms, "pid": pid[, EXTRA]} (EXTRA: members already in JSON). */
static void log_event(const char *event, const char *extra) {
    fprintf(logfile, "{\"event\": \"%s\", \"pid\": %d, \"t\": %lld%s%s}\n", event, (int)getpid(), now_ms(),
            extra != NULL ? ", " : "", extra != NULL ? extra : "");
}

/* The value of "key":"value" or "key":number in a small JSON text (the push payload's call id and sentAt; the
 * payload comes from our own proxy's push script): copied into out, "" when absent or not simple. */
static void json_member(const char *json, const char *key, char *out, size_t size) {
    char pattern[64];
    out[0] = '\0';
    snprintf(pattern, sizeof pattern, "\"%s\":", key);
    const char *at = strstr(json, pattern);
    if (at == NULL) return;
    at += strlen(pattern);
    size_t n = 0;
    if (*at == '"') {
        at++;
        while (at[n] != '\0' && at[n] != '"' && at[n] != '\\' && n + 1 < size) n++;
    } else {
        while (at[n] >= '0' && at[n] <= '9' && n + 1 < size) n++;
    }
    memcpy(out, at, n);
    out[n] = '\0';
}

static int connect_ctrl(int port, pid_t child) {
    long long deadline = monotonic_ms() + 5000;
    while (monotonic_ms() < deadline) {
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
        address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (fd >= 0 && connect(fd, (struct sockaddr *)&address, sizeof address) == 0) return fd;
        if (fd >= 0) close(fd);
        if (waitpid(child, NULL, WNOHANG) == child) return -1;
        usleep(5000);
    }
    return -1;
}

/* Quits baresip over ctrl_tcp (it un-REGISTERs), waits up to 5 s, then kills it. */
static void quit_baresip(pid_t child, int ctrl) {
    static const char quit[] = "{\"command\":\"quit\",\"params\":\"\",\"token\":\"q\"}";
    char frame[128];
    int length = snprintf(frame, sizeof frame, "%zu:%s,", strlen(quit), quit);
    if (ctrl >= 0 && write(ctrl, frame, (size_t)length) != length) kill(child, SIGTERM);
    long long deadline = monotonic_ms() + 5000;
    while (waitpid(child, NULL, WNOHANG) != child) {
        if (monotonic_ms() > deadline) {
            kill(child, SIGKILL);
            waitpid(child, NULL, 0);
            break;
        }
        usleep(2000);
    }
    if (ctrl >= 0) close(ctrl);
}

/* One call's worth of state: the calls reported, baresip and its ctrl_tcp connection, the give-up time. */
struct phone {
    char calls[8][160];
    int call_count;
    pid_t child;
    int ctrl;
    long long give_up_at;
    char events[16384];
    size_t buffered;
    int finished;
};

/* Takes one message from the agent: a VoIP push is reported at once and starts baresip (once per call). */
static void take(rouse_agent *agent, rouse_event *event, struct phone *phone, char **argv) {
    const char *type = rouse_event_type(event);
    const char *push_type = rouse_event_string(event, "pushType");
    if (strcmp(type, "push") == 0 && push_type != NULL && strcmp(push_type, "voip") == 0) {
        const char *push = rouse_event_string(event, "pushID");
        char payload[4096] = "", call[128], sent[32], extra[512];
        long length = rouse_base64_decode(rouse_event_string(event, "payload") ? rouse_event_string(event, "payload") : "",
                                          (unsigned char *)payload, sizeof payload - 1);
        payload[length > 0 ? length : 0] = '\0';
        json_member(payload, "id", call, sizeof call);
        if (call[0] == '\0') snprintf(call, sizeof call, "push-%s", push != NULL ? push : "");
        if (rouse_event_is_true(event, "mustReport")) rouse_agent_report_call(agent, push, call);  // first
        if (phone->call_count < 8) snprintf(phone->calls[phone->call_count++], sizeof phone->calls[0], "%s", call);
        json_member(payload, "sentAt", sent, sizeof sent);
        snprintf(extra, sizeof extra, "\"call\": \"%s\", \"push\": \"%s\", \"sentAt\": %s, \"mustReport\": %s", call,
                 push != NULL ? push : "", sent[0] != '\0' ? sent : "null",
                 rouse_event_is_true(event, "mustReport") ? "true" : "false");
        log_event("reported", extra);
        if (phone->child < 0) {
            char *arguments[] = {argv[2], "-f", argv[3], NULL};
            posix_spawn_file_actions_t actions;
            posix_spawn_file_actions_init(&actions);
            posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
            posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
            posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
            if (posix_spawn(&phone->child, argv[2], &actions, NULL, arguments, environ) != 0) phone->child = -1;
            posix_spawn_file_actions_destroy(&actions);
            phone->ctrl = phone->child > 0 ? connect_ctrl(atoi(argv[4]), phone->child) : -1;
            snprintf(extra, sizeof extra, "\"ppid\": %d", (int)phone->child);
            log_event("baresip", extra);
            if (phone->ctrl < 0) phone->finished = 1;
        }
        phone->give_up_at = monotonic_ms() + 15000;
    } else if (strcmp(type, "registered") == 0) {
        char extra[128];
        snprintf(extra, sizeof extra, "\"launchReason\": \"%s\"",
                 rouse_event_string(event, "launchReason") ? rouse_event_string(event, "launchReason") : "");
        log_event("registered", extra);
    }
}

/* Reads baresip's ctrl_tcp events (netstrings, "LENGTH:JSON,"; only each event's type matters here). */
static void read_ctrl(struct phone *phone) {
    ssize_t n = read(phone->ctrl, phone->events + phone->buffered, sizeof phone->events - 1 - phone->buffered);
    if (n <= 0) {
        phone->finished = 1;
        return;
    }
    phone->buffered += (size_t)n;
    while (1) {
        char *colon = memchr(phone->events, ':', phone->buffered);
        if (colon == NULL) break;
        size_t header = (size_t)(colon - phone->events) + 1, length = strtoul(phone->events, NULL, 10);
        if (header > 8 || length >= sizeof phone->events) {  // not a netstring: drop what we have
            phone->buffered = 0;
            break;
        }
        if (phone->buffered < header + length + 1) break;
        char body[sizeof phone->events];
        memcpy(body, colon + 1, length);
        body[length] = '\0';
        memmove(phone->events, phone->events + header + length + 1, phone->buffered - header - length - 1);
        phone->buffered -= header + length + 1;
        static const char *const kinds[] = {"REGISTER_OK", "CALL_ESTABLISHED", "CALL_CLOSED"};
        for (size_t k = 0; k < 3; k++) {
            char needle[48];
            snprintf(needle, sizeof needle, "\"type\":\"%s\"", kinds[k]);
            if (strstr(body, needle) == NULL) continue;
            log_event(kinds[k], NULL);
            if (k > 0) phone->give_up_at = -1;
            if (k == 2) phone->finished = 1;
        }
    }
}

/* After callEnded: messages arriving within this are taken before exiting (as rouse-sip-handler.py's
 * EXIT_LINGER_SECONDS). */
#define EXIT_LINGER_MS 250

int main(int argc, char **argv) {
    if (argc != 6) {
        fprintf(stderr, "usage: %s NAME BARESIP CONFIG-DIR CTRL-PORT LOG\n", argv[0]);
        return 2;
    }
    logfile = fopen(argv[5], "a");
    if (logfile == NULL) return 1;
    setvbuf(logfile, NULL, _IOLBF, 0);
    rouse_agent *agent = rouse_agent_connect(NULL);
    if (agent == NULL || rouse_agent_register(agent, argv[1]) != 0) return 1;
    static struct phone phone;
    int closed = 0, first = 1;
    for (;;) {
        phone.call_count = 0;
        phone.child = -1;
        phone.ctrl = -1;
        phone.give_up_at = -1;
        phone.buffered = 0;
        phone.finished = 0;
        if (closed) break;
        // The first time: wait for the push. Later: a push that came while the last call was being closed is taken
        // (a new baresip) rather than left unread with the exit; one after the last look is handed again at a new
        // launch (docs/handler-protocol.md, section 15).
        if (!first) {
            rouse_event *event;
            int got;
            while ((got = rouse_agent_next(agent, &event, EXIT_LINGER_MS)) == 1) {
                take(agent, event, &phone, argv);
                rouse_event_free(event);
            }
            if (got < 0 || phone.child < 0) break;
            log_event("nextCall", NULL);
        }
        first = 0;
        while (!phone.finished) {
            struct pollfd polled[2] = {{.fd = rouse_agent_fd(agent), .events = POLLIN},
                                       {.fd = phone.ctrl, .events = POLLIN}};
            long long left = phone.give_up_at - monotonic_ms();
            int timeout = phone.give_up_at < 0 ? -1 : (int)(left > 0 ? left : 0);
            if (poll(polled, phone.ctrl >= 0 ? 2 : 1, timeout) < 0 && errno != EINTR) break;
            rouse_event *event;
            int got;
            while ((got = rouse_agent_next(agent, &event, 0)) == 1) {
                take(agent, event, &phone, argv);
                rouse_event_free(event);
            }
            if (got < 0) {  // the agent closed the connection
                closed = 1;
                break;
            }
            if (phone.ctrl >= 0 && (polled[1].revents & (POLLIN | POLLHUP | POLLERR))) read_ctrl(&phone);
            if (phone.give_up_at >= 0 && monotonic_ms() >= phone.give_up_at) {
                log_event("gaveUp", NULL);
                phone.finished = 1;
            }
        }
        if (phone.child > 0) {
            quit_baresip(phone.child, phone.ctrl);
            log_event("baresipQuit", NULL);
        }
        for (int i = 0; i < phone.call_count; i++) {
            char extra[200];
            rouse_agent_call_ended(agent, phone.calls[i]);  // only now: nothing open => frozen soon
            snprintf(extra, sizeof extra, "\"call\": \"%.159s\"", phone.calls[i]);
            log_event("callEnded", extra);
        }
    }
    rouse_agent_close(agent);
    return 0;
}
