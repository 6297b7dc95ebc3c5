/* Webhook delivery (whdeliver.h). */
#include "whdeliver.h"

#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "jobjson.h"
#include "log.h"
#include "rand.h"
#include "store_events.h"
#include "store_webhook.h"
#include "webhook.h"
#include "whpost.h"
#include "whsign.h"

struct whdeliver {
    struct store *store;
    int64_t base;
    int allow_private;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int stop;
    int wake[2]; /* a byte in wake[1] at the stop: an attempt in flight gives up */
    struct whdeliver_gauge gauges[STORE_WEBHOOKS_MAX]; /* under mu */
    size_t ngauges;
    atomic_int enabled; /* 1: the last pass saw an enabled subscription (whdeliver_poke) */
    atomic_int poked;   /* 1: events were committed since the last pass began */
};

/* The filter of subscription w after seq `after` (its queues point into qbuf). */
static void filter_of(const struct store_webhook *w, int64_t after, int limit,
                      struct event_filter *f, char *qbuf, size_t qn)
{
    *f = (struct event_filter){.after = after, .limit = limit, .types = w->types};
    if (!w->queues)
        return;
    snprintf(qbuf, qn, "%s", w->queues);
    for (char *save = NULL, *q = strtok_r(qbuf, ",", &save); q && f->nqueues < EVENT_QUEUES_MAX;
         q = strtok_r(NULL, ",", &save))
        f->queues[f->nqueues++] = q;
}

/* The events of w (of job `job` only, 0: of every job) after `after` (at most limit) into
 * *page. */
static enum store_result read_events(struct whdeliver *d, const struct store_webhook *w,
                                     int64_t after, int64_t job, int limit, struct event_page *page)
{
    struct event_filter f;
    char qbuf[EVENT_QUEUES_MAX * (JOB_QUEUE_MAX + 1) + 1];
    filter_of(w, after, limit, &f, qbuf, sizeof qbuf);
    f.job = job;
    return store_events(d->store, &f, page);
}

/* The signature header's value for body into sig (both secrets while rotating), 0 or -1. */
static int sign(const struct store_webhook *w, const char *id, int64_t ts, const char *body,
                size_t len, int64_t now, char *sig)
{
    const char *secrets[2] = {
        w->secret, w->prev_until != JOB_NONE && w->prev_until > now ? w->prev_secret : NULL};
    sig[0] = 0;
    for (int i = 0; i < 2 && secrets[i]; i++) {
        unsigned char key[WHSIGN_KEY_MAX];
        int klen = whsign_key(secrets[i], key);
        char one[WHSIGN_SIG_MAX + 1];
        if (klen < 0 || whsign_sign(key, (size_t)klen, id, ts, body, len, one) != 0)
            return -1;
        if (i > 0)
            strcat(sig, " ");
        strcat(sig, one);
    }
    return 0;
}

/* Send event e to leased subscription w at the store's now, as the attempt after `before`;
 * the state it leads to. The counts and the last attempt's fields go into *next (its
 * strings point into err and static texts). */
static struct webhook_state attempt(struct whdeliver *d, const struct store_webhook *w,
                                    const struct job_event *e, const struct webhook_state *before,
                                    int64_t now, struct store_webhook *next, char *err, size_t errn)
{
    struct webhook_url u;
    struct whpost_res res = {0};
    struct jtext body = {0};
    jtext_event(&body, e);
    char id[JOB_QUEUE_MAX + 48], sig[2 * WHSIGN_SIG_MAX + 2], headers[1024];
    snprintf(id, sizeof id, "jobq_%s_%" PRId64, w->name, e->seq);
    int64_t mono = clock_mono_ms();
    if (webhook_url_parse(w->url, &u, res.error, sizeof res.error) != 0 || body.oom ||
        sign(w, id, now, body.p, body.len, now, sig) != 0) {
        snprintf(res.error, sizeof res.error, "cannot build the request (url, memory or key)");
    } else {
        const char *tp = e->traceparent && !strpbrk(e->traceparent, "\r\n") ? e->traceparent : NULL;
        snprintf(headers, sizeof headers,
                 "webhook-id: %s\r\nwebhook-timestamp: %" PRId64 "\r\nwebhook-signature: %s\r\n"
                 "%s%s%s",
                 id, now, sig, tp ? "traceparent: " : "", tp ? tp : "", tp ? "\r\n" : "");
        struct whpost_req rq = {.url = &u,
                                .headers = headers,
                                .body = body.p,
                                .body_len = body.len,
                                .allow_private = d->allow_private,
                                .cancel_fd = d->wake[0]};
        whpost(&rq, &res);
    }
    free(body.p);
    int64_t at = now + (clock_mono_ms() - mono) / 1000;
    int64_t retry_after = webhook_retry_after(res.retry_after, strlen(res.retry_after), at);
    struct webhook_state s =
        webhook_after(before, res.status, retry_after, at, d->base, rand_unit());
    next->last_status = res.status;
    next->last_attempt_at = at;
    next->deliveries += s.delivered;
    next->failures += !s.delivered;
    next->failed_events += s.given_up;
    if (s.disable) {
        next->enabled = 0;
        next->disabled_reason = "the receiver answered 410 Gone";
    }
    if (!s.delivered) {
        if (res.status)
            snprintf(err, errn, "HTTP %d", res.status);
        else
            snprintf(err, errn, "%s", res.error);
        next->last_error = err;
    }
    if (s.given_up)
        log_warn("webhook %s: event %" PRId64 " given up after failing for 3 days (%s)", w->name,
                 e->seq, err);
    else if (!s.delivered)
        log_info("webhook %s: event %" PRId64 " attempt %" PRId64 " failed: %s", w->name, e->seq,
                 s.attempts, err);
    return s;
}

