/* protected-files: the protected-file calls of librouse-handler against a running rouse-agent (HandlerLibraryTests).
 * Usage: protected-files SOCKET HANDLER. Registers as HANDLER, then writes, reads, re-classes, opens (a
 * complete-unless-open file, through its handle), closes and removes protected files, printing one line per answer
 * (the Python twin, clients/python/tests/protected_files.py, prints the same lines). Exit status 0 when every
 * answer came. */
#include "rouse-handler.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static rouse_agent *agent;
static int next_id = 1;

/* The answer to request id (other events skipped); NULL after printing why when none came. */
static rouse_event *answer(int id) {
    rouse_event *event;
    while (rouse_agent_next(agent, &event, 10000) == 1) {
        if (rouse_event_request_id(event) == id) return event;
        rouse_event_free(event);
    }
    printf("no answer to request %d: %s\n", id, rouse_agent_error(agent));
    exit(1);
}

/* Prints the answer as "<what> ok", "<what> data=<text>", "<what> handle" or "<what> error=<code>"; returns the
 * handle of an open (0 otherwise). */
static long long show(const char *what, int id) {
    rouse_event *event = answer(id);
    long long handle = 0;
    if (strcmp(rouse_event_type(event), "error") == 0) {
        printf("%s error=%s\n", what, rouse_event_string(event, "error"));
    } else if (rouse_event_string(event, "data") != NULL) {
        unsigned char data[256];
        long size = rouse_base64_decode(rouse_event_string(event, "data"), data, sizeof data);
        printf("%s data=%.*s\n", what, (int)(size < 0 ? 0 : size), (const char *)data);
    } else if (rouse_event_int(event, "handle", &handle) == 0 && strcmp(what, "open") == 0) {
        printf("%s handle\n", what);
    } else {
        printf("%s ok\n", what);
    }
    rouse_event_free(event);
    return handle;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: protected-files SOCKET HANDLER\n");
        return 2;
    }
    agent = rouse_agent_connect(argv[1]);
    if (agent == NULL || rouse_agent_register(agent, argv[2]) != 0) {
        printf("connect: %s\n", agent == NULL ? "failed" : rouse_agent_error(agent));
        return 1;
    }
    int id;
    rouse_agent_write_protected(agent, id = next_id++, "notes", "hello", 5, "complete", 0);
    show("write", id);
    rouse_agent_read_protected(agent, id = next_id++, "notes", 0);
    show("read", id);
    rouse_agent_reclass_protected(agent, id = next_id++, "notes", "none");
    show("reclass", id);
    rouse_agent_write_protected(agent, id = next_id++, "x", "1", 1, "secret", 0);
    show("write-bad-class", id);
    rouse_agent_open_protected(agent, id = next_id++, "recording", 1);
    long long handle = show("open", id);
    rouse_agent_write_protected(agent, id = next_id++, "recording", "part 1", 6, NULL, handle);
    show("write-open", id);
    rouse_agent_read_protected(agent, id = next_id++, "recording", handle);
    show("read-open", id);
    rouse_agent_close_protected(agent, id = next_id++, "recording", handle);
    show("close", id);
    rouse_agent_read_protected(agent, id = next_id++, "recording", handle);
    show("read-closed", id);
    rouse_agent_remove_protected(agent, id = next_id++, "notes");
    show("remove", id);
    rouse_agent_read_protected(agent, id = next_id++, "notes", 0);
    show("read-removed", id);
    rouse_agent_close(agent);
    return 0;
}
