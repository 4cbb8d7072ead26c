/* example-handler: an example rouse-agent handler in C on librouse-handler (used by the tests of the library).
 *
 * Follows the rules: reports the call of a VoIP push at once, completes a background push, ends its call once
 * the call's session was activated, asks for an ambient audio session once registered. Logs one line per
 * step to the file named by its second argument (or stderr).
 *
 *     example-handler NAME [LOG]
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rouse-handler.h"

static const char *or_empty(const char *text) { return text != NULL ? text : ""; }

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
    char call[128] = "";
    rouse_event *event;
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
            fprintf(log, "registered handler=%s launchReason=%s\n", or_empty(rouse_event_string(event, "handler")),
                    or_empty(rouse_event_string(event, "launchReason")));
            rouse_agent_activate(agent, 1, "chime", "ambient", NULL);
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
        } else if (strcmp(type, "credentials") == 0) {
            fprintf(log, "credentials topic=%s\n", or_empty(rouse_event_string(event, "topic")));
        } else if (strcmp(type, "error") == 0) {
            fprintf(log, "error %s %s\n", or_empty(rouse_event_string(event, "error")),
                    or_empty(rouse_event_string(event, "detail")));
        } else {
            fprintf(log, "event %s\n", type);
        }
        rouse_event_free(event);
    }
    fprintf(log, "closed: %s\n", rouse_agent_error(agent));
    rouse_agent_close(agent);
    return 0;
}
