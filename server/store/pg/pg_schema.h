/* The PostgreSQL store's schema: numbered, append-only migrations, tracked in jobq_schema. */
#ifndef JOBQ_PG_SCHEMA_H
#define JOBQ_PG_SCHEMA_H

#include <libpq-fe.h>

/* The schema version this program writes. */
int pg_schema_version(void);

/* Bring the database on db up to date, holding a session advisory lock so that several
 * processes starting at once migrate one after the other (a process waits for it up to an
 * hour, polling). Each migration's statements run in one short transaction whose lock waits
 * are bounded; its indexes are then built CONCURRENTLY, so writes go on meanwhile, and an
 * index a dead process left INVALID is dropped and built again. A database whose schema is
 * newer than this program's is accepted (logged) when every newer migration says older
 * programs keep working on it, else refused with a message naming the migration. db must not
 * be in a transaction; its statement_timeout is lifted during the call and reset after.
 * Returns 0, or -1 after logging why. */
int pg_schema_migrate(PGconn *db);

/* pg_schema_migrate up to version target only (a target out of 0..pg_schema_version() means
 * all of them), for tests and benchmarks that start from an older schema. A database past
 * target is left as it is (0). */
int pg_schema_migrate_to(PGconn *db, int target);

#endif
