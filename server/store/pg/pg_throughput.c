/* The throughput buckets of GET /stats/throughput shared between the processes of one
 * database: each process publishes its own (the sweeper, every few seconds) and adds the
 * others' to its own when asked. One autocommit statement each (pg_read_one: the publish
 * replaces a process's own rows, so running it again is harmless). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "counters.h"
#include "log.h"
#include "pg_row.h"
#include "pg_store.h"

/* Append v to the array literal in buf (at *len of size). Returns 0, or -1 when full. */
static int put(char *buf, size_t size, size_t *len, uint64_t v, int first)
{
    int k = snprintf(buf + *len, size - *len, "%s%" PRIu64, first ? "" : ",", v);
    if (k < 0 || (size_t)k >= size - *len)
        return -1;
    *len += (size_t)k;
    return 0;
}

enum store_result pg_throughput_publish(struct store *s, int64_t now,
                                        const struct counters_point *pts, size_t n)
{
    struct pg_store *st = pg_store_of(s);
    enum { SIZE = COUNTERS_POINTS * 22 + 4 };
    char arr[4][SIZE];
    size_t len[4] = {1, 1, 1, 1};
    for (int k = 0; k < 4; k++)
        arr[k][0] = '{';
    size_t used = 0;
    for (size_t i = 0; i < n && i < COUNTERS_POINTS; i++) {
        if (!pts[i].enqueued && !pts[i].succeeded && !pts[i].failed)
            continue;
        uint64_t v[4] = {(uint64_t)pts[i].at, pts[i].enqueued, pts[i].succeeded, pts[i].failed};
        for (int k = 0; k < 4; k++)
            if (put(arr[k], SIZE - 1, &len[k], v[k], used == 0) != 0)
                return STORE_ERROR;
        used++;
    }
    for (int k = 0; k < 4; k++) {
        arr[k][len[k]] = '}';
        arr[k][len[k] + 1] = '\0';
    }
    char nowb[24];
    const char *params[6] = {
        pg_int_param(nowb, pg_now(st, now)), st->proc, arr[0], arr[1], arr[2], arr[3]};
    enum store_result r;
    PGresult *res = pg_read_one(st, PG_TP_PUBLISH, 6, params, "throughput publish", &r);
    PQclear(res);
    return res ? STORE_OK : r;
}

enum store_result pg_throughput_others(struct store *s, int64_t now, struct counters_point *pts,
                                       size_t n)
{
    (void)now;
    struct pg_store *st = pg_store_of(s);
    if (n == 0)
        return STORE_OK;
    char since[24];
    const char *params[2] = {pg_int_param(since, pts[0].at), st->proc};
    enum store_result r;
    PGresult *res = pg_read_one(st, PG_TP_OTHERS, 2, params, "throughput others", &r);
    if (!res)
        return r;
    for (int row = 0; row < PQntuples(res); row++) {
        int64_t at = pg_row_int(res, row, 0);
        for (size_t i = 0; i < n; i++) {
            if (pts[i].at != at)
                continue;
            pts[i].enqueued += (uint64_t)pg_row_int(res, row, 1);
            pts[i].succeeded += (uint64_t)pg_row_int(res, row, 2);
            pts[i].failed += (uint64_t)pg_row_int(res, row, 3);
        }
    }
    PQclear(res);
    return STORE_OK;
}
