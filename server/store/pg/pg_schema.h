/* The PostgreSQL store's schema: numbered, append-only migrations, tracked in jobq_schema. */
#ifndef JOBQ_PG_SCHEMA_H
#define JOBQ_PG_SCHEMA_H

#include <libpq-fe.h>

/* The schema version this program writes. */
int pg_schema_version(void);

/* Bring the database on db up to date, holding an advisory lock so that several processes
 * starting at once migrate one after the other. Refuses a database whose schema is newer
 * than this program's. Returns 0, or -1 after logging why. */
int pg_schema_migrate(PGconn *db);

#endif
