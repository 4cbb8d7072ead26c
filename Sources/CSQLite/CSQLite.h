// SQLite's C API (Debian: libsqlite3-dev), for the gateway's one-node store through RouseSQLite. Every function
// used has a fixed signature, so Swift imports them directly: no shim. (SQLITE_TRANSIENT is a macro Swift cannot
// import; RouseSQLite spells it out.)
#include <sqlite3.h>
