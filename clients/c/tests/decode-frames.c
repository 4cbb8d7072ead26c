/* decode-frames: reads frame bodies (one JSON object per line) on stdin, passes each through a socketpair to
 * librouse-handler as the agent would, and prints what the library decoded as one JSON object per line (member
 * names with their decoded strings, or their JSON text). Used by HandlerLibraryTests to check that the library
 * reads every example of docs/handler-protocol.md as written; a line it refuses prints {"refused": "..."}. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "rouse-handler.h"

static void print_string(const char *text) {
    putchar('"');
    for (const unsigned char *c = (const unsigned char *)text; *c != '\0'; c++) {
        if (*c == '"' || *c == '\\') printf("\\%c", *c);
        else if (*c < 0x20) printf("\\u%04x", *c);
        else putchar(*c);
    }
    putchar('"');
}

int main(void) {
    char *line = NULL;
    size_t capacity = 0;
    ssize_t length;
    while ((length = getline(&line, &capacity, stdin)) > 0) {
        if (line[length - 1] == '\n') line[--length] = '\0';
        if (length == 0) continue;
        int pair[2];
        if (socketpair(AF_UNIX, SOCK_STREAM, 0, pair) != 0) return 1;
        unsigned char prefix[4] = {(unsigned char)(length >> 24), (unsigned char)(length >> 16),
                                   (unsigned char)(length >> 8), (unsigned char)length};
        if (write(pair[1], prefix, 4) != 4 || write(pair[1], line, (size_t)length) != length) return 1;
        char fd[16];
        snprintf(fd, sizeof fd, "%d", pair[0]);
        setenv("ROUSE_AGENT_FD", fd, 1);
        rouse_agent *agent = rouse_agent_connect(NULL);
        if (agent == NULL) return 1;
        rouse_event *event;
        if (rouse_agent_next(agent, &event, 1000) != 1) {
            printf("{\"refused\":");
            print_string(rouse_agent_error(agent));
            printf("}\n");
        } else {
            putchar('{');
            for (int i = 0; i < rouse_event_member_count(event); i++) {
                const char *name = rouse_event_member_name(event, i);
                if (i > 0) putchar(',');
                print_string(name);
                putchar(':');
                if (rouse_event_is_string(event, name)) print_string(rouse_event_string(event, name));
                else fputs(rouse_event_json(event, name), stdout);
            }
            printf("}\n");
            rouse_event_free(event);
        }
        rouse_agent_close(agent);
        close(pair[1]);
    }
    free(line);
    return 0;
}
