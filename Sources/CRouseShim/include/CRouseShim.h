// Umbrella header of the C shim: only what Swift cannot import directly
// (variadic functions, function-like macros). Every symbol is prefixed `rouse_`. The kernel-interface part
// (syscalls, rtnetlink) is its own target, CRouseSys, re-exported here.
#ifndef ROUSE_SHIM_H
#define ROUSE_SHIM_H
#include "rouse_curl.h"
#include "rouse_openssl.h"
#include <CRouseSys.h>
#include "rouse_agent.h"
#endif
