// Umbrella header of the kernel-interface shim (sockets, processes, rtnetlink): what Swift cannot import
// directly, prefixed `rouse_`. It links no library beyond libc, so a target that needs only these (the
// syscall layer, the netlink binding, and through them the agent, the state store and the client library)
// does not pull libcurl, OpenSSL or nghttp2 into its executable. The curl and OpenSSL helpers are shims of
// their own (CRouseCurl, CRouseOpenSSL).
#ifndef ROUSE_SYS_SHIM_H
#define ROUSE_SYS_SHIM_H
#include "rouse_netlink.h"
#include "rouse_process.h"
#include "rouse_library.h"
#include "rouse_sys.h"
#endif
