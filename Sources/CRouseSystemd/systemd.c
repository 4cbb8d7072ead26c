#include "CRouseSystemd.h"

#include "rouse_library.h"
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>

// libsystemd is loaded with dlopen on first use rather than linked. Hand-written because no library does this for
// sd-bus: the multi-call binary holds programs that never open a D-Bus connection (`rouse send`, the mock, the
// gateway, rouse-pushd), and linking libsystemd made each of them load it and its dependencies (libcap, libgcrypt,
// lz4, xz, zstd) at start-up (docs/benchmarks.md, "Start-up"). The table is every sd-bus function Rouse calls;
// it is filled once (pthread_once), then `loaded` is set with release order and read with acquire order, so a
// wrapper reached before or without a load fails instead of calling through a null pointer.
static struct {
    int (*bus_add_object)(sd_bus *bus, sd_bus_slot **slot, const char *path, sd_bus_message_handler_t callback,
         void *userdata);
    int (*bus_call_async)(sd_bus *bus, sd_bus_slot **slot, sd_bus_message *m, sd_bus_message_handler_t callback,
         void *userdata, uint64_t usec);
    sd_bus* (*bus_close_unref)(sd_bus *bus);
    void (*bus_error_free)(sd_bus_error *e);
    int (*bus_error_set)(sd_bus_error *e, const char *name, const char *message);
    int (*bus_get_events)(sd_bus *bus);
    int (*bus_get_fd)(sd_bus *bus);
    int (*bus_get_timeout)(sd_bus *bus, uint64_t *timeout_usec);
    int (*bus_get_unique_name)(sd_bus *bus, const char **unique);
    int (*bus_match_signal_async)(sd_bus *bus, sd_bus_slot **ret, const char *sender, const char *path,
         const char *interface, const char *member, sd_bus_message_handler_t match_callback,
         sd_bus_message_handler_t add_callback, void *userdata);
    int (*bus_message_append_basic)(sd_bus_message *m, char type, const void *p);
    int (*bus_message_close_container)(sd_bus_message *m);
    int (*bus_message_enter_container)(sd_bus_message *m, char type, const char *contents);
    int (*bus_message_exit_container)(sd_bus_message *m);
    const sd_bus_error* (*bus_message_get_error)(sd_bus_message *m);
    int (*bus_message_get_expect_reply)(sd_bus_message *m);
    const char* (*bus_message_get_interface)(sd_bus_message *m);
    const char* (*bus_message_get_member)(sd_bus_message *m);
    const char* (*bus_message_get_path)(sd_bus_message *m);
    const char* (*bus_message_get_sender)(sd_bus_message *m);
    int (*bus_message_get_type)(sd_bus_message *m, uint8_t *type);
    int (*bus_message_is_method_error)(sd_bus_message *m, const char *name);
    int (*bus_message_new_method_call)(sd_bus *bus, sd_bus_message **m, const char *destination, const char *path,
         const char *interface, const char *member);
    int (*bus_message_new_method_return)(sd_bus_message *call, sd_bus_message **m);
    int (*bus_message_new_signal)(sd_bus *bus, sd_bus_message **m, const char *path, const char *interface,
         const char *member);
    int (*bus_message_open_container)(sd_bus_message *m, char type, const char *contents);
    int (*bus_message_peek_type)(sd_bus_message *m, char *type, const char **contents);
    int (*bus_message_read_basic)(sd_bus_message *m, char type, void *p);
    sd_bus_message* (*bus_message_ref)(sd_bus_message *m);
    int (*bus_message_set_auto_start)(sd_bus_message *m, int b);
    int (*bus_message_set_expect_reply)(sd_bus_message *m, int b);
    sd_bus_message* (*bus_message_unref)(sd_bus_message *m);
    int (*bus_new)(sd_bus **ret);
    int (*bus_open_system)(sd_bus **ret);
    int (*bus_open_user)(sd_bus **ret);
    int (*bus_process)(sd_bus *bus, sd_bus_message **r);
    int (*bus_reply_method_error)(sd_bus_message *call, const sd_bus_error *e);
    int (*bus_send)(sd_bus *bus, sd_bus_message *m, uint64_t *cookie);
    int (*bus_set_address)(sd_bus *bus, const char *address);
    int (*bus_set_bus_client)(sd_bus *bus, int b);
    sd_bus_slot* (*bus_slot_unref)(sd_bus_slot *slot);
    int (*bus_start)(sd_bus *bus);
} sd;
static pthread_once_t sd_once = PTHREAD_ONCE_INIT;
static atomic_int sd_loaded;
static char sd_load_error[512];

