/* rouse-handler.h: the handler side of rouse-agent's IPC protocol (version 1) for C and C++.
 *
 * The protocol is specified in docs/handler-protocol.md (installed as
 * /usr/share/doc/rouse-agent/handler-protocol.md). This library frames, sends and receives messages, passes
 * descriptors (SCM_RIGHTS) both ways and decodes each incoming message into its members; the rules (report a
 * call at once after a VoIP push, complete a background push in time) are the handler's to follow and the
 * agent's to enforce. It needs libc only. Build with $(pkg-config --cflags --libs rouse-handler).
 *
 *     rouse_agent *agent = rouse_agent_connect(NULL);   // ROUSE_AGENT_FD when launched, else the socket
 *     rouse_agent_register(agent, "phone");
 *     rouse_event *event;
 *     while (rouse_agent_next(agent, &event, -1) == 1) {
 *         if (strcmp(rouse_event_type(event), "push") == 0 && rouse_event_is_true(event, "mustReport"))
 *             rouse_agent_report_call(agent, rouse_event_string(event, "pushID"), call_id);   // at once
 *         rouse_event_free(event);
 *     }
 *
 * Every function returning int returns 0 (or the documented positive value) on success and -1 on failure,
 * with errno set and rouse_agent_error() saying what failed. One rouse_agent is used by one thread at a time.
 */
#ifndef ROUSE_HANDLER_H
#define ROUSE_HANDLER_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/** The protocol version this library speaks (the "v" member of every frame). */
#define ROUSE_PROTOCOL_VERSION 1
/** Largest frame body, in bytes. */
#define ROUSE_MAX_FRAME_BYTES 65536
/** The system agent's socket. */
#define ROUSE_DEFAULT_SOCKET "/run/rouse/agent.sock"

/** One connection to rouse-agent. */
typedef struct rouse_agent rouse_agent;
/** A message being built for sending. */
typedef struct rouse_message rouse_message;
/** A message received from the agent. */
typedef struct rouse_event rouse_event;

/** Connects: with socket_path NULL, to the inherited connection in ROUSE_AGENT_FD when the agent launched this
 *  process (made close-on-exec, so that a softphone started by the handler does not inherit it), else to
 *  ROUSE_AGENT_SOCKET or ROUSE_DEFAULT_SOCKET; otherwise to socket_path. NULL on failure (errno set). */
rouse_agent *rouse_agent_connect(const char *socket_path);
/** The connection's descriptor, for poll(): readable means rouse_agent_next(agent, &event, 0) has something. */
int rouse_agent_fd(const rouse_agent *agent);
/** What the last failing call on agent did wrong, in words ("" when nothing failed). */
const char *rouse_agent_error(const rouse_agent *agent);
/** Closes the connection and frees agent (and descriptors received that no event claimed). */
void rouse_agent_close(rouse_agent *agent);

/** A new message of type type ("reportCall"...); NULL when out of memory. */
rouse_message *rouse_message_new(const char *type);
/** Adds a string member (escaped as JSON; value must be UTF-8). */
int rouse_message_add_string(rouse_message *message, const char *key, const char *value);
/** Adds an integer member. */
int rouse_message_add_int(rouse_message *message, const char *key, long long value);
/** Adds a number member (finite). */
int rouse_message_add_number(rouse_message *message, const char *key, double value);
/** Adds a boolean member (value 0: false). */
int rouse_message_add_bool(rouse_message *message, const char *key, int value);
/** Adds an array of strings (options, headers...). */
int rouse_message_add_strings(rouse_message *message, const char *key, const char *const *values, size_t count);
/** Adds a member whose value is the JSON text json, written as given (an object such as preserve's pieces). */
int rouse_message_add_json(rouse_message *message, const char *key, const char *json);
/** Frees message. */
void rouse_message_free(rouse_message *message);

/** Sends message; request_id > 0 adds "requestID" (the answer echoes it); fd >= 0 passes that descriptor with
 *  the frame (addTransfer with "descriptor": true). */
int rouse_agent_send(rouse_agent *agent, const rouse_message *message, int request_id, int fd);

