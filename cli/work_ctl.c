/* jobq work's shared controls: the monotonic clock, the log line, the stop and the sleep that
 * a stop cuts short (work.h). Used by the supervisor (work.c) and each job (work_job.c). */
#include <limits.h>
#include <poll.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "work.h"

long long work_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void work_log(const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    fprintf(stderr, "jobq work: %s\n", line);
}

void work_stop(struct worker *w, int exit_code)
{
    if (exit_code != 0) {
        atomic_store(&w->exit_code, exit_code);
    }
    if (atomic_exchange(&w->stopping, 1) == 0) {
        atomic_store(&w->stop_ms, work_now_ms());
        char byte = 1;
        ssize_t n = write(w->stop_fd[1], &byte, 1);
        (void)n; /* the pipe is new and empty: one byte fits */
    }
}

int work_sleep(struct worker *w, long long ms)
{
    struct pollfd p = {.fd = w->stop_fd[0], .events = POLLIN};
    long long until = work_now_ms() + ms;
    for (;;) {
        long long left = until - work_now_ms();
        if (atomic_load(&w->stopping)) {
            return 1;
        }
        if (left <= 0) {
            return 0;
        }
        poll(&p, 1, (int)(left > INT_MAX ? INT_MAX : left));
    }
}
