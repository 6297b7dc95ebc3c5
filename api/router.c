/* The one route table, matching, 404 and 405 (see router.h). */
#include "router.h"

#include <stdint.h>
#include <string.h>

#include "fields.h"
#include "handlers.h"
#include "reply.h"

/* The access column: producers enqueue, workers claim and report, everyone with a token
 * reads, admins do everything; the health checks and the dashboard's files are open (auth.h). */
const struct route router_table[] = {
    {"POST", "/jobs", handle_enqueue, 1, AUTH_ACCESS_PRODUCE},
    {"GET", "/jobs", handle_list_jobs, 0, AUTH_ACCESS_READ},
    {"POST", "/jobs/batch", handle_enqueue_batch, 1, AUTH_ACCESS_PRODUCE},
    {"GET", "/jobs/{id}", handle_get_job, 0, AUTH_ACCESS_READ},
    {"GET", "/jobs/{id}/attempts", handle_attempts, 0, AUTH_ACCESS_READ},
    {"GET", "/jobs/{id}/dependencies", handle_dependencies, 0, AUTH_ACCESS_READ},
    {"GET", "/jobs/{id}/dependents", handle_dependents, 0, AUTH_ACCESS_READ},
    {"POST", "/jobs/{id}/heartbeat", handle_heartbeat, 1, AUTH_ACCESS_WORK},
    {"POST", "/jobs/{id}/complete", handle_complete, 1, AUTH_ACCESS_WORK},
    {"POST", "/jobs/{id}/fail", handle_fail, 1, AUTH_ACCESS_WORK},
    {"POST", "/jobs/{id}/snooze", handle_snooze, 1, AUTH_ACCESS_WORK},
    {"POST", "/jobs/{id}/cancel", handle_cancel, 0, AUTH_ACCESS_ADMIN},
    {"POST", "/jobs/{id}/retry", handle_retry, 0, AUTH_ACCESS_ADMIN},
    {"POST", "/claim", handle_claim, 1, AUTH_ACCESS_WORK},
    {"GET", "/queues", handle_queues, 0, AUTH_ACCESS_READ},
    {"GET", "/stats/throughput", handle_throughput, 0, AUTH_ACCESS_READ},
    {"GET", "/events", handle_events, 0, AUTH_ACCESS_READ},
    {"POST", "/queues/{name}/pause", handle_pause, 0, AUTH_ACCESS_ADMIN},
    {"POST", "/queues/{name}/resume", handle_resume, 0, AUTH_ACCESS_ADMIN},
    {"DELETE", "/queues/{name}/jobs", handle_purge, 0, AUTH_ACCESS_ADMIN},
    {"GET", "/limits", handle_limits, 0, AUTH_ACCESS_READ},
    {"GET", "/limits/{key}", handle_limit_get, 0, AUTH_ACCESS_READ},
    {"PUT", "/limits/{key}", handle_limit_put, 1, AUTH_ACCESS_ADMIN},
    {"DELETE", "/limits/{key}", handle_limit_delete, 0, AUTH_ACCESS_ADMIN},
    {"GET", "/schedules", handle_schedules, 0, AUTH_ACCESS_READ},
    {"GET", "/schedules/{name}", handle_schedule_get, 0, AUTH_ACCESS_READ},
    {"PUT", "/schedules/{name}", handle_schedule_put, 1, AUTH_ACCESS_ADMIN},
    {"DELETE", "/schedules/{name}", handle_schedule_delete, 0, AUTH_ACCESS_ADMIN},
    {"GET", "/webhooks", handle_webhooks, 0, AUTH_ACCESS_ADMIN},
    {"GET", "/webhooks/{name}", handle_webhook_get, 0, AUTH_ACCESS_ADMIN},
    {"PUT", "/webhooks/{name}", handle_webhook_put, 1, AUTH_ACCESS_ADMIN},
    {"DELETE", "/webhooks/{name}", handle_webhook_delete, 0, AUTH_ACCESS_ADMIN},
    {"GET", "/healthz", handle_healthz, 0, AUTH_ACCESS_OPEN},
    {"GET", "/readyz", handle_readyz, 0, AUTH_ACCESS_OPEN},
    /* The dashboard's files hold no data (its API calls carry the token): open. One row per
     * file of ui/ (ui_assets.h); unit.ui checks that they match. */
    {"GET", "/ui", handle_ui_redirect, 0, AUTH_ACCESS_OPEN},
    {"GET", "/ui/", handle_ui_asset, 0, AUTH_ACCESS_OPEN},
    {"GET", "/ui/api.js", handle_ui_asset, 0, AUTH_ACCESS_OPEN},
    {"GET", "/ui/app.css", handle_ui_asset, 0, AUTH_ACCESS_OPEN},
    {"GET", "/ui/app.js", handle_ui_asset, 0, AUTH_ACCESS_OPEN},
    {"GET", "/ui/chart.js", handle_ui_asset, 0, AUTH_ACCESS_OPEN},
    {"GET", "/ui/dom.js", handle_ui_asset, 0, AUTH_ACCESS_OPEN},
    {"GET", "/ui/jobs.js", handle_ui_asset, 0, AUTH_ACCESS_OPEN},
    {"GET", "/ui/limits.js", handle_ui_asset, 0, AUTH_ACCESS_OPEN},
    {"GET", "/ui/schedules.js", handle_ui_asset, 0, AUTH_ACCESS_OPEN},
    {"GET", "/ui/live.js", handle_ui_asset, 0, AUTH_ACCESS_OPEN},
    {"GET", "/ui/webhooks.js", handle_ui_asset, 0, AUTH_ACCESS_OPEN},
    {"GET", "/metrics", handle_metrics, 0, AUTH_ACCESS_READ},
};