#define ROUSE_SD_LIBRARY "libsystemd.so.0"

static void rouse_sd_resolve(void) {
    void *library = rouse_library_open(ROUSE_SD_LIBRARY, "libsystemd0", sd_load_error, sizeof sd_load_error);
    if (library == NULL) return;
#define ROUSE_SD_SYMBOL(field, name)                                                                                 \
    do {                                                                                                             \
        if (rouse_library_symbol(library, ROUSE_SD_LIBRARY, name, (void **)&sd.field, sd_load_error,                 \
                                 sizeof sd_load_error) != 0)                                                         \
            return;                                                                                                  \
    } while (0)
    ROUSE_SD_SYMBOL(bus_add_object, "sd_bus_add_object");
    ROUSE_SD_SYMBOL(bus_call_async, "sd_bus_call_async");
    ROUSE_SD_SYMBOL(bus_close_unref, "sd_bus_close_unref");
    ROUSE_SD_SYMBOL(bus_error_free, "sd_bus_error_free");
    ROUSE_SD_SYMBOL(bus_error_set, "sd_bus_error_set");
    ROUSE_SD_SYMBOL(bus_get_events, "sd_bus_get_events");
    ROUSE_SD_SYMBOL(bus_get_fd, "sd_bus_get_fd");
    ROUSE_SD_SYMBOL(bus_get_timeout, "sd_bus_get_timeout");
    ROUSE_SD_SYMBOL(bus_get_unique_name, "sd_bus_get_unique_name");
    ROUSE_SD_SYMBOL(bus_match_signal_async, "sd_bus_match_signal_async");
    ROUSE_SD_SYMBOL(bus_message_append_basic, "sd_bus_message_append_basic");
    ROUSE_SD_SYMBOL(bus_message_close_container, "sd_bus_message_close_container");
    ROUSE_SD_SYMBOL(bus_message_enter_container, "sd_bus_message_enter_container");
    ROUSE_SD_SYMBOL(bus_message_exit_container, "sd_bus_message_exit_container");
    ROUSE_SD_SYMBOL(bus_message_get_error, "sd_bus_message_get_error");
    ROUSE_SD_SYMBOL(bus_message_get_expect_reply, "sd_bus_message_get_expect_reply");
    ROUSE_SD_SYMBOL(bus_message_get_interface, "sd_bus_message_get_interface");
    ROUSE_SD_SYMBOL(bus_message_get_member, "sd_bus_message_get_member");
    ROUSE_SD_SYMBOL(bus_message_get_path, "sd_bus_message_get_path");
    ROUSE_SD_SYMBOL(bus_message_get_sender, "sd_bus_message_get_sender");
    ROUSE_SD_SYMBOL(bus_message_get_type, "sd_bus_message_get_type");
    ROUSE_SD_SYMBOL(bus_message_is_method_error, "sd_bus_message_is_method_error");
    ROUSE_SD_SYMBOL(bus_message_new_method_call, "sd_bus_message_new_method_call");
    ROUSE_SD_SYMBOL(bus_message_new_method_return, "sd_bus_message_new_method_return");
    ROUSE_SD_SYMBOL(bus_message_new_signal, "sd_bus_message_new_signal");
    ROUSE_SD_SYMBOL(bus_message_open_container, "sd_bus_message_open_container");
    ROUSE_SD_SYMBOL(bus_message_peek_type, "sd_bus_message_peek_type");
    ROUSE_SD_SYMBOL(bus_message_read_basic, "sd_bus_message_read_basic");
    ROUSE_SD_SYMBOL(bus_message_ref, "sd_bus_message_ref");
    ROUSE_SD_SYMBOL(bus_message_set_auto_start, "sd_bus_message_set_auto_start");
    ROUSE_SD_SYMBOL(bus_message_set_expect_reply, "sd_bus_message_set_expect_reply");
    ROUSE_SD_SYMBOL(bus_message_unref, "sd_bus_message_unref");
    ROUSE_SD_SYMBOL(bus_new, "sd_bus_new");
    ROUSE_SD_SYMBOL(bus_open_system, "sd_bus_open_system");
    ROUSE_SD_SYMBOL(bus_open_user, "sd_bus_open_user");
    ROUSE_SD_SYMBOL(bus_process, "sd_bus_process");
    ROUSE_SD_SYMBOL(bus_reply_method_error, "sd_bus_reply_method_error");
    ROUSE_SD_SYMBOL(bus_send, "sd_bus_send");
    ROUSE_SD_SYMBOL(bus_set_address, "sd_bus_set_address");
    ROUSE_SD_SYMBOL(bus_set_bus_client, "sd_bus_set_bus_client");
    ROUSE_SD_SYMBOL(bus_slot_unref, "sd_bus_slot_unref");
    ROUSE_SD_SYMBOL(bus_start, "sd_bus_start");
#undef ROUSE_SD_SYMBOL
    atomic_store_explicit(&sd_loaded, 1, memory_order_release);
}