/* 1 when row i of w's parked events is the first of its job. */
static int first_of_job(const struct store_webhook *w, size_t i)
{
    for (size_t k = 0; k < i; k++)
        if (w->parked[k].job_id == w->parked[i].job_id)
            return 0;
    return 1;
}

/* The parked event to try now: the lowest seq that is the first of its job and due. */
static const struct store_webhook_parked *parked_due(const struct store_webhook *w, int64_t now)
{
    for (size_t i = 0; i < w->nparked; i++) {
        const struct store_webhook_parked *p = &w->parked[i];
        if ((p->next_attempt_at == JOB_NONE || p->next_attempt_at <= now) && first_of_job(w, i))
            return p;
    }
    return NULL;
}

static int job_parked(const struct store_webhook *w, int64_t job)
{
    for (size_t i = 0; i < w->nparked; i++)
        if (w->parked[i].job_id == job)
            return 1;
    return 0;
}

/* The next attempt at a parked event after the write of park and unpark (retry_at): the
 * earliest among the first events of their jobs (one due at once counts as now); JOB_NONE
 * when none stays parked. *failing is the earliest failing_since among them (JOB_NONE:
 * none). */
static int64_t retry_at_after(const struct store_webhook *w,
                              const struct store_webhook_parked *park, int64_t unpark, int64_t now,
                              int64_t *failing)
{
    int64_t best = JOB_NONE;
    *failing = JOB_NONE;
    size_t n = w->nparked;
    for (size_t i = 0; i <= n; i++) {
        struct store_webhook_parked p;
        if (i < n) {
            p = w->parked[i];
            if (p.seq == unpark)
                continue;
            if (park && park->seq == p.seq)
                p = *park;
        } else {
            int known = 0;
            for (size_t k = 0; park && k < n; k++)
                known |= w->parked[k].seq == park->seq;
            if (!park || known)
                continue;
            p = *park; /* a new one: its seq is above every parked one */
        }
        int first = 1;
        for (size_t k = 0; k < i && k < n; k++)
            first &= w->parked[k].job_id != p.job_id || w->parked[k].seq == unpark;
        if (!first)
            continue;
        if (p.failing_since != JOB_NONE && (*failing == JOB_NONE || p.failing_since < *failing))
            *failing = p.failing_since;
        int64_t t =
            p.next_attempt_at == JOB_NONE || p.next_attempt_at < now ? now : p.next_attempt_at;
        if (best == JOB_NONE || t < best)
            best = t;
    }
    return best;
}

/* Lease subscription `name`, try one event: its first due parked event (an unordered
 * subscription's), else the next event after its cursor (or move the cursor past events it
 * does not take), and end the lease. An unordered subscription parks an event that fails,
 * and every later event of a job that has one parked, and goes on with the others. Returns
 * 1 when an event was done and another may follow, 0 when there is nothing more to do now. */