/** register: the first message on a connection. */
int rouse_agent_register(rouse_agent *agent, const char *handler);
/** reportCall for the VoIP push push_id (NULL: an outgoing call): send it as soon as the push arrives. */
int rouse_agent_report_call(rouse_agent *agent, const char *push_id, const char *call_id);
/** callEnded. */
int rouse_agent_call_ended(rouse_agent *agent, const char *call_id);
/** complete for the background push push_id; result "newData", "noData" or "failed". */
int rouse_agent_complete(rouse_agent *agent, const char *push_id, const char *result);
/** setState: "active", "inactive" or "background". */
int rouse_agent_set_state(rouse_agent *agent, const char *state);
/** activate (answered by an "activation" event carrying request_id); mode may be NULL. */
int rouse_agent_activate(rouse_agent *agent, int request_id, const char *session, const char *category,
                         const char *mode);
/** deactivate (answered by "ok" carrying request_id). */
int rouse_agent_deactivate(rouse_agent *agent, int request_id, const char *session, int notify_others);

/* Socket-woken VoIP (docs/voip-sockets.md). Each is answered by an event carrying request_id ("voipSocket" with
 * "socketID" for addVoIPSocket, "ok" for the others, or "error" with "error" and "detail"). */

/** addVoIPSocket: passes a copy of socket_fd (a connected socket: the signalling connection to the registrar);
 *  while the handler is frozen or gone the agent watches it and wakes the handler ("voipSocketWake") when data
 *  arrives. The handler keeps socket_fd and goes on using it. */
int rouse_agent_add_voip_socket(rouse_agent *agent, int request_id, int socket_fd);
/** removeVoIPSocket: the agent stops watching socket_id (the "socketID" of its "voipSocket" answer). */
int rouse_agent_remove_voip_socket(rouse_agent *agent, int request_id, long long socket_id);
/** voipWakeHandled: the data behind wake_id was not a call (OPTIONS, NOTIFY...): answers the wake instead of
 *  rouse_agent_report_call(agent, wake_id, call_id). */
int rouse_agent_voip_wake_handled(rouse_agent *agent, int request_id, const char *wake_id);
/** setKeepAlive: a "keepAlive" event at least every seconds (600 to 86400), thawed or launched for it. */
int rouse_agent_set_keep_alive(rouse_agent *agent, int request_id, double seconds);
/** clearKeepAlive. */
int rouse_agent_clear_keep_alive(rouse_agent *agent, int request_id);
/** keepAliveDone: the keep-alive keep_alive_id is done. */
int rouse_agent_keep_alive_done(rouse_agent *agent, int request_id, const char *keep_alive_id);

/* The rest of the lifecycle (docs/handler-protocol.md, "willTerminate", "timeChanged", "restorationFinished"). */

/** restorationFinished: restoration is over for this launch (after answering "restoration", or at once when none
 *  came); answered by "ok" carrying request_id. A crash before it discards the preserved state at the next launch; a
 *  crash after it keeps what was preserved. */
int rouse_agent_restoration_finished(rouse_agent *agent, int request_id);
/** 1 when event is "willTerminate" (the agent stops this handler: hang up, save, and exit within *seconds, after
 *  which it is killed), with the grace in *seconds (may be NULL); 0 for any other event. */
int rouse_event_will_terminate(const rouse_event *event, double *seconds);
/** 1 when event is "timeChanged" (the wall clock stepped and/or the time zone changed: recompute wall-clock timers),
 *  with *clock_step and *time_zone set to 0 or 1 (either may be NULL); 0 for any other event. */
int rouse_event_time_changed(const rouse_event *event, int *clock_step, int *time_zone);

/* Protected files (docs/handler-protocol.md section 10, "Protected files in the client libraries"): small files the
 * agent seals for the handler under the class it names ("none", "until-first-unlock", "complete",
 * "complete-unless-open"). Each call is answered by an event carrying request_id: "protectedFileReply" (member
 * "name"; "data", base64, for a read: decode it with rouse_base64_decode; "handle" for an open), or "error" with
 * "error" protectedDataUnavailable (the class's key is not held: session locked), notFound, badRequest or
 * tooManyOpenFiles. handle 0: the whole file; > 0: through an open complete-unless-open file, which goes on working
 * after the session locks, until rouse_agent_close_protected or the end of the connection. */

