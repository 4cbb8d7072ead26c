// sd-bus's headers from libsystemd-dev (the D-Bus binding RouseDBus is built on; see docs/architecture.md, "D-Bus").
// Headers only: CRouseSystemd loads the library with dlopen.
#include <systemd/sd-bus.h>
#include <poll.h>
