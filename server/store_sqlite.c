/* store_sqlite_open: the SQLite store's handle, its connections and its ops table. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "log.h"
#include "sqlite_schema.h"
#include "sqlite_store.h"

#define READERS_MAX 64 /* read connections at most */

static void sqlite_store_close(struct store *s);

static const struct store_ops sqlite_ops = {
    .enqueue = sqlite_enqueue,
    .claim = sqlite_claim,
    .heartbeat = sqlite_lease_heartbeat,
    .complete = sqlite_lease_complete,
    .fail = sqlite_lease_fail,
    .cancel = sqlite_admin_cancel,
    .retry = sqlite_admin_retry,
    .get = sqlite_read_get,
    .list = sqlite_read_list,
    .queues = sqlite_read_queues,
    .sweep = sqlite_sweep,
    .next_due = sqlite_read_next_due,
    .ping = sqlite_read_ping,
    .close = sqlite_store_close,
    .submit = sqlite_submit,
    .stats = sqlite_read_stats,
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

/* Open the write connection, bring the schema up to date and prepare its statements. */
static int open_writer(struct sqlite_conn *c, const struct store_options *opts)
{
    if (sqlite_conn_open(c, opts->path, CONN_WRITER, opts->sync_full, 1) != 0)
        return -1;
    if (sqlite_schema_migrate(c->db) != 0 || sqlite_conn_prepare(c) != 0) {
        sqlite_conn_close(c);
        return -1;
    }
    return 0;
}

struct store *store_sqlite_open(const struct store_options *opts)
{
    if (!opts->path || !*opts->path || strcmp(opts->path, ":memory:") == 0) {
        log_error("sqlite store needs a database file path");
        return NULL;
    }
    if (make_parent(opts->path) != 0)
        return NULL;
    struct sqlite_store *st = calloc(1, sizeof *st);
    if (!st) {
        log_error("out of memory opening the store");
        return NULL;
    }
    st->base.ops = &sqlite_ops;
    st->backoff_base = opts->backoff_base;
    st->backoff_max = opts->backoff_max;
    struct sqlite_conn writer;
    if (open_writer(&writer, opts) != 0) {
        free(st);
        return NULL;
    }
    if (sqlite_writer_init(&st->writer, &writer, &opts->hooks, opts->path, opts->sync_full) != 0) {
        free(st);
        return NULL;
    }
    int readers = opts->readers < 1 ? 1 : opts->readers > READERS_MAX ? READERS_MAX : opts->readers;
    if (sqlite_pool_open(&st->readers, opts->path, readers) != 0) {
        sqlite_writer_close(&st->writer);
        free(st);
        return NULL;
    }
    log_info("sqlite store open: %s (synchronous %s, %d readers)", opts->path,
             opts->sync_full ? "full" : "normal", st->readers.n);
    return &st->base;
}

static void sqlite_store_close(struct store *s)
{
    struct sqlite_store *st = sqlite_store_of(s);
    sqlite_pool_close(&st->readers);
    sqlite_writer_close(&st->writer);
    free(st);
}
