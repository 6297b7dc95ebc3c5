/* The jobq subcommands: one row each, with its option table (which also prints its --help)
 * and the function that runs it. */
#ifndef JOBQ_CLI_COMMANDS_H
#define JOBQ_CLI_COMMANDS_H

#include "args.h"
#include "out.h"

struct command {
    const char *name;
    const char *usage;   /* what follows "jobq NAME" in the usage line */
    const char *summary; /* one line for `jobq --help` */
    const struct opt *opts;
    /* Run with the parsed arguments; returns an exit code (enum cli_exit). */
    int (*run)(struct cli *c, const struct args *a);
};

extern const struct command cmd_enqueue, cmd_get, cmd_list, cmd_attempts, cmd_deps, cmd_retry,
    cmd_cancel;                                                          /* cmd_jobs.c */
extern const struct command cmd_stats, cmd_pause, cmd_resume, cmd_purge; /* cmd_queues.c */
extern const struct command cmd_work;                                    /* work.c */
extern const struct command cmd_limits;                                  /* cmd_limits.c */
extern const struct command cmd_schedules;                               /* cmd_schedules.c */
extern const struct command cmd_events;                                  /* cmd_events.c */
extern const struct command cmd_webhooks;                                /* cmd_webhooks.c */

/* The positional argument a->pos[0] as a job id: returns it, or 0 after printing a usage
 * error (it is missing, extra arguments follow, or it is not a positive whole number). */
long long cmd_job_id(const struct args *a, const char *who);

/* The one positional argument a->pos[0] (a queue name): returns it, or NULL after printing
 * a usage error. */
const char *cmd_one_arg(const struct args *a, const char *who, const char *what);

/* Send the request, then print the answer: as it came in JSON mode, else with show(c, json)
 * (NULL: out_object). Returns the exit code (enum cli_exit). */
int cmd_send_show(struct cli *c, const char *method, const char *path, const cJSON *body,
                  void (*show)(const cJSON *json));

#endif
