/* What a committed write made happen, for the hooks (store.h struct store_hooks): the queues
 * that got claimable jobs (how many, and whether any of them requires something), and the
 * queues that got jobs due later (with the earliest run_at of each). A backend collects news
 * while a transaction runs, and publishes it only after the commit. Single-threaded: one
 * transaction's news belongs to the thread that runs it. */
#ifndef JOBQ_STORE_NEWS_H
#define JOBQ_STORE_NEWS_H

#include <stddef.h>
#include <stdint.h>

#include "store.h"

/* Queues kept per kind of news; past it, the news is "every waiter should look again". */
#define STORE_NEWS_QUEUES 64

struct store_news {
    char *queues[STORE_NEWS_QUEUES]; /* distinct queues with claimable jobs (owned) */
    int jobs[STORE_NEWS_QUEUES];     /* how many */
    char plain[STORE_NEWS_QUEUES];   /* 1: none of them requires anything */
    size_t n;
    int all; /* too many queues to keep, or no memory: wake every waiter */
    /* Queues that got jobs due later, with the earliest run_at of each (owned). */
    char *later[STORE_NEWS_QUEUES];
    int64_t later_at[STORE_NEWS_QUEUES];
    size_t nlater;
};

/* Record that a job of queue became claimable; plain: 1 when it requires nothing (any claimer
 * of the queue can take it). This function can't fail (past STORE_NEWS_QUEUES queues, or out
 * of memory, the news becomes "wake everyone"). */
void store_news_ready(struct store_news *n, const char *queue, int plain);

/* Record that a job of queue becomes claimable at run_at (later than now). This function
 * can't fail (past STORE_NEWS_QUEUES queues, or out of memory, it is not recorded: parked
 * claims find the job when they look again by themselves). */
void store_news_later(struct store_news *n, const char *queue, int64_t run_at);

/* Add what `from` holds to n (writes committed together). Can't fail, as above. */
void store_news_merge(struct store_news *n, const struct store_news *from);

/* The earliest run_at of n's later queues, or JOB_NONE. */
int64_t store_news_first_later(const struct store_news *n);

/* Tell h what n holds, after the commit: on_lost when it is "wake everyone"; per queue
 * on_ready_some with its job count when none of them requires anything (wake about that many
 * waiters), else on_ready; on_scheduled with the earliest later run_at plus later_shift (the
 * seconds that turn the store's clock into its callers': 0 when they are one). Any hook may
 * be NULL. This function can't fail. */
void store_news_fire(const struct store_hooks *h, const struct store_news *n, int64_t later_shift);

/* Free what n holds and empty it. Accepts an empty n. */
void store_news_clear(struct store_news *n);

#endif
