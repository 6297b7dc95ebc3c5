/* jobq: the command-line client of jobqd. Reads the common options, finds the subcommand in
 * one table, parses its options with its own table and runs it; the exit code says how it
 * went (enum cli_exit, listed by --help). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "work.h"

#ifndef JOBQ_VERSION
#define JOBQ_VERSION "dev"
#endif

#define DEFAULT_URL "http://127.0.0.1:8080"

static const struct command *const commands[] = {
    &cmd_enqueue,   &cmd_get,    &cmd_list,     &cmd_attempts, &cmd_deps,  &cmd_stats,
    &cmd_retry,     &cmd_cancel, &cmd_pause,    &cmd_resume,   &cmd_purge, &cmd_limits,
    &cmd_schedules, &cmd_events, &cmd_webhooks, &cmd_work,
};
#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

static void usage(FILE *f)
{
    fprintf(f,
            "usage: jobq [--url URL] [--json] COMMAND [options] [arguments]\n"
            "\nThe command-line client of jobqd %s.\n\ncommands:\n",
            JOBQ_VERSION);
    for (size_t i = 0; i < NCOMMANDS; i++) {
        fprintf(f, "  %-10s %s\n", commands[i]->name, commands[i]->summary);
    }
    fprintf(f, "\n'jobq COMMAND --help' describes a command and its options.\n");
    args_help(f, (const struct opt[]){{NULL, 0, NULL, NULL}});
    fprintf(f,
            "\nenvironment:\n"
            "  JOBQ_URL    the server when --url is not given (default %s)\n"
            "  JOBQ_TOKEN  a bearer token, sent as 'Authorization: Bearer TOKEN'\n"
            "\noutput: tables on a terminal; the server's JSON with --json or when stdout is\n"
            "not a terminal.\n"
            "\nexit codes:\n"
            "  0  done\n"
            "  1  the server said no (4xx): its error code and message are on stderr\n"
            "  2  usage error (bad command line)\n"
            "  3  cannot reach the server, or it failed (5xx)\n",
            DEFAULT_URL);
}

static void command_help(const struct command *cmd)
{
    printf("usage: jobq %s %s\n\n%s.\n", cmd->name, cmd->usage, cmd->summary);
    if (cmd == &cmd_work) {
        work_help(stdout);
    }
    args_help(stdout, cmd->opts);
}

static const struct command *find_command(const char *name)
{
    for (size_t i = 0; i < NCOMMANDS; i++) {
        if (strcmp(commands[i]->name, name) == 0) {
            return commands[i];
        }
    }
    return NULL;
}

/* A token that cannot break the Authorization header: printable ASCII, no spaces. */
static int token_ok(const char *t)
{
    for (; *t; t++) {
        if (*t <= ' ' || *t >= 0x7F) {
            return 0;
        }
    }
    return 1;
}

/* Run the subcommand of argv (the common options before it already in `global`). */
static int run(int argc, char **argv, const struct args *global)
{
    const struct command *cmd = find_command(argv[0]);
    if (cmd == NULL) {
        fprintf(stderr, "jobq: unknown command '%s' (see jobq --help)\n", argv[0]);
        return CLI_USAGE;
    }
    char who[32];
    snprintf(who, sizeof(who), "jobq %s", cmd->name);
    struct args a;
    if (args_parse(&a, cmd->opts, argc - 1, argv + 1, 0, who) != 0) {
        args_clear(&a);
        return CLI_USAGE;
    }
    if (cmd != &cmd_work) {
        args_rest_positional(&a);
    }
    if (args_has(&a, "help")) {
        command_help(cmd);
        args_clear(&a);
        return CLI_OK;
    }
    const char *url = args_get(&a, "url");
    url = url ? url : args_get(global, "url");
    url = url ? url : getenv("JOBQ_URL");
    url = url && *url ? url : DEFAULT_URL;
    const char *token = getenv("JOBQ_TOKEN");
    token = token && *token ? token : NULL;
    if (token != NULL && !token_ok(token)) {
        fprintf(stderr, "jobq: JOBQ_TOKEN holds spaces or control characters\n");
        args_clear(&a);
        return CLI_USAGE;
    }
    struct cli c = {
        .url = url,
        .token = token,
        .json = args_has(&a, "json") || args_has(global, "json") || !isatty(STDOUT_FILENO),
        .http = http_new(url, token),
    };
    int rc = CLI_UNREACHABLE;
    if (c.http == NULL) {
        fprintf(stderr, "jobq: out of memory\n");
    } else {
        rc = cmd->run(&c, &a);
    }
    http_free(c.http);
    args_clear(&a);
    return rc;
}

int main(int argc, char **argv)
{
    signal(SIGPIPE, SIG_IGN); /* a closed stdout or socket is an error return, not a death */
    static const struct opt none[] = {{NULL, 0, NULL, NULL}};
    struct args global;
    int rc;
    if (args_parse(&global, none, argc - 1, argv + 1, 1, "jobq") != 0) {
        rc = CLI_USAGE;
    } else if (args_has(&global, "help")) {
        usage(stdout);
        rc = CLI_OK;
    } else if (global.npos == 0) {
        usage(stderr);
        rc = CLI_USAGE;
    } else if (http_global_init() != 0) {
        fprintf(stderr, "jobq: libcurl did not start\n");
        rc = CLI_UNREACHABLE;
    } else {
        rc = run(global.npos, global.pos, &global);
        http_global_cleanup();
    }
    args_clear(&global);
    if (fflush(stdout) != 0 && rc == CLI_OK) {
        perror("jobq: writing the output");
        rc = CLI_UNREACHABLE;
    }
    return rc;
}