static int deliver_one(struct whdeliver *d, const char *name)
{
    char token[JOB_TOKEN_LEN + 1];
    if (rand_token(token) != 0)
        return 0;
    int64_t now = clock_now();
    struct store_webhook w = {0};
    if (store_webhook_lease(d->store, name, token, WHDELIVER_LEASE, &now, &w) != STORE_OK)
        return 0; /* another process holds it, or it is not due, or gone */
    /* The state written back: as leased, then what the attempt changes. */
    struct store_webhook next = w;
    struct store_webhook_parked park;
    const struct store_webhook_parked *pk = NULL;
    int64_t unpark = 0;
    char err[WHPOST_ERROR_MAX + 16];
    int more = 0;
    struct event_page page = {0};
    /* Events parked while the subscription was unordered are drained even once it is not. */
    const struct store_webhook_parked *head = parked_due(&w, now);
    enum store_result r;
    if (head) {
        r = read_events(d, &w, head->seq - 1, head->job_id, 1, &page);
        if (r == STORE_OK && page.n > 0 && page.events[0].seq == head->seq) {
            struct webhook_state before = {.failing_since = head->failing_since,
                                           .attempts = head->attempts};
            struct webhook_state s =
                attempt(d, &w, &page.events[0], &before, now, &next, err, sizeof err);
            if (s.advance) {
                unpark = head->seq;
            } else {
                park = (struct store_webhook_parked){head->seq, head->job_id, s.attempts,
                                                     s.failing_since, s.next_attempt_at};
                pk = &park;
            }
            more = s.advance;
        } else if (r == STORE_OK) { /* the sweep deleted it: it cannot be sent */
            log_warn("webhook %s: parked event %" PRId64 " was deleted from the log", name,
                     head->seq);
            unpark = head->seq;
            next.failed_events++;
            more = 1;
        }
    } else if ((r = read_events(d, &w, w.delivered_seq, 0, 1, &page)) == STORE_OK && page.n > 0) {
        const struct job_event *e = &page.events[0];
        int room = w.nparked < STORE_WEBHOOK_PARKED_MAX;
        if (job_parked(&w, e->job_id)) { /* behind its job's parked event (full: held) */
            if (room) {
                park = (struct store_webhook_parked){e->seq, e->job_id, 0, JOB_NONE, JOB_NONE};
                pk = &park;
                next.delivered_seq = e->seq;
                more = 1;
            }
        } else if (w.ordered || room) { /* (a full parking holds the cursor) */
            struct webhook_state before = {.failing_since = w.failing_since,
                                           .attempts = w.attempts};
            struct webhook_state s = attempt(d, &w, e, &before, now, &next, err, sizeof err);
            next.failing_since = s.failing_since;
            next.next_attempt_at = s.next_attempt_at;
            next.attempts = s.advance ? 0 : s.attempts;
            next.delivered_seq = s.advance ? e->seq : w.delivered_seq;
            if (!w.ordered && !s.advance && !s.disable) { /* park it and go on */
                park = (struct store_webhook_parked){e->seq, e->job_id, s.attempts, s.failing_since,
                                                     s.next_attempt_at};
                pk = &park;
                next.delivered_seq = e->seq;
                next.failing_since = next.next_attempt_at = JOB_NONE;
                next.attempts = 0;
            }
            more = next.delivered_seq != w.delivered_seq && next.enabled;
        }
    } else if (r == STORE_OK && page.next > w.delivered_seq) {
        next.delivered_seq = page.next; /* events it does not take: past them */
        more = 1;
    }
    int64_t failing = JOB_NONE;
    next.retry_at = retry_at_after(&w, pk, unpark, now, &failing);
    if (!w.ordered && next.enabled) /* failing since its oldest parked failure */
        next.failing_since = failing;
    struct store_webhook out = {0};
    r = store_webhook_done(d->store, name, token, &next, pk, unpark, now, &out);
    if (r == STORE_LEASE_LOST)
        log_warn("webhook %s: the delivery lease ended before the attempt was written; another "
                 "process sends the event again",
                 name);
    else if (r != STORE_OK && r != STORE_NOT_FOUND)
        log_warn("webhook %s: writing the delivery state failed (%s)", name, store_result_name(r));
    store_webhook_clear(&out);
    event_page_clear(&page);
    store_webhook_clear(&w);
    return more && r == STORE_OK;
}

/* This subscription's gauge, and whether it has an event to send now. With full 0 the lag
 * is not counted (one event is read, enough to tell). */
static int look(struct whdeliver *d, const struct store_webhook *w, int64_t now, int full,
                struct whdeliver_gauge *g)
{
    *g = (struct whdeliver_gauge){.deliveries = w->deliveries,
                                  .failures = w->failures,
                                  .failed_events = w->failed_events,
                                  .enabled = w->enabled};
    snprintf(g->name, sizeof g->name, "%s", w->name);
    struct event_page page = {0};
    if (read_events(d, w, w->delivered_seq, 0, full ? EVENT_PAGE_MAX : 1, &page) != STORE_OK)
        return 0;
    g->lag_events = (int64_t)page.n;
    g->lag_seconds = page.n > 0 && now > page.events[0].at ? now - page.events[0].at : 0;
    int work = page.n > 0 || page.next > w->delivered_seq ||
               (w->retry_at != JOB_NONE && w->retry_at <= now);
    event_page_clear(&page);
    return work && w->enabled && (w->next_attempt_at == JOB_NONE || w->next_attempt_at <= now) &&
           (w->lease_until == JOB_NONE || w->lease_until <= now);
}

