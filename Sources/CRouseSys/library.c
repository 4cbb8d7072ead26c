#include "rouse_library.h"

#include <dlfcn.h>
#include <stdio.h>

void *rouse_library_open(const char *library, const char *package, char *error, size_t size) {
    void *handle = dlopen(library, RTLD_NOW | RTLD_LOCAL);
    if (handle == NULL) {
        const char *why = dlerror();
        snprintf(error, size, "%s (Debian package %s)", why ? why : library, package);
    }
    return handle;
}

int rouse_library_symbol(void *handle, const char *library, const char *name, void **slot, char *error, size_t size) {
    dlerror();
    *slot = dlsym(handle, name);
    if (*slot != NULL) return 0;
    const char *why = dlerror();
    snprintf(error, size, "%s has no %s: %s", library, name, why ? why : "?");
    dlclose(handle);
    return -1;
}
