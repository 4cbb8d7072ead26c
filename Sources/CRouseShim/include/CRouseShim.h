// Umbrella header of the C shim: only what Swift cannot import directly
// (variadic functions, function-like macros). Every symbol is prefixed `rouse_`.
#ifndef ROUSE_SHIM_H
#define ROUSE_SHIM_H
#include "rouse_curl.h"
#include "rouse_openssl.h"
#include "rouse_netlink.h"
#include "rouse_sys.h"
#include "rouse_agent.h"
#endif
