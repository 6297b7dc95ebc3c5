/* router: the route table, path matching, {id} parsing, 404 versus 405 with Allow. */
#include <stdlib.h>
#include <string.h>

#include "handlers.h"
#include "router.h"
#include "testlib.h"

static enum route_match match(const char *method, const char *path, const struct route **r,
                              long long *id, char *allow)
{
    *r = NULL;
    *id = -1;
    return router_match(method, path, r, id, allow, 64);
}

TEST(every_route_present)
{
    static const struct {
        const char *method, *path;
        handler_fn handler;
        int reads_body;
    } want[] = {
        {"POST", "/jobs", handle_enqueue, 1},
        {"POST", "/jobs/batch", handle_enqueue_batch, 1},
        {"POST", "/claim", handle_claim, 1},
        {"POST", "/jobs/7/heartbeat", handle_heartbeat, 1},
        {"POST", "/jobs/7/complete", handle_complete, 1},
        {"POST", "/jobs/7/fail", handle_fail, 1},
        {"POST", "/jobs/7/snooze", handle_snooze, 1},
        {"POST", "/jobs/7/cancel", handle_cancel, 0},
        {"POST", "/jobs/7/retry", handle_retry, 0},
        {"GET", "/jobs/7", handle_get_job, 0},
        {"GET", "/jobs", handle_list_jobs, 0},
        {"GET", "/jobs/7/attempts", handle_attempts, 0},
        {"GET", "/jobs/7/dependencies", handle_dependencies, 0},
        {"GET", "/jobs/7/dependents", handle_dependents, 0},
        {"GET", "/queues", handle_queues, 0},
        {"GET", "/stats/throughput", handle_throughput, 0},
        {"GET", "/events", handle_events, 0},
        {"POST", "/queues/a.b:c-d_e/pause", handle_pause, 0},
        {"POST", "/queues/q/resume", handle_resume, 0},
        {"DELETE", "/queues/q/jobs", handle_purge, 0},
        {"GET", "/limits", handle_limits, 0},
        {"GET", "/limits/tenant:42", handle_limit_get, 0},
        {"PUT", "/limits/a/b:c*", handle_limit_put, 1},
        {"DELETE", "/limits/x", handle_limit_delete, 0},
        {"GET", "/schedules", handle_schedules, 0},
        {"GET", "/schedules/nightly", handle_schedule_get, 0},
        {"PUT", "/schedules/nightly", handle_schedule_put, 1},
        {"DELETE", "/schedules/nightly", handle_schedule_delete, 0},
        {"GET", "/webhooks", handle_webhooks, 0},
        {"GET", "/webhooks/ops", handle_webhook_get, 0},
        {"PUT", "/webhooks/ops", handle_webhook_put, 1},
        {"DELETE", "/webhooks/ops", handle_webhook_delete, 0},
        {"GET", "/healthz", handle_healthz, 0},
        {"GET", "/readyz", handle_readyz, 0},
        {"GET", "/metrics", handle_metrics, 0},
        {"GET", "/ui", handle_ui_redirect, 0},
        {"GET", "/ui/", handle_ui_asset, 0},
        {"GET", "/ui/api.js", handle_ui_asset, 0},
        {"GET", "/ui/app.css", handle_ui_asset, 0},
        {"GET", "/ui/app.js", handle_ui_asset, 0},
        {"GET", "/ui/chart.js", handle_ui_asset, 0},
        {"GET", "/ui/dom.js", handle_ui_asset, 0},
        {"GET", "/ui/jobs.js", handle_ui_asset, 0},
        {"GET", "/ui/limits.js", handle_ui_asset, 0},
        {"GET", "/ui/schedules.js", handle_ui_asset, 0},
        {"GET", "/ui/live.js", handle_ui_asset, 0},
        {"GET", "/ui/webhooks.js", handle_ui_asset, 0},
    };
    CHECK_INT(router_table_len, sizeof want / sizeof want[0]);
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        const struct route *r;
        long long id;
        char allow[64];
        CHECK_INT(match(want[i].method, want[i].path, &r, &id, allow), ROUTE_FOUND);
        CHECK(r->handler == want[i].handler);
        CHECK_INT(r->reads_body, want[i].reads_body);
        CHECK_INT(id, strstr(want[i].path, "/7") ? 7 : 0);
    }
}

