/* `jobqd migrate`: copy every job, limit and schedule of a SQLite database into an empty
 * PostgreSQL one (the command line around store_migrate(), store_copy.h). */
#ifndef JOBQ_MIGRATE_H
#define JOBQ_MIGRATE_H

/* Run `jobqd migrate` with its own arguments (argv[0] is "migrate"): --from PATH (required),
 * --db URL (else JOBQ_DB), --log-level (else JOBQ_LOG_LEVEL), --help. Prints one line on
 * stdout when the copy is done, or one line "jobqd migrate: ..." on stderr saying why not
 * (never a password; what the store logged may come before it). Returns the process's exit
 * code: 0 when every job was copied, 1 otherwise. */
int migrate_main(int argc, char **argv);

#endif
