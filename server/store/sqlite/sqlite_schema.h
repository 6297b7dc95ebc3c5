/* The schema of the SQLite store as numbered, append-only migrations tracked by
 * PRAGMA user_version. A released migration is never edited: a change is a new one. */
#ifndef JOBQ_SQLITE_SCHEMA_H
#define JOBQ_SQLITE_SCHEMA_H

#include <sqlite3.h>
#include <stddef.h>

/* The number of migrations this program knows: the user_version of an up-to-date file. */
int sqlite_schema_version(void);

/* The first schema whose job rows hold their latest attempt (jobs.attempt_in_row). */
#define SQLITE_SCHEMA_ATTEMPT_IN_ROW 5

/* Read the user_version of db into *version. Returns 0, or -1 after logging why. */
int sqlite_schema_read(sqlite3 *db, int *version);

/* Apply every migration the database on db lacks, all in one BEGIN IMMEDIATE transaction,
 * and set user_version. Returns 0, or -1 after logging why (nothing applied, no transaction
 * left open). A file with a user_version newer than this program is refused. An up-to-date
 * database opened read-only passes (nothing to write); one that needs a migration does not. */
int sqlite_schema_migrate(sqlite3 *db);

/* Check, writing nothing, that db (the file `path`) holds a jobq database this program can
 * read: a user_version from 1 to sqlite_schema_version() and a jobs table. Returns 0, or -1
 * with one sentence in err (size n): not a SQLite database, not a jobq database, written by a
 * newer jobqd, or cannot be read. */
int sqlite_schema_check(sqlite3 *db, const char *path, char *err, size_t n);

#endif