TEST(ids)
{
    const struct route *r;
    long long id;
    char allow[64];
    CHECK_INT(match("GET", "/jobs/1", &r, &id, allow), ROUTE_FOUND);
    CHECK_INT(id, 1);
    CHECK_INT(match("GET", "/jobs/9223372036854775807", &r, &id, allow), ROUTE_FOUND);
    CHECK(id == 9223372036854775807LL);
    CHECK_INT(match("POST", "/jobs/42/complete", &r, &id, allow), ROUTE_FOUND);
    CHECK_INT(id, 42);
    const char *bad[] = {
        "/jobs/0",
        "/jobs/00",
        "/jobs/01",
        "/jobs/-1",
        "/jobs/+1",
        "/jobs/1.5",
        "/jobs/1e3",
        "/jobs/abc",
        "/jobs/ 1",
        "/jobs/1 ",
        "/jobs/0x1",
        "/jobs/9223372036854775808",
        "/jobs/18446744073709551616",
        "/jobs/99999999999999999999999",
        "/jobs/1/",
        "/jobs/1/2",
        "/jobs/1/explode",
        "/jobs//complete",
        "/jobs/1//complete",
        "/jobs/abc/complete",
        "/jobs/0/cancel",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        if (match("GET", bad[i], &r, &id, allow) != ROUTE_NOT_FOUND)
            fprintf(stderr, "matched: %s\n", bad[i]);
        CHECK_INT(match("GET", bad[i], &r, &id, allow), ROUTE_NOT_FOUND);
        CHECK_INT(match("POST", bad[i], &r, &id, allow), ROUTE_NOT_FOUND);
    }
}

TEST(not_found)
{
    const struct route *r;
    long long id;
    char allow[64];
    const char *paths[] = {"/",
                           "",
                           "/nope",
                           "/jobs/",
                           "/claim/",
                           "/queuesx",
                           "/healthz/x",
                           "/v1/jobs",
                           "//jobs",
                           "/JOBS",
                           "/Healthz",
                           "/jobs/batch/1",
                           "jobs",
                           "/jobs?x=1",
                           "/queues//pause",
                           "/queues/q",
                           "/queues/q/pause/x",
                           "/jobs/0/attempts",
                           "/limits/",
                           "/limitsx/a"};
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
        CHECK_INT(match("GET", paths[i], &r, &id, allow), ROUTE_NOT_FOUND);
        CHECK_STR(allow, "");
    }
    CHECK_INT(router_match(NULL, "/jobs", &r, &id, allow, sizeof allow), ROUTE_NOT_FOUND);
    CHECK_INT(router_match("GET", NULL, &r, &id, allow, sizeof allow), ROUTE_NOT_FOUND);
}

TEST(method_not_allowed_lists_allow)
{
    const struct route *r;
    long long id;
    char allow[64];
    CHECK_INT(match("DELETE", "/jobs", &r, &id, allow), ROUTE_BAD_METHOD);
    CHECK_STR(allow, "GET, POST");
    CHECK_INT(match("PUT", "/jobs/5", &r, &id, allow), ROUTE_BAD_METHOD);
    CHECK_STR(allow, "GET");
    CHECK_INT(match("POST", "/jobs/5", &r, &id, allow), ROUTE_BAD_METHOD);
    CHECK_STR(allow, "GET");
    CHECK_INT(match("GET", "/jobs/batch", &r, &id, allow), ROUTE_BAD_METHOD);
    CHECK_STR(allow, "POST");
    CHECK_INT(match("GET", "/claim", &r, &id, allow), ROUTE_BAD_METHOD);
    CHECK_STR(allow, "POST");
    const char *actions[] = {"heartbeat", "complete", "fail", "cancel", "retry"};
    for (size_t i = 0; i < 5; i++) {
        char path[64];
        snprintf(path, sizeof path, "/jobs/3/%s", actions[i]);
        CHECK_INT(match("GET", path, &r, &id, allow), ROUTE_BAD_METHOD);
        CHECK_STR(allow, "POST");
    }
    const char *gets[] = {"/queues", "/healthz", "/readyz", "/metrics"};
    for (size_t i = 0; i < 4; i++) {
        CHECK_INT(match("POST", gets[i], &r, &id, allow), ROUTE_BAD_METHOD);
        CHECK_STR(allow, "GET");
    }
    /* Method names are case-sensitive (RFC 9110). */
    CHECK_INT(match("get", "/healthz", &r, &id, allow), ROUTE_BAD_METHOD);
    /* A too-small buffer is never overrun. */
    char tiny[5];
    CHECK_INT(router_match("DELETE", "/jobs", &r, &id, tiny, sizeof tiny), ROUTE_BAD_METHOD);
    CHECK_STR(tiny, "GET");
}

TEST(print_lists_every_route)
{
    FILE *f = tmpfile();
    CHECK(f != NULL);
    router_print(f);
    rewind(f);
    char line[128];
    size_t n = 0;
    int saw_batch = 0, saw_complete = 0;
    while (fgets(line, sizeof line, f)) {
        n++;
        saw_batch |= strcmp(line, "POST /jobs/batch\n") == 0;
        saw_complete |= strcmp(line, "POST /jobs/{id}/complete\n") == 0;
    }
    fclose(f);
    CHECK_INT(n, router_table_len);
    CHECK(saw_batch);
    CHECK(saw_complete);
}

TEST_MAIN(TEST_ENTRY(every_route_present), TEST_ENTRY(ids), TEST_ENTRY(not_found),
          TEST_ENTRY(method_not_allowed_lists_allow), TEST_ENTRY(print_lists_every_route))
