// The libpq binding's shim: libpq loaded with dlopen on first use (rouse_pq_load), and every libpq call Rouse makes,
// as a function of this file. Only the gateway's PostgreSQL store calls them: the programs and stores that never
// open a PostgreSQL connection do not load libpq or its dependencies (Kerberos, LDAP, SASL, GnuTLS…).
#ifndef ROUSE_PQ_SHIM_H
#define ROUSE_PQ_SHIM_H
#include <postgresql/libpq-fe.h> // libpq-dev; its own includes are relative to it, so no -I is needed

/// Loads libpq (libpq.so.5) and resolves the functions below, once per process; NULL when done, else why not
/// (dlerror's text). Every other function here requires it to have succeeded, except rouse_pq_connectdb_params
/// (NULL when it has not) and rouse_pq_finish/rouse_pq_clear/rouse_pq_freemem on NULL.
const char *rouse_pq_load(void);
PGconn *rouse_pq_connectdb_params(const char *const *keywords, const char *const *values, int expand_dbname);
ConnStatusType rouse_pq_status(const PGconn *conn);
char *rouse_pq_error_message(const PGconn *conn);
void rouse_pq_finish(PGconn *conn);
PGresult *rouse_pq_exec(PGconn *conn, const char *query);
PGresult *rouse_pq_prepare(PGconn *conn, const char *name, const char *query, int count, const Oid *types);
PGresult *rouse_pq_exec_prepared(PGconn *conn, const char *name, int count, const char *const *values,
                                 const int *lengths, const int *formats, int result_format);
int rouse_pq_socket(const PGconn *conn);
int rouse_pq_consume_input(PGconn *conn);
PGnotify *rouse_pq_notifies(PGconn *conn);
void rouse_pq_freemem(void *pointer);
void rouse_pq_clear(PGresult *result);
ExecStatusType rouse_pq_result_status(const PGresult *result);
char *rouse_pq_result_error_message(const PGresult *result);
char *rouse_pq_result_error_field(const PGresult *result, int field);
int rouse_pq_ntuples(const PGresult *result);
char *rouse_pq_cmd_tuples(PGresult *result);
int rouse_pq_getisnull(const PGresult *result, int row, int column);
char *rouse_pq_getvalue(const PGresult *result, int row, int column);
int rouse_pq_getlength(const PGresult *result, int row, int column);
#endif
