/* What the jobq client prints and the exit code it ends with: the server's JSON as it came
 * (--json, or stdout not a terminal), tables and name/value views on a terminal, the
 * server's error code and message on stderr. */
#ifndef JOBQ_CLI_OUT_H
#define JOBQ_CLI_OUT_H

#include <stdio.h>

#include <cjson/cJSON.h>

#include "http.h"

/* Exit codes, documented in `jobq --help`. */
enum cli_exit {
    CLI_OK = 0,          /* done */
    CLI_REFUSED = 1,     /* the server said no (4xx); its code and message are on stderr */
    CLI_USAGE = 2,       /* bad command line */
    CLI_UNREACHABLE = 3, /* no answer from the server, or a 5xx */
};

/* One run of a subcommand: where the server is and how to print. */
struct cli {
    const char *url;   /* borrowed */
    const char *token; /* borrowed; NULL without JOBQ_TOKEN */
    int json;          /* print JSON rather than tables */
    struct http *http; /* owned by main */
};

/* Send a request (body borrowed, may be NULL) and wait for the answer (30 s at most).
 * Returns CLI_OK with *r holding a 2xx answer; otherwise prints why to stderr ("jobq:
 * not_found: no job 42") and returns CLI_REFUSED for a 4xx, CLI_UNREACHABLE without an
 * answer or for a 5xx. *r is filled in every case; release it with http_reply_clear(). */
int cli_request(struct cli *c, const char *method, const char *path, const cJSON *body,
                struct http_reply *r);

/* Print the answer's body as it came, one line (JSON mode). */
void out_json(const struct http_reply *r);

/* Print an object's members as "name  value" lines, in the server's order. */
void out_object(const cJSON *obj);

/* A JSON value as a table cell: strings as they are (control characters as spaces), null as
 * "-", everything else as compact JSON; cut to max characters with "…" when longer
 * (max 0: never cut). Returns a malloc'ed string, or NULL when out of memory. */
char *out_cell(const cJSON *v, size_t max);

/* An epoch seconds value as "2025-11-21 10:00:00" (UTC), or out_cell()'s text when it is
 * not a number. Malloc'ed, or NULL when out of memory. */
char *out_time(const cJSON *v);

/* A column of out_rows(): its heading and the member of each row object it shows. */
struct column {
    const char *head;
    const char *field;
    int is_time; /* epoch seconds: shown with out_time() */
    size_t max;  /* cut longer cells to this many characters (0: never) */
};

#define OUT_MAX_COLUMNS 16

/* Print rows (a JSON array of objects, or one object: one row) as a table of cols[0..n),
 * 1 <= n <= OUT_MAX_COLUMNS. */
void out_rows(const cJSON *rows, const struct column *cols, int n);

/* A table: headings, then rows of cells, printed with columns padded to their widest cell. */
struct table {
    int ncols;
    const char *const *heads; /* borrowed */
    char **cells;             /* nrows * ncols, owned */
    int nrows, cap;
};

/* Start an empty table with ncols columns named heads[] (borrowed). This function can't
 * fail. */
void table_init(struct table *t, const char *const *heads, int ncols);

/* Append a row: consumes cells[0..ncols) (malloc'ed strings; a NULL cell prints as "?").
 * Returns 0, or -1 when out of memory (the cells are freed all the same). */
int table_add(struct table *t, char **cells);

/* Print the table to f. */
void table_print(const struct table *t, FILE *f);

void table_clear(struct table *t);

#endif
