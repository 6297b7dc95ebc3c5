/* The dashboard: its files (ui_assets.h) with strict headers, and GET /ui's redirect. */
#include <string.h>

#include "handlers.h"
#include "reply.h"
#include "ui.h"

/* The dashboard's pages are cheap to check and change with every upgrade of jobqd: a browser
 * keeps them, but asks each time whether they changed (If-None-Match), and gets a 304. */
#define UI_CACHE "no-cache"

const struct ui_asset *ui_find(const char *path)
{
    for (size_t i = 0; path && i < ui_assets_len; i++)
        if (strcmp(ui_assets[i].path, path) == 0)
            return &ui_assets[i];
    return NULL;
}

int ui_etag_matches(const char *if_none_match, const char *etag)
{
    size_t elen = strlen(etag);
    for (const char *p = if_none_match; p && *p;) {
        p += strspn(p, " \t,");
        size_t n = strcspn(p, ",");
        size_t end = n;
        while (end > 0 && (p[end - 1] == ' ' || p[end - 1] == '\t'))
            end--;
        const char *tag = p;
        if (end >= 2 && tag[0] == 'W' && tag[1] == '/') {
            tag += 2;
            end -= 2;
        }
        if ((end == 1 && tag[0] == '*') || (end == elen && memcmp(tag, etag, elen) == 0))
            return 1;
        p += n;
    }
    return 0;
}

enum MHD_Result handle_ui_asset(struct request *rq)
{
    const struct ui_asset *a = ui_find(rq->url);
    if (!a) /* a route without a file: the unit test keeps the two in step */
        return reply_error(rq, ERR_NOT_FOUND, "no dashboard file at this path");
    const char *inm =
        MHD_lookup_connection_value(rq->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_IF_NONE_MATCH);
    int fresh = ui_etag_matches(inm, a->etag);
    return reply_static(rq, fresh ? MHD_HTTP_NOT_MODIFIED : MHD_HTTP_OK, a->content_type, a->data,
                        fresh ? 0 : a->len, MHD_HTTP_HEADER_ETAG, a->etag,
                        MHD_HTTP_HEADER_CACHE_CONTROL, UI_CACHE, "Content-Security-Policy", UI_CSP,
                        "X-Content-Type-Options", "nosniff", "Referrer-Policy", "no-referrer",
                        NULL);
}

enum MHD_Result handle_ui_redirect(struct request *rq)
{
    static const char body[] = "the dashboard is at " UI_HOME "\n";
    return reply_static(rq, MHD_HTTP_PERMANENT_REDIRECT, "text/plain; charset=utf-8", body,
                        sizeof body - 1, MHD_HTTP_HEADER_LOCATION, UI_HOME,
                        "Content-Security-Policy", UI_CSP, "X-Content-Type-Options", "nosniff",
                        NULL);
}
