// sd-bus from libsystemd (the D-Bus binding RouseDBus is built on; see docs/architecture.md, "D-Bus").
#include <systemd/sd-bus.h>
#include <poll.h>
