/* The SQLite backend's entry points, for store_open() (store.c) and store_migrate()
 * (store_migrate.c) alone. */
#ifndef JOBQ_SQLITE_OPEN_H
#define JOBQ_SQLITE_OPEN_H

#include "store.h"
#include "store_copy.h"

/* Open the SQLite store at opts->url, a file path (":memory:" is refused: the readers need a
 * file). Creates the file's directory when missing, takes an exclusive lock on PATH.lock (a
 * second process on the same file is refused with a clear error), brings the schema up to
 * date (migrations tracked by PRAGMA user_version). Returns the store, or NULL after logging
 * why. */
struct store *sqlite_store_open(const struct store_options *opts);

/* Open the SQLite store file `path` as the source of a copy (store_copy.h), for
 * store_migrate() alone: read-only, never created, refused while a jobqd has it open (its
 * lock file is held until close), and only when it is a jobq database this program can read.
 * Returns the source, or NULL with one sentence in err (size n) that says why. */
struct store_export *sqlite_export_open(const char *path, char *err, size_t n);

#endif
