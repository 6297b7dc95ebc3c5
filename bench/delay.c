/* jobq-delay: a proxy that puts a fixed delay on a link, for the benchmark (tc netem is not
 * available on the machines it runs on). It listens on a unix socket and connects each
 * client to an upstream unix socket; every byte read from either side is written to the
 * other side `delay` microseconds after it was read (half the round trip each way), in
 * order. One thread, epoll; bounded: at most MAX_LINKS links and MAX_HELD bytes held per
 * direction (past that, the side that sends is not read until the held bytes go out).
 *
 * jobq-delay LISTEN_PATH UPSTREAM_PATH ROUND_TRIP_US [CONTROL_PATH]
 *
 * PostgreSQL's socket is DIR/.s.PGSQL.PORT: listen on OTHERDIR/.s.PGSQL.PORT and point
 * libpq's host at OTHERDIR. It runs until killed.
 *
 * With CONTROL_PATH it also binds a unix datagram socket there and switches its mode at run
 * time on each datagram it receives (bench/chaos.py's network faults), one command each:
 *   "delay US"  the round trip of the bytes read from now on becomes US microseconds;
 *   "hold"      a partition that holds traffic: nothing is written to either side (bytes
 *               are still read and queued, up to MAX_HELD per direction), new links are
 *               accepted and connected but held the same way;
 *   "reset"     a partition that resets connections: every link is closed at once, and a
 *               new client is closed as soon as it is accepted;
 *   "pass"      the link heals: held bytes go out in order, new links connect as before.
 * An unknown command is ignored. Without CONTROL_PATH (or before any command) it passes
 * traffic with the fixed delay, as it always did. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define MAX_LINKS 1024
#define CHUNK 16384
#define MAX_HELD (8u << 20)

/* Bytes read at `due - delay`, to be written at `due`. */
struct chunk {
    int64_t due;
    size_t len, off;
    struct chunk *next;
    char data[];
};

/* One direction: bytes read from `from`, written to `to`. */
struct dir {
    int from, to;
    struct chunk *head, *tail;
    size_t held;
    int eof; /* `from` ended: shut `to` down once the queue is written */
};

struct link {
    struct dir d[2]; /* 0: client -> upstream, 1: upstream -> client */
    int used;
};

static struct link links[MAX_LINKS];
static int links_hi; /* links[links_hi..] are all unused */
static int64_t delay_us;
static int ep;

/* The mode the control socket sets: traffic passes (with delay_us), is held, or is reset. */
enum mode { PASS, HOLD, RESET };
static enum mode mode = PASS;

static int64_t mono_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* A unix socket of `type`: bound to path (and listening, for a stream) when listen_on, else
 * connected to it. Non-blocking. Returns -1 on failure. */
static int unix_socket(const char *path, int listen_on, int type)
{
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof a.sun_path)
        return -1;
    strcpy(a.sun_path, path);
    int fd = socket(AF_UNIX, type | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    if (listen_on) {
        unlink(path);
        if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0 ||
            (type == SOCK_STREAM && listen(fd, 256) != 0)) {
            close(fd);
            return -1;
        }
    } else if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        return -1;
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    return fd;
}

/* The epoll tag of a link's socket: link index * 2 + side (0: client, 1: upstream). */
static void watch(int fd, uint32_t tag, uint32_t events, int op)
{
    struct epoll_event ev = {.events = events, .data.u32 = tag};
    epoll_ctl(ep, op, fd, &ev);
}

static void link_close(int i)
{
    struct link *l = &links[i];
    for (int k = 0; k < 2; k++) {
        while (l->d[k].head) {
            struct chunk *c = l->d[k].head;
            l->d[k].head = c->next;
            free(c);
        }
    }
    close(l->d[0].from);
    close(l->d[1].from);
    memset(l, 0, sizeof *l);
}

/* Read what `from` has into d's queue. Returns -1 when the link must close. */
static int dir_read(struct dir *d, int64_t now)
{
    while (d->held < MAX_HELD && !d->eof) {
        struct chunk *c = malloc(sizeof *c + CHUNK);
        if (!c)
            return -1;
        ssize_t n = read(d->from, c->data, CHUNK);
        if (n <= 0) {
            free(c);
            if (n == 0) {
                d->eof = 1;
                return 0;
            }
            return errno == EAGAIN || errno == EINTR ? 0 : -1;
        }
        *c = (struct chunk){.due = now + delay_us, .len = (size_t)n};
        if (d->tail)
            d->tail->next = c;
        else
            d->head = c;
        d->tail = c;
        d->held += (size_t)n;
    }
    return 0;
}

/* Write d's due bytes. Returns -1 when the link must close. */
static int dir_write(struct dir *d, int64_t now)
{
    if (mode == HOLD)
        return 0;
    while (d->head && d->head->due <= now) {
        struct chunk *c = d->head;
        /* send, not write: a peer that has gone is EPIPE here, not a SIGPIPE that ends us. */
        ssize_t n = send(d->to, c->data + c->off, c->len - c->off, MSG_NOSIGNAL);
        if (n < 0)
            return errno == EAGAIN || errno == EINTR ? 0 : -1;
        c->off += (size_t)n;
        d->held -= (size_t)n;
        if (c->off < c->len)
            return 0;
        d->head = c->next;
        if (!d->head)
            d->tail = NULL;
        free(c);
    }
    if (!d->head && d->eof)
        shutdown(d->to, SHUT_WR);
    return 0;
}

