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

enum store_result pg_throughput_publish(struct store *s, int64_t now,
                                        const struct counters_point *pts, size_t n)
{
    struct pg_store *st = pg_store_of(s);
    struct pg_arr arr[4] = {{0}};
    for (size_t i = 0; i < n && i < COUNTERS_POINTS; i++) {
        if (!pts[i].enqueued && !pts[i].succeeded && !pts[i].failed)
            continue;
        pg_arr_int(&arr[0], pts[i].at);
        pg_arr_int(&arr[1], (int64_t)pts[i].enqueued);
        pg_arr_int(&arr[2], (int64_t)pts[i].succeeded);
        pg_arr_int(&arr[3], (int64_t)pts[i].failed);
    }
    struct pg_bind b = {.what = "throughput publish"};
    int bad = 0;
    for (int k = 0; k < 4; k++)
        bad |= pg_arr_bind(&arr[k], &b, k);
    if (bad) {
        pg_bind_free(&b);
        return STORE_ERROR;
    }
    char nowb[24];
    const char *params[6] = {pg_int_param(nowb, pg_now(st, now)),
                             st->proc,
                             b.params[0],
                             b.params[1],
                             b.params[2],
                             b.params[3]};
    enum store_result r;
    PGresult *res = pg_read_one(st, PG_TP_PUBLISH, 6, params, "throughput publish", &r);
    PQclear(res);
    pg_bind_free(&b);
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