/** write: replaces name with size bytes of data, sealed under protection (NULL with a handle). */
int rouse_agent_write_protected(rouse_agent *agent, int request_id, const char *name, const void *data,
                                size_t size, const char *protection, long long handle);
/** read: the file's content, in the answer's "data". */
int rouse_agent_read_protected(rouse_agent *agent, int request_id, const char *name, long long handle);
/** reclass: seals name again under protection (both classes' keys must be held). */
int rouse_agent_reclass_protected(rouse_agent *agent, int request_id, const char *name, const char *protection);
/** remove (its open handles close). */
int rouse_agent_remove_protected(rouse_agent *agent, int request_id, const char *name);
/** open: the complete-unless-open file name (the session must be unlocked), or, create nonzero, a new empty one
 *  when missing (possible while locked); the answer's "handle" names it. */
int rouse_agent_open_protected(rouse_agent *agent, int request_id, const char *name, int create);
/** close: the agent forgets the open file's key. */
int rouse_agent_close_protected(rouse_agent *agent, int request_id, const char *name, long long handle);

/** Waits at most timeout_ms (-1: no limit) for the next message. Returns 1 and sets *event (free it with
 *  rouse_event_free), 0 when the time passed, -1 on failure: the agent closed the connection (errno
 *  ECONNRESET), or sent a malformed frame or another version (EPROTO; the connection is then unusable). */
int rouse_agent_next(rouse_agent *agent, rouse_event **event, int timeout_ms);

/** The "memoryWarning" event's type (docs/handler-protocol.md, section 13): memory is short, free caches now.
 *  Members: "trigger" (string) and "memoryBytes" (integer: the handler's own charged memory), either may be absent.
 *  If the pressure persists, suspended handlers are terminated first, then running background ones. */
#define ROUSE_EVENT_MEMORY_WARNING "memoryWarning"

/** The message's "type". */
const char *rouse_event_type(const rouse_event *event);
/** A string member, decoded; NULL when absent or not a string. */
const char *rouse_event_string(const rouse_event *event, const char *key);
/** An integer member into *value: 0, or -1 when absent or not an integer. */
int rouse_event_int(const rouse_event *event, const char *key, long long *value);
/** A number member into *value: 0, or -1 when absent or not a number. */
int rouse_event_number(const rouse_event *event, const char *key, double *value);
/** 1 when member key is true, else 0. */
int rouse_event_is_true(const rouse_event *event, const char *key);
/** Any member's JSON text as received (objects and arrays: "tasks", "pieces"); NULL when absent. */
const char *rouse_event_json(const rouse_event *event, const char *key);
/** The number of members the message has ("type" and "v" included), for generic consumers. */
int rouse_event_member_count(const rouse_event *event);
/** The name of member index (0 <= index < rouse_event_member_count), NULL outside. */
const char *rouse_event_member_name(const rouse_event *event, int index);
/** 1 when member key is a JSON string (read it with rouse_event_string), 0 otherwise. */
int rouse_event_is_string(const rouse_event *event, const char *key);
/** The "requestID" the message echoes, or -1. */
int rouse_event_request_id(const rouse_event *event);
/** The descriptor passed with this message (transferTask with "file": true, voipSocket with "returned": true: a
 *  relaunched handler's watched socket), now the caller's; -1 if none. */
int rouse_event_take_fd(rouse_event *event);
/** Frees event (closing a descriptor nobody took). */
void rouse_event_free(rouse_event *event);

/** Decodes base64 text (a push's "payload") into out (at most out_size bytes). Returns the length, or -1 when
 *  the text is not base64 or out is too small. */
long rouse_base64_decode(const char *text, unsigned char *out, size_t out_size);

#ifdef __cplusplus
}
#endif

#endif