static void accept_one(int lfd, const char *upstream)
{
    int cfd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (cfd < 0)
        return;
    if (mode == RESET) {
        close(cfd);
        return;
    }
    int i = 0;
    while (i < MAX_LINKS && links[i].used)
        i++;
    int ufd = i < MAX_LINKS ? unix_socket(upstream, 0, SOCK_STREAM) : -1;
    if (ufd < 0) {
        close(cfd);
        return;
    }
    links[i] = (struct link){.d = {{.from = cfd, .to = ufd}, {.from = ufd, .to = cfd}}, .used = 1};
    if (i >= links_hi)
        links_hi = i + 1;
    watch(cfd, (uint32_t)i * 2 + 2, EPOLLIN, EPOLL_CTL_ADD);
    watch(ufd, (uint32_t)i * 2 + 3, EPOLLIN, EPOLL_CTL_ADD);
}

/* Read every command waiting on the control socket and switch the mode (see the top). */
static void control(int cfd)
{
    char buf[64];
    ssize_t n;
    while ((n = recv(cfd, buf, sizeof buf - 1, 0)) > 0) {
        buf[n] = '\0';
        if (strncmp(buf, "delay ", 6) == 0) {
            delay_us = strtoll(buf + 6, NULL, 10) / 2;
        } else if (strcmp(buf, "hold") == 0) {
            mode = HOLD;
        } else if (strcmp(buf, "pass") == 0) {
            mode = PASS;
        } else if (strcmp(buf, "reset") == 0) {
            mode = RESET;
            for (int i = 0; i < links_hi; i++) {
                if (links[i].used)
                    link_close(i);
            }
        }
    }
}

int main(int argc, char **argv)
{
    if (argc != 4 && argc != 5) {
        fprintf(stderr,
                "usage: jobq-delay LISTEN_PATH UPSTREAM_PATH ROUND_TRIP_US [CONTROL_PATH]\n");
        return 2;
    }
    delay_us = strtoll(argv[3], NULL, 10) / 2;
    int lfd = unix_socket(argv[1], 1, SOCK_STREAM);
    int cfd = argc == 5 ? unix_socket(argv[4], 1, SOCK_DGRAM) : -1;
    ep = epoll_create1(EPOLL_CLOEXEC);
    if (lfd < 0 || ep < 0 || (argc == 5 && cfd < 0)) {
        fprintf(stderr, "jobq-delay: cannot listen on %s: %s\n",
                argc == 5 && cfd < 0 ? argv[4] : argv[1], strerror(errno));
        return 1;
    }
    watch(lfd, 0, EPOLLIN, EPOLL_CTL_ADD);
    if (cfd >= 0)
        watch(cfd, 1, EPOLLIN, EPOLL_CTL_ADD);
    for (;;) {
        /* Sleep until the earliest held chunk is due (or something is readable). */
        int64_t now = mono_us(), next = -1;
        while (links_hi > 0 && !links[links_hi - 1].used)
            links_hi--;
        for (int i = 0; mode != HOLD && i < links_hi; i++) {
            for (int k = 0; links[i].used && k < 2; k++) {
                struct chunk *c = links[i].d[k].head;
                if (c && (next < 0 || c->due < next))
                    next = c->due;
            }
        }
        int64_t wait = next < 0 ? 1000000 : next <= now ? 0 : next - now;
        struct timespec ts = {.tv_sec = wait / 1000000, .tv_nsec = (wait % 1000000) * 1000};
        struct epoll_event evs[64];
        int n = epoll_pwait2(ep, evs, 64, &ts, NULL);
        now = mono_us();
        for (int e = 0; e < n; e++) {
            uint32_t tag = evs[e].data.u32;
            if (tag == 0) {
                accept_one(lfd, argv[2]);
                continue;
            }
            if (tag == 1) {
                control(cfd);
                continue;
            }
            int i = (int)(tag / 2) - 1;
            struct dir *d = &links[i].d[tag % 2];
            if (!links[i].used)
                continue;
            if (dir_read(d, now) != 0)
                link_close(i);
            else if (d->eof) /* nothing more to read there (and no EPOLLHUP to spin on) */
                epoll_ctl(ep, EPOLL_CTL_DEL, d->from, NULL);
        }
        for (int i = 0; i < links_hi; i++) {
            for (int k = 0; links[i].used && k < 2; k++) {
                if (dir_write(&links[i].d[k], now) != 0)
                    link_close(i);
            }
            if (links[i].used && links[i].d[0].eof && links[i].d[1].eof && !links[i].d[0].head &&
                !links[i].d[1].head)
                link_close(i);
        }
    }
}
