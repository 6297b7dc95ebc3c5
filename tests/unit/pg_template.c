/* The migrated template database of the PostgreSQL unit tests (test_pg_util.h):
 *
 *   jobq_pg_template create   (re)make the database JOBQ_TEST_PG_TEMPLATE names in the test
 *                             cluster of JOBQ_TEST_PG_URL, bring its schema up to date with the
 *                             store's own migrations (pg_schema_migrate, as store_open does),
 *                             and close it to connections, so that it can be copied at once
 *   jobq_pg_template drop     drop it
 *
 * ctest runs `create` as the setup of the fixture pg_template and `drop` as its cleanup
 * (tests/CMakeLists.txt): each case that needs a database then copies the template (CREATE
 * DATABASE ... TEMPLATE) instead of migrating an empty one. PostgreSQL refuses to copy a
 * database that has connections; this one takes none once made, and the cases copy it
 * concurrently without connecting to it. Without a cluster it says so and exits 0 (the cases
 * skip), unless JOBQ_REQUIRE_PG=1. Exits 0 when done, 1 on failure, 2 on bad usage. */
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "pg_schema.h"
#include "test_pg_util.h"

/* 1 when name is a plain lowercase identifier (it goes into SQL unquoted). */
static int plain_name(const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || n > 63 || !strchr("abcdefghijklmnopqrstuvwxyz_", name[0]))
        return 0;
    return strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789_") == n;
}

static int drop_template(const char *name)
{
    char sql[128];
    snprintf(sql, sizeof sql, "DROP DATABASE IF EXISTS %s WITH (FORCE)", name);
    return admin_sql(sql);
}

/* Make name afresh, migrate it, close it to connections. Returns 0 or -1 (printed). */
static int create_template(const char *name)
{
    char sql[160], url[1024];
    snprintf(sql, sizeof sql, "CREATE DATABASE %s", name);
    if (drop_template(name) != 0 || admin_sql(sql) != 0 || pg_db_url(name, url, sizeof url) < 0)
        return -1;
    PGconn *c = PQconnectdb(url);
    int ok = PQstatus(c) == CONNECTION_OK;
    if (!ok)
        fprintf(stderr, "cannot connect to %s: %s", name, PQerrorMessage(c));
    else
        ok = pg_schema_migrate(c) == 0;
    PQfinish(c);
    snprintf(sql, sizeof sql, "ALTER DATABASE %s WITH ALLOW_CONNECTIONS false", name);
    if (!ok || admin_sql(sql) != 0) {
        drop_template(name);
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    const char *name = getenv("JOBQ_TEST_PG_TEMPLATE");
    int create = argc == 2 && strcmp(argv[1], "create") == 0;
    if (!(create || (argc == 2 && strcmp(argv[1], "drop") == 0)) || !name || !plain_name(name)) {
        fprintf(stderr,
                "usage: JOBQ_TEST_PG_TEMPLATE=name %s create|drop (name: [a-z_][a-z0-9_]*)\n",
                argv[0]);
        return 2;
    }
    int given = pg_cluster_given();
    if (given <= 0)
        return given < 0 ? 1 : 0;
    log_set_level(LOG_WARN);
    if ((create ? create_template(name) : drop_template(name)) != 0) {
        fprintf(stderr, "%s: cannot %s the template database %s\n", argv[0], argv[1], name);
        return 1;
    }
    printf("%s %s\n", create ? "made and migrated" : "dropped", name);
    return 0;
}
