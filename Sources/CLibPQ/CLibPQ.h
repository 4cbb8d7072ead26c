// libpq, PostgreSQL's C client (Debian: libpq-dev). Every function RousePostgres uses has a fixed signature, so
// Swift imports them directly: no shim.
#include <libpq-fe.h>