/* One pass over the subscriptions; with full 1 the gauges are counted and published. */
static void pass(struct whdeliver *d, int full)
{
    struct store_webhook *all = NULL;
    size_t n = 0;
    if (store_webhooks(d->store, NULL, &all, &n) != STORE_OK)
        return;
    int64_t now = clock_now();
    int enabled = 0;
    for (size_t i = 0; i < n; i++)
        enabled |= all[i].enabled;
    atomic_store(&d->enabled, enabled);
    struct whdeliver_gauge *g = calloc(n ? n : 1, sizeof *g);
    for (size_t i = 0; g && i < n; i++) {
        if (!look(d, &all[i], now, full, &g[i]))
            continue;
        for (int k = 0; k < WHDELIVER_BATCH && deliver_one(d, all[i].name); k++) {
            pthread_mutex_lock(&d->mu);
            int stop = d->stop;
            pthread_mutex_unlock(&d->mu);
            if (stop)
                break;
        }
    }
    pthread_mutex_lock(&d->mu);
    if (g && full) {
        memcpy(d->gauges, g, n * sizeof *g);
        d->ngauges = n;
    }
    pthread_mutex_unlock(&d->mu);
    free(g);
    store_webhooks_free(all, n);
}

/* Passes: a full one every WHDELIVER_POLL_MS, and one as soon as poked in between. */
static void *run(void *arg)
{
    struct whdeliver *d = arg;
    int64_t full_at = 0; /* monotonic ms of the next full pass */
    pthread_mutex_lock(&d->mu);
    while (!d->stop) {
        atomic_store(&d->poked, 0); /* a commit from now on is looked at by a pass to come */
        pthread_mutex_unlock(&d->mu);
        int64_t mono = clock_mono_ms();
        int full = mono >= full_at;
        if (full)
            full_at = mono + WHDELIVER_POLL_MS;
        pass(d, full);
        pthread_mutex_lock(&d->mu);
        /* Poked during the pass: at once (a poke's signal needs mu, held from here on). */
        int64_t left = full_at - clock_mono_ms();
        if (d->stop || atomic_load(&d->poked) || left <= 0)
            continue;
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += left * 1000000L;
        ts.tv_sec += ts.tv_nsec / 1000000000L;
        ts.tv_nsec %= 1000000000L;
        pthread_cond_timedwait(&d->cv, &d->mu, &ts);
    }
    pthread_mutex_unlock(&d->mu);
    return NULL;
}

void whdeliver_poke(struct whdeliver *d)
{
    if (!d || !atomic_load_explicit(&d->enabled, memory_order_relaxed) ||
        atomic_exchange(&d->poked, 1))
        return; /* nothing to deliver, or a pass is already due */
    pthread_mutex_lock(&d->mu);
    pthread_cond_signal(&d->cv);
    pthread_mutex_unlock(&d->mu);
}

struct whdeliver *whdeliver_start(struct store *s, int64_t base, int allow_private)
{
    struct whdeliver *d = calloc(1, sizeof *d);
    if (!d) {
        log_error("out of memory starting webhook delivery");
        return NULL;
    }
    d->store = s;
    d->base = base;
    d->allow_private = allow_private;
    pthread_mutex_init(&d->mu, NULL);
    pthread_cond_init(&d->cv, NULL);
    if (pipe2(d->wake, O_CLOEXEC) != 0) {
        d->wake[0] = d->wake[1] = -1;
    } else if (pthread_create(&d->thread, NULL, run, d) == 0) {
        return d;
    }
    log_error("cannot start the webhook delivery thread");
    if (d->wake[0] >= 0) {
        close(d->wake[0]);
        close(d->wake[1]);
    }
    pthread_cond_destroy(&d->cv);
    pthread_mutex_destroy(&d->mu);
    free(d);
    return NULL;
}

void whdeliver_stop(struct whdeliver *d)
{
    if (!d)
        return;
    pthread_mutex_lock(&d->mu);
    d->stop = 1;
    pthread_cond_signal(&d->cv);
    pthread_mutex_unlock(&d->mu);
    if (write(d->wake[1], "x", 1) != 1)
        log_warn("webhook delivery: cannot interrupt the attempt in flight");
    pthread_join(d->thread, NULL);
    close(d->wake[0]);
    close(d->wake[1]);
    pthread_cond_destroy(&d->cv);
    pthread_mutex_destroy(&d->mu);
    free(d);
}

size_t whdeliver_gauges(struct whdeliver *d, struct whdeliver_gauge *out, size_t max)
{
    if (!d)
        return 0;
    pthread_mutex_lock(&d->mu);
    size_t n = d->ngauges < max ? d->ngauges : max;
    memcpy(out, d->gauges, n * sizeof *out);
    pthread_mutex_unlock(&d->mu);
    return n;
}
