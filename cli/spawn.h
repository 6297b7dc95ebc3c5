/* Commands run by `jobq work`: each in a process group of its own, its stdin a file holding
 * the input, its stdout and stderr in pipes, and a descriptor that says when it exits. */
#ifndef JOBQ_CLI_SPAWN_H
#define JOBQ_CLI_SPAWN_H

#include <stddef.h>
#include <sys/types.h>

struct child {
    pid_t pid;  /* also the id of its process group */
    int pidfd;  /* readable once it has exited, or -1 (the kernel has none: poll instead) */
    int out_fd; /* its stdout, read end, non-blocking; -1 once closed */
    int err_fd; /* its stderr, read end, non-blocking; -1 once closed */
};

/* Start argv[0] (searched in PATH) with arguments argv and environment envp (both borrowed,
 * NULL-terminated) in a new process group, reading input[0..len) on stdin, with every
 * signal at its default and none blocked. Returns 0 and fills *ch, or an errno value when
 * it could not start (not found, not executable, out of resources); *ch then holds nothing
 * to release. Safe to call from several threads at once. */
int spawn_start(struct child *ch, char *const argv[], char *const envp[], const char *input,
                size_t len);

/* 1 when the command (the group's leader) has exited, else 0. Does not reap it. */
int spawn_exited(const struct child *ch);

/* Kill the process group (SIGKILL): the command and whatever it started that is still in
 * its group. Then wait for the command and set *wstatus (a waitpid status). Call it when
 * spawn_exited() said 1 (it then returns at once: what it left behind is killed), or to
 * stop a command that is still running. */
void spawn_reap(struct child *ch, int *wstatus);

/* Close the descriptors left open. Accepts a child whose start failed. */
void spawn_close(struct child *ch);

#endif
