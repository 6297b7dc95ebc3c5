/* Printing: raw JSON, name/value views and padded tables; errors and exit codes. */
#include "out.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define REQUEST_TIMEOUT_MS 30000L

int cli_request(struct cli *c, const char *method, const char *path, const cJSON *body,
                struct http_reply *r)
{
    enum http_outcome o = http_call(c->http, method, path, body, REQUEST_TIMEOUT_MS, -1, r);
    if (o != HTTP_ANSWERED) {
        fprintf(stderr, "jobq: cannot reach %s: %s\n", c->url, r->error);
        return CLI_UNREACHABLE;
    }
    if (r->status >= 200 && r->status < 300) {
        return CLI_OK;
    }
    const char *code = http_error_code(r);
    const char *message = http_error_message(r);
    if (code != NULL && message != NULL) {
        fprintf(stderr, "jobq: %s: %s\n", code, message);
    } else {
        fprintf(stderr, "jobq: the server answered %ld to %s %s\n", r->status, method, path);
    }
    return r->status >= 400 && r->status < 500 ? CLI_REFUSED : CLI_UNREACHABLE;
}

void out_json(const struct http_reply *r)
{
    size_t n = r->len;
    while (n > 0 && (r->body[n - 1] == '\n' || r->body[n - 1] == '\r')) {
        n--;
    }
    if (n > 0) {
        fwrite(r->body, 1, n, stdout);
    }
    fputc('\n', stdout);
}

/* Characters (UTF-8 code points) in s. */
static size_t width(const char *s)
{
    size_t n = 0;
    for (; *s; s++) {
        n += ((unsigned char)*s & 0xC0) != 0x80;
    }
    return n;
}

char *out_cell(const cJSON *v, size_t max)
{
    char *s;
    if (v == NULL || cJSON_IsNull(v)) {
        s = strdup("-");
    } else if (cJSON_IsString(v)) {
        s = strdup(v->valuestring);
    } else {
        s = cJSON_PrintUnformatted(v);
    }
    if (s == NULL) {
        return NULL;
    }
    for (char *p = s; *p; p++) {
        if ((unsigned char)*p < 0x20 || *p == 0x7F) {
            *p = ' ';
        }
    }
    if (max > 0 && width(s) > max) {
        size_t chars = 0;
        char *p = s;
        for (; *p; p++) { /* stop before the (max)th character starts */
            if (((unsigned char)*p & 0xC0) != 0x80 && ++chars == max) {
                break;
            }
        }
        size_t keep = (size_t)(p - s);
        char *cut = malloc(keep + sizeof("\xE2\x80\xA6"));
        if (cut != NULL) {
            memcpy(cut, s, keep);
            memcpy(cut + keep, "\xE2\x80\xA6", sizeof("\xE2\x80\xA6")); /* "…" */
        }
        free(s);
        s = cut;
    }
    return s;
}

char *out_time(const cJSON *v)
{
    if (!cJSON_IsNumber(v)) {
        return out_cell(v, 0);
    }
    time_t t = (time_t)v->valuedouble;
    struct tm tm;
    char buf[32];
    if (gmtime_r(&t, &tm) == NULL || strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S", &tm) == 0) {
        return out_cell(v, 0);
    }
    return strdup(buf);
}

void out_object(const cJSON *obj)
{
    size_t wide = 0;
    const cJSON *m;
    cJSON_ArrayForEach(m, obj)
    {
        size_t w = strlen(m->string);
        wide = w > wide ? w : wide;
    }
    cJSON_ArrayForEach(m, obj)
    {
        int is_time = cJSON_IsNumber(m) && strlen(m->string) > 3 &&
                      (strcmp(m->string + strlen(m->string) - 3, "_at") == 0);
        char *value = is_time ? out_time(m) : out_cell(m, 0);
        printf("%-*s  %s\n", (int)wide, m->string, value ? value : "?");
        free(value);
    }
}

void table_init(struct table *t, const char *const *heads, int ncols)
{
    memset(t, 0, sizeof(*t));
    t->heads = heads;
    t->ncols = ncols;
}

int table_add(struct table *t, char **cells)
{
    if (t->nrows == t->cap) {
        int cap = t->cap ? t->cap * 2 : 16;
        char **grown = realloc(t->cells, (size_t)cap * (size_t)t->ncols * sizeof(char *));
        if (grown == NULL) {
            for (int i = 0; i < t->ncols; i++) {
                free(cells[i]);
            }
            return -1;
        }
        t->cells = grown;
        t->cap = cap;
    }
    memcpy(t->cells + (size_t)t->nrows * (size_t)t->ncols, cells,
           (size_t)t->ncols * sizeof(char *));
    t->nrows++;
    return 0;
}

static const char *cell_at(const struct table *t, int row, int col)
{
    if (row < 0) {
        return t->heads[col];
    }
    const char *s = t->cells[(size_t)row * (size_t)t->ncols + (size_t)col];
    return s ? s : "?";
}

void table_print(const struct table *t, FILE *f)
{
    size_t *wide = calloc((size_t)t->ncols, sizeof(size_t));
    if (wide == NULL) {
        return;
    }
    for (int c = 0; c < t->ncols; c++) {
        wide[c] = 0;
        for (int r = -1; r < t->nrows; r++) {
            size_t w = width(cell_at(t, r, c));
            wide[c] = w > wide[c] ? w : wide[c];
        }
    }
    for (int r = -1; r < t->nrows; r++) {
        for (int c = 0; c < t->ncols; c++) {
            const char *s = cell_at(t, r, c);
            if (c == t->ncols - 1) {
                fprintf(f, "%s\n", s);
            } else {
                fprintf(f, "%s%*s", s, (int)(wide[c] - width(s) + 2), "");
            }
        }
    }
    free(wide);
}

void table_clear(struct table *t)
{
    if (t == NULL) {
        return;
    }
    for (int i = 0; i < t->nrows * t->ncols; i++) {
        free(t->cells[i]);
    }
    free(t->cells);
    memset(t, 0, sizeof(*t));
}

/* One row of out_rows(): consumed by the table. Returns table_add()'s result. */
static int add_row(struct table *t, const cJSON *row, const struct column *cols, int n)
{
    char *cells[OUT_MAX_COLUMNS];
    for (int i = 0; i < n; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(row, cols[i].field);
        cells[i] = cols[i].is_time ? out_time(v) : out_cell(v, cols[i].max);
    }
    return table_add(t, cells);
}

void out_rows(const cJSON *rows, const struct column *cols, int n)
{
    const char *heads[OUT_MAX_COLUMNS];
    assert(n > 0 && n <= OUT_MAX_COLUMNS);
    for (int i = 0; i < n; i++) {
        heads[i] = cols[i].head;
    }
    struct table t;
    table_init(&t, heads, n);
    if (cJSON_IsObject(rows)) {
        add_row(&t, rows, cols, n);
    } else {
        const cJSON *row;
        cJSON_ArrayForEach(row, rows)
        {
            if (add_row(&t, row, cols, n) != 0) {
                break;
            }
        }
    }
    table_print(&t, stdout);
    table_clear(&t);
}
