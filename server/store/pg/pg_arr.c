/* Array parameters: PostgreSQL array literals built element by element, for the statements
 * that do several calls at once over unnest(). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "pg_store.h"

/* Room for n more bytes (and the closing "}" and NUL). */
static int room(struct pg_arr *a, size_t n)
{
    if (a->bad)
        return -1;
    if (a->len + n + 2 <= a->cap)
        return 0;
    size_t cap = a->cap ? a->cap : 256;
    while (cap < a->len + n + 2)
        cap *= 2;
    char *s = realloc(a->s, cap);
    if (!s) {
        a->bad = 1;
        return -1;
    }
    a->s = s;
    a->cap = cap;
    return 0;
}

/* The separator before the next element ("{" before the first). */
static void next(struct pg_arr *a)
{
    char sep = a->len == 0 ? '{' : ',';
    a->s[a->len++] = sep;
}

static void put_raw(struct pg_arr *a, const char *v, size_t n)
{
    if (room(a, n + 1) != 0)
        return;
    next(a);
    memcpy(a->s + a->len, v, n);
    a->len += n;
}

void pg_arr_text(struct pg_arr *a, const char *v)
{
    if (!v) {
        put_raw(a, "NULL", 4);
        return;
    }
    size_t n = strlen(v), quoted = 0;
    for (size_t i = 0; i < n; i++)
        quoted += v[i] == '"' || v[i] == '\\';
    if (room(a, n + quoted + 3) != 0)
        return;
    next(a);
    a->s[a->len++] = '"';
    for (size_t i = 0; i < n; i++) {
        if (v[i] == '"' || v[i] == '\\')
            a->s[a->len++] = '\\';
        a->s[a->len++] = v[i];
    }
    a->s[a->len++] = '"';
}

void pg_arr_int(struct pg_arr *a, int64_t v)
{
    if (v == JOB_NONE) {
        put_raw(a, "NULL", 4);
        return;
    }
    char buf[24];
    int n = snprintf(buf, sizeof buf, "%" PRId64, v);
    put_raw(a, buf, (size_t)n);
}

void pg_arr_bool(struct pg_arr *a, int v)
{
    put_raw(a, v ? "t" : "f", 1);
}

char *pg_arr_take(struct pg_arr *a)
{
    if (room(a, 1) == 0 && a->len == 0)
        a->s[a->len++] = '{';
    char *s = NULL;
    if (!a->bad && a->s) {
        a->s[a->len++] = '}';
        a->s[a->len] = '\0';
        s = a->s;
    } else {
        free(a->s);
    }
    *a = (struct pg_arr){0};
    return s;
}

int pg_arr_bind(struct pg_arr *a, struct pg_bind *b, int i)
{
    char *s = pg_arr_take(a);
    if (!s) {
        log_error("out of memory for an array parameter of %s", b->what);
        return -1;
    }
    b->heap[i] = s;
    b->params[i] = s;
    return 0;
}

void pg_bind_free(struct pg_bind *b)
{
    for (int i = 0; i < PG_PARAMS_MAX; i++) {
        free(b->heap[i]);
        b->heap[i] = NULL;
    }
}

enum store_result pg_run_arrays(struct pg_conn *c, enum pg_stmt_id id, struct pg_arr *a, int n,
                                const char *what)
{
    struct pg_bind b = {.id = id, .what = what, .n = n};
    int rc = 0;
    for (int i = 0; i < n; i++)
        rc |= pg_arr_bind(&a[i], &b, i);
    enum store_result r = STORE_ERROR;
    PGresult *res = rc == 0 ? pg_conn_exec(c, b.id, b.n, b.params, b.what, &r) : NULL;
    pg_bind_free(&b);
    if (!res)
        return r;
    PQclear(res);
    return STORE_OK;
}
