/* ui: the dashboard's compiled-in files (ui_assets.h) against the route table, their content
 * types and ETags, and If-None-Match matching (api/h_ui.c). */
#include <string.h>

#include "handlers.h"
#include "router.h"
#include "testlib.h"
#include "ui.h"

/* Every file of ui/ has its GET row, served by handle_ui_asset, open without a token; every
 * such row has its file. */
TEST(routes_and_files_agree)
{
    CHECK(ui_assets_len >= 2);
    for (size_t i = 0; i < ui_assets_len; i++) {
        const struct route *r = NULL;
        long long id = 0;
        CHECK_INT(router_match("GET", ui_assets[i].path, &r, &id, NULL, 0), ROUTE_FOUND);
        CHECK(r->handler == handle_ui_asset);
        CHECK_INT(r->access, AUTH_ACCESS_OPEN);
        CHECK(ui_find(ui_assets[i].path) == &ui_assets[i]);
    }
    size_t rows = 0;
    for (size_t i = 0; i < router_table_len; i++) {
        if (router_table[i].handler != handle_ui_asset)
            continue;
        rows++;
        CHECK(ui_find(router_table[i].pattern) != NULL);
    }
    CHECK_INT(rows, ui_assets_len);
}

TEST(pages_types_and_etags)
{
    const struct ui_asset *page = ui_find("/ui/");
    CHECK(page != NULL);
    CHECK_STR(page->content_type, "text/html; charset=utf-8");
    CHECK(page->len > 0 && memmem(page->data, page->len, "<!doctype html>", 15) != NULL);
    CHECK(page->data[page->len] == '\0');
    CHECK_STR(ui_find("/ui/app.js")->content_type, "text/javascript; charset=utf-8");
    CHECK_STR(ui_find("/ui/app.css")->content_type, "text/css; charset=utf-8");
    for (size_t i = 0; i < ui_assets_len; i++) {
        const char *e = ui_assets[i].etag;
        CHECK_INT(strlen(e), 18);
        CHECK(e[0] == '"' && e[17] == '"');
        for (size_t k = 0; k < ui_assets_len; k++)
            CHECK(k == i || strcmp(e, ui_assets[k].etag) != 0);
    }
    CHECK(ui_find("/ui/index.html") == NULL);
    CHECK(ui_find("/ui") == NULL);
    CHECK(ui_find("/ui/APP.JS") == NULL);
    CHECK(ui_find(NULL) == NULL);
}

/* No inline script or style anywhere: the CSP would block them. */
TEST(no_inline_script_or_style)
{
    const struct ui_asset *page = ui_find("/ui/");
    CHECK(memmem(page->data, page->len, "<style", 6) == NULL);
    CHECK(memmem(page->data, page->len, "style=", 6) == NULL);
    CHECK(memmem(page->data, page->len, "<script>", 8) == NULL);
    CHECK(memmem(page->data, page->len, " onclick=", 9) == NULL);
}

TEST(if_none_match)
{
    static const struct {
        const char *header;
        int match;
    } cases[] = {
        {NULL, 0},
        {"", 0},
        {"\"0123456789abcdef\"", 1},
        {"W/\"0123456789abcdef\"", 1},
        {"*", 1},
        {"\"x\", \"0123456789abcdef\" ,\"y\"", 1},
        {"\"x\",,  W/\"0123456789abcdef\"\t", 1},
        {"\"0123456789abcde\"", 0},
        {"\"0123456789abcdef0\"", 0},
        {"0123456789abcdef", 0},
        {"w/\"0123456789abcdef\"", 0},
        {"**", 0},
        {",,,", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        CHECK_INT(ui_etag_matches(cases[i].header, "\"0123456789abcdef\""), cases[i].match);
}

TEST_MAIN(TEST_ENTRY(routes_and_files_agree), TEST_ENTRY(pages_types_and_etags),
          TEST_ENTRY(no_inline_script_or_style), TEST_ENTRY(if_none_match))
