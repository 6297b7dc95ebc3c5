/* The PostgreSQL backend's entry point, for store_open() (store.c) alone. */
#ifndef JOBQ_PG_OPEN_H
#define JOBQ_PG_OPEN_H

#include "store.h"

/* Open the PostgreSQL store at opts->url (any libpq connection URI, multi-host included):
 * connect, bring the schema up to date under a lock (several processes may start at once),
 * open the pool and the listener. Returns the store, or NULL after logging one line that
 * says why (never the password). */
struct store *pg_store_open(const struct store_options *opts);

#endif
