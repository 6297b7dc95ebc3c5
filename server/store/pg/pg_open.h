/* The PostgreSQL backend's entry points, for store_open() (store.c) and store_migrate()
 * (store_migrate.c) alone. */
#ifndef JOBQ_PG_OPEN_H
#define JOBQ_PG_OPEN_H

#include "store.h"
#include "store_copy.h"

/* Open the PostgreSQL store at opts->url (any libpq connection URI, multi-host included):
 * connect, bring the schema up to date under a lock (several processes may start at once),
 * open the pool and the listener. Returns the store, or NULL after logging one line that
 * says why (never the password). */
struct store *pg_store_open(const struct store_options *opts);

/* Open the PostgreSQL database at url as the target of a copy (store_copy.h), for
 * store_migrate() alone: one connection, and the schema brought up to date exactly as
 * pg_store_open does it. Returns the target, or NULL with one sentence in err (size n) that
 * says why, never the password (details may have been logged before). */
struct store_import *pg_import_open(const char *url, char *err, size_t n);

#endif
