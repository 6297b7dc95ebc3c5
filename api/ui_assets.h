/* The dashboard's files, compiled into the binary: ui/embed.cmake turns every file of ui/
 * into a C array and a row of ui_assets[] at configure time (generated/ui_assets.c in the
 * build directory). Each asset is also a row of the route table (router.c), served by
 * handle_ui_asset() (h_ui.c); the unit test checks that the two agree. */
#ifndef JOBQ_UI_ASSETS_H
#define JOBQ_UI_ASSETS_H

#include <stddef.h>

struct ui_asset {
    const char *path;          /* "/ui/" for ui/index.html, else "/ui/<file name>" */
    const char *content_type;  /* "text/html; charset=utf-8", "text/javascript; ...", ... */
    const char *etag;          /* a strong validator, quoted: "\"0123456789abcdef\"" */
    const unsigned char *data; /* the file's bytes, static, followed by a NUL not counted */
    size_t len;
};

/* Every asset, sorted by file name, and how many there are. Read-only: any thread may read. */
extern const struct ui_asset ui_assets[];
extern const size_t ui_assets_len;

#endif
