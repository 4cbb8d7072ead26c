// The sd-bus binding's shim: libsystemd loaded with dlopen on first use (rouse_sd_load), and every sd-bus call
// Rouse makes (RouseDBus), as a function of this file named rouse_<sd-bus name>. Only the agent's D-Bus
// integration calls them: the programs that never open a bus do not load libsystemd or its dependencies.
#ifndef ROUSE_SYSTEMD_SHIM_H
#define ROUSE_SYSTEMD_SHIM_H
#include <systemd/sd-bus.h>

/// Loads libsystemd (libsystemd.so.0) and resolves the functions below, once per process; NULL when done, else why
/// not (dlerror's text). Before a successful load every function below fails: -ENOSYS, NULL or nothing (so an
/// error or message freed on a path that never opened a bus is a no-op).
const char *rouse_sd_load(void);
int rouse_sd_bus_add_object(sd_bus *bus, sd_bus_slot **slot, const char *path, sd_bus_message_handler_t callback,
                            void *userdata);
int rouse_sd_bus_call_async(sd_bus *bus, sd_bus_slot **slot, sd_bus_message *m, sd_bus_message_handler_t callback,
                            void *userdata, uint64_t usec);
sd_bus* rouse_sd_bus_close_unref(sd_bus *bus);
void rouse_sd_bus_error_free(sd_bus_error *e);
int rouse_sd_bus_error_set(sd_bus_error *e, const char *name, const char *message);
int rouse_sd_bus_get_events(sd_bus *bus);
int rouse_sd_bus_get_fd(sd_bus *bus);
int rouse_sd_bus_get_timeout(sd_bus *bus, uint64_t *timeout_usec);
int rouse_sd_bus_get_unique_name(sd_bus *bus, const char **unique);
int rouse_sd_bus_match_signal_async(sd_bus *bus, sd_bus_slot **ret, const char *sender, const char *path,
                                    const char *interface, const char *member, sd_bus_message_handler_t match_callback,
                                    sd_bus_message_handler_t add_callback, void *userdata);
int rouse_sd_bus_message_append_basic(sd_bus_message *m, char type, const void *p);
int rouse_sd_bus_message_close_container(sd_bus_message *m);
int rouse_sd_bus_message_enter_container(sd_bus_message *m, char type, const char *contents);
int rouse_sd_bus_message_exit_container(sd_bus_message *m);
const sd_bus_error* rouse_sd_bus_message_get_error(sd_bus_message *m);
int rouse_sd_bus_message_get_expect_reply(sd_bus_message *m);
const char* rouse_sd_bus_message_get_interface(sd_bus_message *m);
const char* rouse_sd_bus_message_get_member(sd_bus_message *m);
const char* rouse_sd_bus_message_get_path(sd_bus_message *m);
const char* rouse_sd_bus_message_get_sender(sd_bus_message *m);
int rouse_sd_bus_message_get_type(sd_bus_message *m, uint8_t *type);
int rouse_sd_bus_message_is_method_error(sd_bus_message *m, const char *name);
int rouse_sd_bus_message_new_method_call(sd_bus *bus, sd_bus_message **m, const char *destination, const char *path,
                                         const char *interface, const char *member);
int rouse_sd_bus_message_new_method_return(sd_bus_message *call, sd_bus_message **m);
int rouse_sd_bus_message_new_signal(sd_bus *bus, sd_bus_message **m, const char *path, const char *interface,
                                    const char *member);
int rouse_sd_bus_message_open_container(sd_bus_message *m, char type, const char *contents);
int rouse_sd_bus_message_peek_type(sd_bus_message *m, char *type, const char **contents);
int rouse_sd_bus_message_read_basic(sd_bus_message *m, char type, void *p);
sd_bus_message* rouse_sd_bus_message_ref(sd_bus_message *m);
int rouse_sd_bus_message_set_auto_start(sd_bus_message *m, int b);
int rouse_sd_bus_message_set_expect_reply(sd_bus_message *m, int b);
sd_bus_message* rouse_sd_bus_message_unref(sd_bus_message *m);
int rouse_sd_bus_new(sd_bus **ret);
int rouse_sd_bus_open_system(sd_bus **ret);
int rouse_sd_bus_open_user(sd_bus **ret);
int rouse_sd_bus_process(sd_bus *bus, sd_bus_message **r);
int rouse_sd_bus_reply_method_error(sd_bus_message *call, const sd_bus_error *e);
int rouse_sd_bus_send(sd_bus *bus, sd_bus_message *m, uint64_t *cookie);
int rouse_sd_bus_set_address(sd_bus *bus, const char *address);
int rouse_sd_bus_set_bus_client(sd_bus *bus, int b);
sd_bus_slot* rouse_sd_bus_slot_unref(sd_bus_slot *slot);
int rouse_sd_bus_start(sd_bus *bus);
#endif
