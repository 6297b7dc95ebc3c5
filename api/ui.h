/* Serving the dashboard (ui_assets.h): the asset of a path, conditional requests, and the
 * headers every dashboard answer carries. The HTTP handlers are in handlers.h. */
#ifndef JOBQ_UI_H
#define JOBQ_UI_H

#include "ui_assets.h"

/* The Content-Security-Policy of every dashboard answer: scripts, styles and API calls from
 * this origin only, no inline script or style, no framing, no <base>, no form posts. */
#define UI_CSP                                                                                     \
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "                \
    "img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"

/* Where GET /ui redirects (308). */
#define UI_HOME "/ui/"

/* The asset served at path (exact match, case-sensitive), or NULL. This function can't fail. */
const struct ui_asset *ui_find(const char *path);

/* 1 when an If-None-Match header value (NULL: absent) matches etag (quoted, strong): "*", or
 * a comma-separated list holding etag, weak ("W/" prefix) or not, as RFC 9110 13.1.2's weak
 * comparison says; 0 otherwise. This function can't fail. */
int ui_etag_matches(const char *if_none_match, const char *etag);

#endif
