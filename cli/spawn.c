/* Spawning with posix_spawn (thread-safe: no code of ours runs between fork and exec), the
 * payload in a memfd, and pidfd_open for a pollable exit. */
#include "spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* A file holding input[0..len), positioned at its start, close-on-exec. Returns its
 * descriptor, or -1 with errno set. */
static int input_file(const char *input, size_t len)
{
    int fd = memfd_create("jobq-payload", MFD_CLOEXEC);
    if (fd < 0) {
        return -1;
    }
    size_t done = 0;
    while (done < len) {
        ssize_t n = write(fd, input + done, len - done);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            int e = n < 0 ? errno : EIO;
            close(fd);
            errno = e;
            return -1;
        }
        done += (size_t)n;
    }
    if (lseek(fd, 0, SEEK_SET) != 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

static void close_fd(int *fd)
{
    if (*fd >= 0) {
        close(*fd);
        *fd = -1;
    }
}

/* posix_spawn's attributes and file actions for spawn_start(). Returns 0 or an errno. */
static int prepare(posix_spawnattr_t *attr, posix_spawn_file_actions_t *fa, int in, int out,
                   int err)
{
    static const int defaults[] = {SIGPIPE, SIGTERM, SIGINT,  SIGHUP,
                                   SIGQUIT, SIGCHLD, SIGUSR1, SIGUSR2};
    sigset_t none, dfl;
    sigemptyset(&none);
    sigemptyset(&dfl);
    for (size_t i = 0; i < sizeof(defaults) / sizeof(defaults[0]); i++) {
        sigaddset(&dfl, defaults[i]);
    }
    int rc = posix_spawnattr_setflags(attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
                                                POSIX_SPAWN_SETSIGDEF);
    rc = rc ? rc : posix_spawnattr_setpgroup(attr, 0);
    rc = rc ? rc : posix_spawnattr_setsigmask(attr, &none);
    rc = rc ? rc : posix_spawnattr_setsigdefault(attr, &dfl);
    rc = rc ? rc : posix_spawn_file_actions_adddup2(fa, in, STDIN_FILENO);
    rc = rc ? rc : posix_spawn_file_actions_adddup2(fa, out, STDOUT_FILENO);
    rc = rc ? rc : posix_spawn_file_actions_adddup2(fa, err, STDERR_FILENO);
    return rc;
}

int spawn_start(struct child *ch, char *const argv[], char *const envp[], const char *input,
                size_t len)
{
    ch->pid = -1;
    ch->pidfd = ch->out_fd = ch->err_fd = -1;
    int out[2] = {-1, -1}, err[2] = {-1, -1};
    int in = input_file(input, len);
    int rc = 0;
    if (in < 0 || pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) {
        rc = errno;
    }
    posix_spawnattr_t attr;
    posix_spawn_file_actions_t fa;
    int have = 0;
    if (rc == 0 && (rc = posix_spawnattr_init(&attr)) == 0) {
        have |= 1;
        if ((rc = posix_spawn_file_actions_init(&fa)) == 0) {
            have |= 2;
            rc = prepare(&attr, &fa, in, out[1], err[1]);
        }
    }
    if (rc == 0) {
        rc = posix_spawnp(&ch->pid, argv[0], &fa, &attr, argv, envp);
    }
    if (have & 2) {
        posix_spawn_file_actions_destroy(&fa);
    }
    if (have & 1) {
        posix_spawnattr_destroy(&attr);
    }
    close_fd(&in);
    close_fd(&out[1]);
    close_fd(&err[1]);
    if (rc != 0) {
        close_fd(&out[0]);
        close_fd(&err[0]);
        ch->pid = -1;
        return rc;
    }
    ch->out_fd = out[0];
    ch->err_fd = err[0];
    fcntl(ch->out_fd, F_SETFL, O_NONBLOCK);
    fcntl(ch->err_fd, F_SETFL, O_NONBLOCK);
    ch->pidfd = (int)syscall(SYS_pidfd_open, ch->pid, 0);
    return 0;
}

int spawn_exited(const struct child *ch)
{
    siginfo_t info = {0};
    if (waitid(P_PID, (id_t)ch->pid, &info, WEXITED | WNOHANG | WNOWAIT) != 0) {
        return 0;
    }
    return info.si_pid == ch->pid;
}

void spawn_reap(struct child *ch, int *wstatus)
{
    /* The leader is not reaped yet (a zombie at worst), so its pid, the group's id, cannot
     * have been given to another process: the kill reaches only its group. */
    kill(-ch->pid, SIGKILL);
    while (waitpid(ch->pid, wstatus, 0) < 0 && errno == EINTR) {
    }
}

void spawn_close(struct child *ch)
{
    close_fd(&ch->pidfd);
    close_fd(&ch->out_fd);
    close_fd(&ch->err_fd);
}