const size_t router_table_len = sizeof router_table / sizeof router_table[0];

#define ID_PARAM "{id}"
#define NAME_PARAM "{name}" /* any segment; the handler checks it (a bad name is 400) */
#define KEY_PARAM "{key}" /* the rest of the path, '/' included, not empty; the handler checks it */

/* Parse s[0..n) as a positive decimal int64 without sign or leading zeros. */
static int parse_id(const char *s, size_t n, long long *out)
{
    if (n == 0 || n > 19 || s[0] == '0')
        return -1;
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (uint64_t)(s[i] - '0'); /* 19 digits fit in uint64 */
    }
    if (v > (uint64_t)INT64_MAX)
        return -1;
    *out = (long long)v;
    return 0;
}

/* Match path against pattern segment by segment. Returns 1 and sets *id on a match. */
static int path_matches(const char *pattern, const char *path, long long *id)
{
    long long found = 0;
    const char *p = pattern, *u = path;
    for (;;) {
        if (*p != '/' || *u != '/')
            return 0;
        p++;
        u++;
        size_t plen = strcspn(p, "/"), ulen = strcspn(u, "/");
        if (plen == strlen(KEY_PARAM) && memcmp(p, KEY_PARAM, plen) == 0) {
            if (*u == '\0')
                return 0;
            *id = found;
            return 1;
        }
        if (plen == strlen(ID_PARAM) && memcmp(p, ID_PARAM, plen) == 0) {
            if (parse_id(u, ulen, &found) < 0)
                return 0;
        } else if (plen == strlen(NAME_PARAM) && memcmp(p, NAME_PARAM, plen) == 0) {
            if (ulen == 0)
                return 0;
        } else if (plen != ulen || memcmp(p, u, plen) != 0) {
            return 0;
        }
        p += plen;
        u += ulen;
        if (*p == '\0' && *u == '\0') {
            *id = found;
            return 1;
        }
    }
}

enum route_match router_match(const char *method, const char *path, const struct route **out,
                              long long *id, char *allow, size_t allow_len)
{
    const char *seen[sizeof router_table / sizeof router_table[0]];
    size_t nseen = 0;
    if (allow && allow_len)
        allow[0] = '\0';
    if (!method || !path)
        return ROUTE_NOT_FOUND;
    for (size_t i = 0; i < router_table_len; i++) {
        const struct route *r = &router_table[i];
        long long found;
        if (!path_matches(r->pattern, path, &found))
            continue;
        if (strcmp(r->method, method) == 0) {
            *out = r;
            *id = found;
            return ROUTE_FOUND;
        }
        /* Keep the other methods distinct and sorted, for a stable Allow header. */
        size_t k = 0;
        while (k < nseen && strcmp(seen[k], r->method) < 0)
            k++;
        if (k < nseen && strcmp(seen[k], r->method) == 0)
            continue;
        memmove(seen + k + 1, seen + k, (nseen - k) * sizeof seen[0]);
        seen[k] = r->method;
        nseen++;
    }
    if (nseen == 0)
        return ROUTE_NOT_FOUND;
    size_t used = 0;
    for (size_t k = 0; allow && k < nseen; k++) {
        size_t len = strlen(seen[k]);
        size_t sep = used ? 2 : 0;
        if (used + sep + len >= allow_len)
            break;
        memcpy(allow + used, ", ", sep);
        memcpy(allow + used + sep, seen[k], len + 1);
        used += sep + len;
    }
    return ROUTE_BAD_METHOD;
}

/* Run the handler of rq->route. A body sent to a route whose handler reads none is checked
 * first as a route that reads its body checks it (../shared/API.md Conventions: every request
 * body is a JSON object, with the UTF-8 and nesting rules), and answered when it is not. */
static enum MHD_Result run_handler(struct request *rq)
{
    if (!rq->route->reads_body && rq->body_len > 0 && !rq->state) {
        struct fields f;
        cJSON *root = NULL;
        if (fields_parse_body(&f, &root, rq->body, rq->body_len) != 0)
            return fields_reply(rq, &f);
        cJSON_Delete(root);
    }
    return rq->route->handler(rq);
}

enum MHD_Result router_dispatch(struct request *rq)
{
    const struct route *r = NULL;
    long long id = 0;
    char allow[64];
    switch (router_match(rq->method, rq->url, &r, &id, allow, sizeof allow)) {
    case ROUTE_FOUND:
        rq->route = r;
        rq->id = (int64_t)id;
        return run_handler(rq);
    case ROUTE_BAD_METHOD:
        return reply_method_not_allowed(rq, allow);
    case ROUTE_NOT_FOUND:
    default:
        break;
    }
    /* Echo the path as printable ASCII only, so the answer stays valid UTF-8 JSON. */
    char path[128];
    size_t n = 0;
    for (const char *u = rq->url ? rq->url : ""; *u && n + 1 < sizeof path; u++)
        path[n++] = (*u > 0x20 && *u < 0x7f) ? *u : '?';
    path[n] = '\0';
    return reply_error(rq, ERR_NOT_FOUND, "no route for %s", path);
}

void router_print(FILE *out)
{
    for (size_t i = 0; i < router_table_len; i++)
        fprintf(out, "%s %s\n", router_table[i].method, router_table[i].pattern);
}
