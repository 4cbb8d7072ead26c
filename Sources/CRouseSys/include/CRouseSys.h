// Umbrella header of the kernel-interface shim (sockets, processes, rtnetlink): what Swift cannot import
// directly, prefixed `rouse_`. It links no library beyond libc, so a target that needs only these (the
// netlink binding, the syscall layer) does not pull libcurl, OpenSSL or nghttp2 into its executable.
#ifndef ROUSE_SYS_SHIM_H
#define ROUSE_SYS_SHIM_H
#include "rouse_netlink.h"
#include "rouse_sys.h"
#endif
