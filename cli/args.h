/* Command-line options of the jobq client: each subcommand has one table of options that
 * both parses its arguments and prints its --help. */
#ifndef JOBQ_CLI_ARGS_H
#define JOBQ_CLI_ARGS_H

#include <stdio.h>

struct opt {
    const char *name; /* long name without the dashes: "queue" */
    char letter;      /* short form (-q), or 0 */
    const char *arg;  /* the value's name in --help ("NAME"), or NULL for a switch */
    const char *help; /* one line */
};

/* Options every subcommand takes: --url URL, --json, -h/--help. */
extern const struct opt args_common[];

struct args {
    const struct opt *opts; /* the subcommand's table, ended by a row with name NULL */
    int nhits;
    struct args_hit {
        const struct opt *opt;
        const char *value; /* borrowed from argv; NULL for a switch */
    } * hits;
    char **pos; /* positional arguments (borrowed from argv) */
    int npos;
    char **rest; /* what follows "--" (borrowed), NULL when there is no "--" */
    int nrest;
};

/* Parse argv[0..argc) (without the program and subcommand names) against `opts` and
 * args_common. "--name VALUE", "--name=VALUE", "-l VALUE" and switches; "--" ends the
 * options and what follows goes to rest. With stop_at_positional, parsing also ends at the
 * first positional argument, which with everything after it goes to pos.
 * Returns 0, or -1 after printing to stderr why the arguments are wrong (prefixed with
 * `who`, e.g. "jobq list"). The caller releases *a with args_clear(), in both cases. */
int args_parse(struct args *a, const struct opt *opts, int argc, char **argv,
               int stop_at_positional, const char *who);

/* Count what followed "--" as positional arguments too (for subcommands whose arguments
 * may start with '-', e.g. a payload of -5). This function can't fail. */
void args_rest_positional(struct args *a);

/* The value of the last --name given, or NULL when it was not given. */
const char *args_get(const struct args *a, const char *name);

/* 1 when the switch or option --name was given, else 0. */
int args_has(const struct args *a, const char *name);

/* Every value given for --name, in order: fills out[0..max) and returns how many there
 * were (which may exceed max; only max are stored). */
int args_all(const struct args *a, const char *name, const char **out, int max);

/* Parse --name as a whole number into *out when given (else *out is left alone) and check
 * lo <= value <= hi. Returns 0, or -1 after printing why to stderr. */
int args_int(const struct args *a, const char *name, long long lo, long long hi, long long *out,
             const char *who);

/* Print the table's options (then the common ones) for --help. */
void args_help(FILE *f, const struct opt *opts);

void args_clear(struct args *a);

#endif
