/* The schema of the SQLite store as numbered, append-only migrations tracked by
 * PRAGMA user_version. A released migration is never edited: a change is a new one. */
#ifndef JOBQ_SQLITE_SCHEMA_H
#define JOBQ_SQLITE_SCHEMA_H

#include <sqlite3.h>
#include <stddef.h>

/* The number of migrations this program knows: the user_version of an up-to-date file. */
int sqlite_schema_version(void);

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

/* Make db, a jobq file at an older schema that this connection only reads, read as the
 * current schema on this connection alone: each table the file lacks is an empty TEMP table
 * made as the migrations make it, and each table that lacks columns is a TEMP view of the
 * file's table (of the same name, which it hides) that gives them their default (NULL where
 * the migration gives none), as the migration that added them would have. Nothing is written
 * to the file: the TEMP schema is the connection's own, so this works on a file opened
 * read-only or immutable. The migrations' moves of existing rows are not made: a file of
 * schema 4 keeps every attempt, the running ones included, in its attempts table, while its
 * job rows read as holding none (attempt_in_row NULL), which together is the history that
 * migration 5 would have moved. db's query_only (an export connection's) is lifted while the
 * TEMP schema is made and set again before this returns. Returns 0 (also when db is up to date: nothing is made), or
 * -1 after logging why. */
int sqlite_schema_present(sqlite3 *db);

#endif
