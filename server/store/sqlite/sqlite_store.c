/* sqlite_store_open: the SQLite store's handle, its lock file, its connections and its ops
 * table. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "sqlite_lock.h"
#include "sqlite_open.h"
#include "sqlite_schema.h"
#include "sqlite_store.h"

#define READERS_MAX 64 /* read connections at most */

static void sqlite_store_close(struct store *s);

static const struct store_ops sqlite_ops = {
    .submit = sqlite_submit,
    .get = sqlite_read_get,
    .list = sqlite_read_list,
    .queues = sqlite_read_queues,
    .attempts = sqlite_read_attempts,
    .limits = sqlite_read_limits,
    .links = sqlite_read_links,
    .schedules = sqlite_read_schedules,
    .schedules_next = sqlite_read_schedules_next,
    .schedules_count = sqlite_read_schedules_count,
    .events = sqlite_read_events,
    .sqs_queues = sqlite_read_sqs_queues,
    .webhooks = sqlite_read_webhooks,
    .sweep = sqlite_sweep,
    .next_due = sqlite_read_next_due,
    .ping = sqlite_read_ping,
    .stats = sqlite_read_stats,
    .metrics = sqlite_read_metrics,
    .close = sqlite_store_close,
};

/* mkdir -p of the directory that holds path. Returns 0, or -1 after logging why. */
static int make_parent(const char *path)
{
    char dir[PATH_MAX];
    size_t len = strlen(path);
    if (len >= sizeof dir) {
        log_error("database path too long: %zu bytes", len);
        return -1;
    }
    memcpy(dir, path, len + 1);
    char *slash = strrchr(dir, '/');
    if (!slash || slash == dir)
        return 0; /* the current directory or / */
    *slash = '\0';
    for (char *p = dir + 1;; p++) {
        if (*p != '/' && *p != '\0')
            continue;
        char saved = *p;
        *p = '\0';
        if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
            log_error("cannot create directory %s: %s", dir, strerror(errno));
            return -1;
        }
        *p = saved;
        if (saved == '\0')
            break;
    }
    return 0;
}

/* Take the lock file (sqlite_lock.h). Returns the open descriptor, SQLITE_LOCKFILE_ABSENT
 * (logged as a warning: go on without it), or -1 (logged) when another process holds it. */
static int take_lock(const char *path)
{
    int fd = sqlite_lock_take(path);
    if (fd == SQLITE_LOCKFILE_HELD) {
        log_error("database %s is in use by another jobqd process (it holds %s.lock); two "
                  "processes never share one SQLite file: use PostgreSQL for several",
                  path, path);
        return -1;
    }
    return fd;
}

/* Open the write connection, bring the schema up to date and prepare its statements. */
static int open_writer(struct sqlite_conn *c, const struct store_options *opts)
{
    if (sqlite_conn_open(c, opts->url, CONN_WRITER, opts->sqlite.sync_full, 1) != 0)
        return -1;
    if (sqlite_schema_migrate(c->db) != 0 || sqlite_conn_prepare(c) != 0) {
        sqlite_conn_close(c);
        return -1;
    }
    return 0;
}

struct store *sqlite_store_open(const struct store_options *opts)
{
    const char *path = opts->url;
    if (!path || !*path || strcmp(path, ":memory:") == 0) {
        log_error("sqlite store needs a database file path");
        return NULL;
    }
    if (make_parent(path) != 0)
        return NULL;
    int lock_fd = take_lock(path);
    if (lock_fd == -1)
        return NULL;
    struct sqlite_store *st = calloc(1, sizeof *st);
    if (!st) {
        log_error("out of memory opening the store");
        goto fail;
    }
    st->base.ops = &sqlite_ops;
    st->backoff_base = opts->backoff_base;
    st->events_retention =
        opts->events.retention > 0 ? opts->events.retention : EVENT_RETENTION_DEFAULT;
    st->events_max = opts->events.max > 0 ? opts->events.max : EVENT_MAX_DEFAULT;
    st->backoff_max = opts->backoff_max;
    st->lock_fd = lock_fd;
    struct sqlite_conn writer;
    if (open_writer(&writer, opts) != 0)
        goto fail;
    if (sqlite_writer_init(&st->writer, &writer, &opts->hooks, path, opts->sqlite.sync_full) != 0)
        goto fail;
    int readers = opts->sqlite.readers < 1             ? 1
                  : opts->sqlite.readers > READERS_MAX ? READERS_MAX
                                                       : opts->sqlite.readers;
    if (sqlite_pool_open(&st->readers, path, readers) != 0) {
        sqlite_writer_close(&st->writer);
        goto fail;
    }
    log_info("sqlite store open: %s (synchronous %s, %d readers)", path,
             opts->sqlite.sync_full ? "full" : "normal", st->readers.n);
    return &st->base;
fail:
    free(st);
    if (lock_fd >= 0)
        close(lock_fd); /* releases the lock */
    return NULL;
}

static void sqlite_store_close(struct store *s)
{
    struct sqlite_store *st = sqlite_store_of(s);
    sqlite_pool_close(&st->readers);
    sqlite_writer_close(&st->writer);
    if (st->lock_fd >= 0)
        close(st->lock_fd);
    free(st);
}
