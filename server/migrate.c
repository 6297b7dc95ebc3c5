#include "migrate.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "store_copy.h"

#define PREFIX "jobqd migrate: "

struct migrate_args {
    const char *from;
    const char *db;
    const char *level;
};

static void usage(FILE *out)
{
    fprintf(out,
            "usage: jobqd migrate --from PATH --db URL [--log-level LEVEL]\n\n"
            "Copy every job (ids, statuses, attempts, leases, results, errors, progress,\n"
            "timestamps, tags), with its attempt history, which queues are paused, the limits\n"
            "(with the keys' pauses and rate windows) and the schedules (with their next and\n"
            "last runs), of the SQLite database PATH into the PostgreSQL database URL, which\n"
            "must hold no job; its schema is created as jobqd creates it. No jobqd may run on\n"
            "PATH meanwhile (PATH is only read). The copy is one transaction that commits only\n"
            "when the jobs per status, the attempt history entries, the limits and the\n"
            "schedules match: on any failure the target is left without jobs. New jobs get ids\n"
            "after the highest the SQLite database gave.\n\n"
            "  --from PATH        the SQLite database file (jobqd's --db until now)\n"
            "  --db URL           postgres://... or postgresql://... (env JOBQ_DB)\n"
            "  --log-level LEVEL  debug|info|warn|error|off (env JOBQ_LOG_LEVEL; default info)\n"
            "  --help             print this text\n");
}

/* A non-empty environment variable, or NULL. */
static const char *env(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

/* Parse argv into a. Returns -1 to go on, or the exit code (after --help or an error). */
static int parse(struct migrate_args *a, int argc, char **argv)
{
    a->db = env("JOBQ_DB");
    a->level = env("JOBQ_LOG_LEVEL");
    static const char *const names[] = {"from", "db", "log-level"};
    const char **slots[] = {&a->from, &a->db, &a->level};
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            usage(stdout);
            return 0;
        }
        const char *name = strncmp(arg, "--", 2) == 0 ? arg + 2 : NULL;
        const char *eq = name ? strchr(name, '=') : NULL;
        size_t len = name ? (eq ? (size_t)(eq - name) : strlen(name)) : 0;
        size_t k = 0;
        while (name && k < 3 && !(strlen(names[k]) == len && strncmp(names[k], name, len) == 0))
            k++;
        if (!name || k == 3) {
            fprintf(stderr, PREFIX "unknown argument \"%.80s\" (see jobqd migrate --help)\n", arg);
            return 1;
        }
        if (!eq && i + 1 >= argc) {
            fprintf(stderr, PREFIX "--%s needs a value (see jobqd migrate --help)\n", names[k]);
            return 1;
        }
        *slots[k] = eq ? eq + 1 : argv[++i];
    }
    if (!a->from || !*a->from) {
        fprintf(stderr, PREFIX "--from PATH is required: the SQLite database to copy (see "
                               "jobqd migrate --help)\n");
        return 1;
    }
    if (!a->db || !*a->db) {
        fprintf(stderr, PREFIX "--db URL is required: the PostgreSQL database to copy into "
                               "(see jobqd migrate --help)\n");
        return 1;
    }
    return -1;
}

int migrate_main(int argc, char **argv)
{
    struct migrate_args a = {0};
    int rc = parse(&a, argc, argv);
    if (rc >= 0)
        return rc;
    enum log_level level = LOG_INFO;
    if (a.level && log_level_parse(a.level, &level) != 0) {
        fprintf(stderr, PREFIX "invalid --log-level \"%.80s\": debug, info, warn, error or off\n",
                a.level);
        return 1;
    }
    log_set_level(level);
    char shown[512];
    store_url_redact(a.db, shown, sizeof shown);
    if (!store_url_is_pg(a.db)) {
        fprintf(stderr,
                PREFIX "--db must be a PostgreSQL URL (postgres://... or postgresql://...), not "
                       "\"%s\"\n",
                shown);
        return 1;
    }
    struct store_migrate_report rep;
    char err[1024];
    if (store_migrate(a.from, a.db, &rep, err, sizeof err) != 0) {
        fprintf(stderr, PREFIX "%s\n", err);
        return 1;
    }
    const int64_t *c = rep.target.status;
    printf("jobqd migrate: copied %" PRId64 " jobs from %s to %s (queued %" PRId64
           ", running %" PRId64 ", succeeded %" PRId64 ", failed %" PRId64 ", cancelled %" PRId64
           ": the same as the source) with %" PRId64 " attempt history entries, %" PRId64
           " limits and %" PRId64 " schedules; new ids start after %" PRId64 "\n",
           rep.copied, a.from, shown, c[JOB_QUEUED], c[JOB_RUNNING], c[JOB_SUCCEEDED],
           c[JOB_FAILED], c[JOB_CANCELLED], rep.attempts, rep.tables[STORE_COPY_LIMITS],
           rep.tables[STORE_COPY_SCHEDULES], rep.source.last_id);
    return 0;
}
