/* Option parsing driven by a table; the same table prints --help. */
#include "args.h"

#include <stdlib.h>
#include <string.h>

#include "text.h"

const struct opt args_common[] = {
    {"url", 0, "URL", "the server (default: $JOBQ_URL, else http://127.0.0.1:8080)"},
    {"json", 0, NULL, "print the server's JSON answer (the default when stdout is no terminal)"},
    {"help", 'h', NULL, "print this help and exit"},
    {NULL, 0, NULL, NULL},
};

static const struct opt *find_long(const struct opt *opts, const char *name, size_t len)
{
    const struct opt *tables[2] = {opts, args_common};
    for (int t = 0; t < 2; t++) {
        for (const struct opt *o = tables[t]; o->name != NULL; o++) {
            if (strlen(o->name) == len && strncmp(o->name, name, len) == 0) {
                return o;
            }
        }
    }
    return NULL;
}

static const struct opt *find_short(const struct opt *opts, char letter)
{
    const struct opt *tables[2] = {opts, args_common};
    for (int t = 0; t < 2; t++) {
        for (const struct opt *o = tables[t]; o->name != NULL; o++) {
            if (o->letter != 0 && o->letter == letter) {
                return o;
            }
        }
    }
    return NULL;
}

/* Take one option at argv[*i]. Returns 0, or -1 after printing why. */
static int take_option(struct args *a, int argc, char **argv, int *i, const char *who)
{
    const char *word = argv[*i];
    const struct opt *o;
    const char *inline_value = NULL;
    if (word[1] == '-') {
        const char *name = word + 2;
        const char *eq = strchr(name, '=');
        size_t len = eq ? (size_t)(eq - name) : strlen(name);
        o = find_long(a->opts, name, len);
        inline_value = eq ? eq + 1 : NULL;
    } else {
        o = word[2] == '\0' ? find_short(a->opts, word[1]) : NULL;
    }
    if (o == NULL) {
        fprintf(stderr, "%s: unknown option %s (see %s --help)\n", who, word, who);
        return -1;
    }
    const char *value = NULL;
    if (o->arg != NULL) {
        if (inline_value != NULL) {
            value = inline_value;
        } else if (*i + 1 < argc) {
            value = argv[++*i];
        } else {
            fprintf(stderr, "%s: --%s needs a value (%s)\n", who, o->name, o->arg);
            return -1;
        }
    } else if (inline_value != NULL) {
        fprintf(stderr, "%s: --%s takes no value\n", who, o->name);
        return -1;
    }
    a->hits[a->nhits].opt = o;
    a->hits[a->nhits].value = value;
    a->nhits++;
    return 0;
}

int args_parse(struct args *a, const struct opt *opts, int argc, char **argv,
               int stop_at_positional, const char *who)
{
    memset(a, 0, sizeof(*a));
    a->opts = opts;
    /* Each argument is at most one hit or one positional. */
    a->hits = calloc((size_t)argc + 1, sizeof(*a->hits));
    a->pos = calloc((size_t)argc + 1, sizeof(*a->pos));
    if (a->hits == NULL || a->pos == NULL) {
        fprintf(stderr, "%s: out of memory\n", who);
        return -1;
    }
    for (int i = 0; i < argc; i++) {
        const char *word = argv[i];
        if (strcmp(word, "--") == 0) {
            a->rest = argv + i + 1;
            a->nrest = argc - i - 1;
            return 0;
        }
        if (word[0] == '-' && word[1] != '\0') {
            if (take_option(a, argc, argv, &i, who) != 0) {
                return -1;
            }
            continue;
        }
        if (stop_at_positional) {
            for (int k = i; k < argc; k++) {
                a->pos[a->npos++] = argv[k];
            }
            return 0;
        }
        a->pos[a->npos++] = argv[i];
    }
    return 0;
}

void args_rest_positional(struct args *a)
{
    for (int i = 0; i < a->nrest; i++) { /* pos has room: one slot per argument */
        a->pos[a->npos++] = a->rest[i];
    }
    a->rest = NULL;
    a->nrest = 0;
}

const char *args_get(const struct args *a, const char *name)
{
    const char *v = NULL;
    for (int i = 0; i < a->nhits; i++) {
        if (strcmp(a->hits[i].opt->name, name) == 0) {
            v = a->hits[i].value;
        }
    }
    return v;
}

int args_has(const struct args *a, const char *name)
{
    for (int i = 0; i < a->nhits; i++) {
        if (strcmp(a->hits[i].opt->name, name) == 0) {
            return 1;
        }
    }
    return 0;
}

int args_all(const struct args *a, const char *name, const char **out, int max)
{
    int n = 0;
    for (int i = 0; i < a->nhits; i++) {
        if (strcmp(a->hits[i].opt->name, name) == 0) {
            if (n < max) {
                out[n] = a->hits[i].value;
            }
            n++;
        }
    }
    return n;
}

int args_int(const struct args *a, const char *name, long long lo, long long hi, long long *out,
             const char *who)
{
    const char *s = args_get(a, name);
    if (s == NULL) {
        return 0;
    }
    long long v;
    if (text_to_ll(s, &v) != 0 || v < lo || v > hi) {
        fprintf(stderr, "%s: --%s takes a whole number from %lld to %lld, not '%s'\n", who, name,
                lo, hi, s);
        return -1;
    }
    *out = v;
    return 0;
}

static void help_rows(FILE *f, const struct opt *opts)
{
    for (const struct opt *o = opts; o->name != NULL; o++) {
        char flag[8] = "    ";
        if (o->letter != 0) {
            snprintf(flag, sizeof(flag), "-%c, ", o->letter);
        }
        char left[64];
        snprintf(left, sizeof(left), "%s--%s%s%s", flag, o->name, o->arg ? " " : "",
                 o->arg ? o->arg : "");
        fprintf(f, "  %-26s %s\n", left, o->help);
    }
}

void args_help(FILE *f, const struct opt *opts)
{
    fprintf(f, "\noptions:\n");
    help_rows(f, opts);
    help_rows(f, args_common);
}

void args_clear(struct args *a)
{
    if (a == NULL) {
        return;
    }
    free(a->hits);
    free(a->pos);
    memset(a, 0, sizeof(*a));
}
