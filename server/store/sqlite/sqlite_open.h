/* The SQLite backend's entry point, for store_open() (store.c) alone. */
#ifndef JOBQ_SQLITE_OPEN_H
#define JOBQ_SQLITE_OPEN_H

#include "store.h"

/* Open the SQLite store at opts->url, a file path (":memory:" is refused: the readers need a
 * file). Creates the file's directory when missing, takes an exclusive lock on PATH.lock (a
 * second process on the same file is refused with a clear error), brings the schema up to
 * date (migrations tracked by PRAGMA user_version). Returns the store, or NULL after logging
 * why. */
struct store *sqlite_store_open(const struct store_options *opts);

#endif