const char *rouse_sd_load(void) {
    pthread_once(&sd_once, rouse_sd_resolve);
    return atomic_load_explicit(&sd_loaded, memory_order_acquire) ? NULL : sd_load_error;
}

static int rouse_sd_ready(void) {
    return atomic_load_explicit(&sd_loaded, memory_order_acquire);
}

int rouse_sd_bus_add_object(sd_bus *bus, sd_bus_slot **slot, const char *path, sd_bus_message_handler_t callback,
                            void *userdata) {
    return rouse_sd_ready() ? sd.bus_add_object(bus, slot, path, callback, userdata) : -ENOSYS;
}
int rouse_sd_bus_call_async(sd_bus *bus, sd_bus_slot **slot, sd_bus_message *m, sd_bus_message_handler_t callback,
                            void *userdata, uint64_t usec) {
    return rouse_sd_ready() ? sd.bus_call_async(bus, slot, m, callback, userdata, usec) : -ENOSYS;
}
sd_bus* rouse_sd_bus_close_unref(sd_bus *bus) {
    return rouse_sd_ready() ? sd.bus_close_unref(bus) : NULL;
}
void rouse_sd_bus_error_free(sd_bus_error *e) {
    if (rouse_sd_ready()) sd.bus_error_free(e);
}
int rouse_sd_bus_error_set(sd_bus_error *e, const char *name, const char *message) {
    return rouse_sd_ready() ? sd.bus_error_set(e, name, message) : -ENOSYS;
}
int rouse_sd_bus_get_events(sd_bus *bus) {
    return rouse_sd_ready() ? sd.bus_get_events(bus) : -ENOSYS;
}
int rouse_sd_bus_get_fd(sd_bus *bus) {
    return rouse_sd_ready() ? sd.bus_get_fd(bus) : -ENOSYS;
}
int rouse_sd_bus_get_timeout(sd_bus *bus, uint64_t *timeout_usec) {
    return rouse_sd_ready() ? sd.bus_get_timeout(bus, timeout_usec) : -ENOSYS;
}
int rouse_sd_bus_get_unique_name(sd_bus *bus, const char **unique) {
    return rouse_sd_ready() ? sd.bus_get_unique_name(bus, unique) : -ENOSYS;
}
int rouse_sd_bus_match_signal_async(sd_bus *bus, sd_bus_slot **ret, const char *sender, const char *path,
                                    const char *interface, const char *member, sd_bus_message_handler_t match_callback,
                                    sd_bus_message_handler_t add_callback, void *userdata) {
    return rouse_sd_ready() ? sd.bus_match_signal_async(bus, ret, sender, path, interface, member, match_callback,
                          add_callback, userdata) : -ENOSYS;
}
int rouse_sd_bus_message_append_basic(sd_bus_message *m, char type, const void *p) {
    return rouse_sd_ready() ? sd.bus_message_append_basic(m, type, p) : -ENOSYS;
}
int rouse_sd_bus_message_close_container(sd_bus_message *m) {
    return rouse_sd_ready() ? sd.bus_message_close_container(m) : -ENOSYS;
}
int rouse_sd_bus_message_enter_container(sd_bus_message *m, char type, const char *contents) {
    return rouse_sd_ready() ? sd.bus_message_enter_container(m, type, contents) : -ENOSYS;
}
int rouse_sd_bus_message_exit_container(sd_bus_message *m) {
    return rouse_sd_ready() ? sd.bus_message_exit_container(m) : -ENOSYS;
}
const sd_bus_error* rouse_sd_bus_message_get_error(sd_bus_message *m) {
    return rouse_sd_ready() ? sd.bus_message_get_error(m) : NULL;
}
int rouse_sd_bus_message_get_expect_reply(sd_bus_message *m) {
    return rouse_sd_ready() ? sd.bus_message_get_expect_reply(m) : -ENOSYS;
}
const char* rouse_sd_bus_message_get_interface(sd_bus_message *m) {
    return rouse_sd_ready() ? sd.bus_message_get_interface(m) : NULL;
}
const char* rouse_sd_bus_message_get_member(sd_bus_message *m) {
    return rouse_sd_ready() ? sd.bus_message_get_member(m) : NULL;
}
const char* rouse_sd_bus_message_get_path(sd_bus_message *m) {
    return rouse_sd_ready() ? sd.bus_message_get_path(m) : NULL;
}
const char* rouse_sd_bus_message_get_sender(sd_bus_message *m) {
    return rouse_sd_ready() ? sd.bus_message_get_sender(m) : NULL;
}
int rouse_sd_bus_message_get_type(sd_bus_message *m, uint8_t *type) {
    return rouse_sd_ready() ? sd.bus_message_get_type(m, type) : -ENOSYS;
}
int rouse_sd_bus_message_is_method_error(sd_bus_message *m, const char *name) {
    return rouse_sd_ready() ? sd.bus_message_is_method_error(m, name) : -ENOSYS;
}
int rouse_sd_bus_message_new_method_call(sd_bus *bus, sd_bus_message **m, const char *destination, const char *path,
                                         const char *interface, const char *member) {
    return rouse_sd_ready() ? sd.bus_message_new_method_call(bus, m, destination, path, interface, member) : -ENOSYS;
}
int rouse_sd_bus_message_new_method_return(sd_bus_message *call, sd_bus_message **m) {
    return rouse_sd_ready() ? sd.bus_message_new_method_return(call, m) : -ENOSYS;
}
int rouse_sd_bus_message_new_signal(sd_bus *bus, sd_bus_message **m, const char *path, const char *interface,
                                    const char *member) {
    return rouse_sd_ready() ? sd.bus_message_new_signal(bus, m, path, interface, member) : -ENOSYS;
}
int rouse_sd_bus_message_open_container(sd_bus_message *m, char type, const char *contents) {
    return rouse_sd_ready() ? sd.bus_message_open_container(m, type, contents) : -ENOSYS;
}
int rouse_sd_bus_message_peek_type(sd_bus_message *m, char *type, const char **contents) {
    return rouse_sd_ready() ? sd.bus_message_peek_type(m, type, contents) : -ENOSYS;
}
int rouse_sd_bus_message_read_basic(sd_bus_message *m, char type, void *p) {
    return rouse_sd_ready() ? sd.bus_message_read_basic(m, type, p) : -ENOSYS;
}
sd_bus_message* rouse_sd_bus_message_ref(sd_bus_message *m) {
    return rouse_sd_ready() ? sd.bus_message_ref(m) : NULL;
}
int rouse_sd_bus_message_set_auto_start(sd_bus_message *m, int b) {
    return rouse_sd_ready() ? sd.bus_message_set_auto_start(m, b) : -ENOSYS;
}
int rouse_sd_bus_message_set_expect_reply(sd_bus_message *m, int b) {
    return rouse_sd_ready() ? sd.bus_message_set_expect_reply(m, b) : -ENOSYS;
}
sd_bus_message* rouse_sd_bus_message_unref(sd_bus_message *m) {
    return rouse_sd_ready() ? sd.bus_message_unref(m) : NULL;
}
int rouse_sd_bus_new(sd_bus **ret) {
    return rouse_sd_load() == NULL ? sd.bus_new(ret) : -ENOSYS;
}
int rouse_sd_bus_open_system(sd_bus **ret) {
    return rouse_sd_load() == NULL ? sd.bus_open_system(ret) : -ENOSYS;
}
int rouse_sd_bus_open_user(sd_bus **ret) {
    return rouse_sd_load() == NULL ? sd.bus_open_user(ret) : -ENOSYS;
}
int rouse_sd_bus_process(sd_bus *bus, sd_bus_message **r) {
    return rouse_sd_ready() ? sd.bus_process(bus, r) : -ENOSYS;
}
int rouse_sd_bus_reply_method_error(sd_bus_message *call, const sd_bus_error *e) {
    return rouse_sd_ready() ? sd.bus_reply_method_error(call, e) : -ENOSYS;
}
int rouse_sd_bus_send(sd_bus *bus, sd_bus_message *m, uint64_t *cookie) {
    return rouse_sd_ready() ? sd.bus_send(bus, m, cookie) : -ENOSYS;
}
int rouse_sd_bus_set_address(sd_bus *bus, const char *address) {
    return rouse_sd_ready() ? sd.bus_set_address(bus, address) : -ENOSYS;
}
int rouse_sd_bus_set_bus_client(sd_bus *bus, int b) {
    return rouse_sd_ready() ? sd.bus_set_bus_client(bus, b) : -ENOSYS;
}
sd_bus_slot* rouse_sd_bus_slot_unref(sd_bus_slot *slot) {
    return rouse_sd_ready() ? sd.bus_slot_unref(slot) : NULL;
}
int rouse_sd_bus_start(sd_bus *bus) {
    return rouse_sd_ready() ? sd.bus_start(bus) : -ENOSYS;
}
