#include "CRousePQ.h"

#include "rouse_library.h"
#include <pthread.h>

// libpq is loaded with dlopen on first use rather than linked. Hand-written because no library does this for libpq:
// the multi-call binary holds programs that never open a PostgreSQL connection (`rouse send`, the mock, the agent, a
// gateway on SQLite), and linking libpq made each of them load its dependency tree at start-up (about 20 shared
// libraries: Kerberos, GSSAPI, LDAP, SASL, GnuTLS…; docs/benchmarks.md, "Start-up"). The table is every libpq
// function Rouse calls; it is filled once (pthread_once) and read-only after.
static struct {
    PGconn *(*connectdb_params)(const char *const *, const char *const *, int);
    ConnStatusType (*status)(const PGconn *);
    char *(*error_message)(const PGconn *);
    void (*finish)(PGconn *);
    PGresult *(*exec)(PGconn *, const char *);
    PGresult *(*prepare)(PGconn *, const char *, const char *, int, const Oid *);
    PGresult *(*exec_prepared)(PGconn *, const char *, int, const char *const *, const int *, const int *, int);
    int (*socket)(const PGconn *);
    int (*consume_input)(PGconn *);
    PGnotify *(*notifies)(PGconn *);
    void (*freemem)(void *);
    void (*clear)(PGresult *);
    ExecStatusType (*result_status)(const PGresult *);
    char *(*result_error_message)(const PGresult *);
    char *(*result_error_field)(const PGresult *, int);
    int (*ntuples)(const PGresult *);
    char *(*cmd_tuples)(PGresult *);
    int (*getisnull)(const PGresult *, int, int);
    char *(*getvalue)(const PGresult *, int, int);
    int (*getlength)(const PGresult *, int, int);
} pq;
static pthread_once_t pq_once = PTHREAD_ONCE_INIT;
static int pq_loaded;
static char pq_load_error[512];

#define ROUSE_PQ_LIBRARY "libpq.so.5"

static void rouse_pq_resolve(void) {
    void *library = rouse_library_open(ROUSE_PQ_LIBRARY, "libpq5", pq_load_error, sizeof pq_load_error);
    if (library == NULL) return;
#define ROUSE_PQ_SYMBOL(field, name)                                                                                 \
    do {                                                                                                             \
        if (rouse_library_symbol(library, ROUSE_PQ_LIBRARY, name, (void **)&pq.field, pq_load_error,                 \
                                 sizeof pq_load_error) != 0)                                                         \
            return;                                                                                                  \
    } while (0)
    ROUSE_PQ_SYMBOL(connectdb_params, "PQconnectdbParams");
    ROUSE_PQ_SYMBOL(status, "PQstatus");
    ROUSE_PQ_SYMBOL(error_message, "PQerrorMessage");
    ROUSE_PQ_SYMBOL(finish, "PQfinish");
    ROUSE_PQ_SYMBOL(exec, "PQexec");
    ROUSE_PQ_SYMBOL(prepare, "PQprepare");
    ROUSE_PQ_SYMBOL(exec_prepared, "PQexecPrepared");
    ROUSE_PQ_SYMBOL(socket, "PQsocket");
    ROUSE_PQ_SYMBOL(consume_input, "PQconsumeInput");
    ROUSE_PQ_SYMBOL(notifies, "PQnotifies");
    ROUSE_PQ_SYMBOL(freemem, "PQfreemem");
    ROUSE_PQ_SYMBOL(clear, "PQclear");
    ROUSE_PQ_SYMBOL(result_status, "PQresultStatus");
    ROUSE_PQ_SYMBOL(result_error_message, "PQresultErrorMessage");
    ROUSE_PQ_SYMBOL(result_error_field, "PQresultErrorField");
    ROUSE_PQ_SYMBOL(ntuples, "PQntuples");
    ROUSE_PQ_SYMBOL(cmd_tuples, "PQcmdTuples");
    ROUSE_PQ_SYMBOL(getisnull, "PQgetisnull");
    ROUSE_PQ_SYMBOL(getvalue, "PQgetvalue");
    ROUSE_PQ_SYMBOL(getlength, "PQgetlength");
#undef ROUSE_PQ_SYMBOL
    pq_loaded = 1;
}

const char *rouse_pq_load(void) {
    pthread_once(&pq_once, rouse_pq_resolve);
    return pq_loaded ? NULL : pq_load_error;
}

PGconn *rouse_pq_connectdb_params(const char *const *keywords, const char *const *values, int expand_dbname) {
    return rouse_pq_load() == NULL ? pq.connectdb_params(keywords, values, expand_dbname) : NULL;
}
ConnStatusType rouse_pq_status(const PGconn *conn) { return pq.status(conn); }
char *rouse_pq_error_message(const PGconn *conn) { return pq.error_message(conn); }
void rouse_pq_finish(PGconn *conn) {
    if (conn != NULL) pq.finish(conn);
}
PGresult *rouse_pq_exec(PGconn *conn, const char *query) { return pq.exec(conn, query); }
PGresult *rouse_pq_prepare(PGconn *conn, const char *name, const char *query, int count, const Oid *types) {
    return pq.prepare(conn, name, query, count, types);
}
PGresult *rouse_pq_exec_prepared(PGconn *conn, const char *name, int count, const char *const *values,
                                 const int *lengths, const int *formats, int result_format) {
    return pq.exec_prepared(conn, name, count, values, lengths, formats, result_format);
}
int rouse_pq_socket(const PGconn *conn) { return pq.socket(conn); }
int rouse_pq_consume_input(PGconn *conn) { return pq.consume_input(conn); }
PGnotify *rouse_pq_notifies(PGconn *conn) { return pq.notifies(conn); }
void rouse_pq_freemem(void *pointer) {
    if (pointer != NULL) pq.freemem(pointer);
}
void rouse_pq_clear(PGresult *result) {
    if (result != NULL) pq.clear(result);
}
ExecStatusType rouse_pq_result_status(const PGresult *result) { return pq.result_status(result); }
char *rouse_pq_result_error_message(const PGresult *result) { return pq.result_error_message(result); }
char *rouse_pq_result_error_field(const PGresult *result, int field) { return pq.result_error_field(result, field); }
int rouse_pq_ntuples(const PGresult *result) { return pq.ntuples(result); }
char *rouse_pq_cmd_tuples(PGresult *result) { return pq.cmd_tuples(result); }
int rouse_pq_getisnull(const PGresult *result, int row, int column) { return pq.getisnull(result, row, column); }
char *rouse_pq_getvalue(const PGresult *result, int row, int column) { return pq.getvalue(result, row, column); }
int rouse_pq_getlength(const PGresult *result, int row, int column) { return pq.getlength(result, row, column); }
