// Loading a C library on first use, for the shims that do (CRouseCurl, CRousePQ, CRouseSystemd): each keeps its own
// table of typed function pointers, filled once under pthread_once through these two calls.
#ifndef ROUSE_LIBRARY_H
#define ROUSE_LIBRARY_H
#include <stddef.h>

/// dlopen(library, RTLD_NOW | RTLD_LOCAL): RTLD_LOCAL keeps its symbols out of the global scope, RTLD_NOW makes a
/// missing dependency fail here, not mid-call. NULL when it cannot be loaded, `error` then holding dlerror's text
/// and the Debian package to install.
void *rouse_library_open(const char *library, const char *package, char *error, size_t size);
/// dlsym(handle, name) into *slot; 0, or -1 with `error` naming the function the library lacks and the handle
/// closed (nothing of it is used then).
int rouse_library_symbol(void *handle, const char *library, const char *name, void **slot, char *error, size_t size);
#endif
