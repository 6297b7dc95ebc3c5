#include "sqlite_lock.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "log.h"

int sqlite_lock_take(const char *path)
{
    char lock[PATH_MAX];
    if (snprintf(lock, sizeof lock, "%s.lock", path) >= (int)sizeof lock) {
        log_error("database path too long: %s", path);
        return -1;
    }
    int fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
        fd = open(lock, O_RDONLY | O_CLOEXEC); /* a read-only directory or file */
    if (fd < 0) {
        log_warn("cannot open the lock file %s (%s): not guarding against a second jobqd", lock,
                 strerror(errno));
        return SQLITE_LOCKFILE_ABSENT;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        int e = errno;
        close(fd);
        if (e == EWOULDBLOCK)
            return SQLITE_LOCKFILE_HELD;
        log_error("cannot lock %s: %s", lock, strerror(e));
        return -1;
    }
    return fd;
}
