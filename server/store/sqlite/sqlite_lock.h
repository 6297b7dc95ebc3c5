/* The lock file that keeps a second process off one SQLite database: an exclusive flock on
 * PATH.lock, held while the store (or jobqd migrate, reading the file) has it open. A second
 * jobqd's writer would not see the first one's writes coming (long polls, scheduled jobs). */
#ifndef JOBQ_SQLITE_LOCK_H
#define JOBQ_SQLITE_LOCK_H

#define SQLITE_LOCKFILE_ABSENT (-2) /* no lock file can be opened here */
#define SQLITE_LOCKFILE_HELD (-3)   /* another process holds the lock */

/* Take the exclusive lock on path + ".lock" without waiting, creating the file when
 * missing. Returns the open descriptor (closing it releases the lock);
 * SQLITE_LOCKFILE_ABSENT when no lock file can be opened (a read-only directory: nobody can
 * write there anyway; logged as a warning); SQLITE_LOCKFILE_HELD when another process holds
 * the lock (not logged: the caller says what that means); -1 on any other failure (logged). */
int sqlite_lock_take(const char *path);

#endif
