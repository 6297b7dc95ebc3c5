/* A commit's news and the hooks it fires (store_news.h). */
#include "store_news.h"

#include <stdlib.h>
#include <string.h>

/* Record that `jobs` jobs of queue became claimable. */
static void add_ready(struct store_news *n, const char *queue, int jobs, int plain)
{
    if (n->all)
        return;
    for (size_t i = 0; i < n->n; i++) {
        if (strcmp(n->queues[i], queue) == 0) {
            n->jobs[i] += jobs;
            n->plain[i] = n->plain[i] && plain;
            return;
        }
    }
    char *copy = n->n < STORE_NEWS_QUEUES ? strdup(queue) : NULL;
    if (!copy) {
        n->all = 1; /* too many queues, or no memory: wake everyone instead */
        return;
    }
    n->queues[n->n] = copy;
    n->jobs[n->n] = jobs;
    n->plain[n->n++] = plain != 0;
}

void store_news_ready(struct store_news *n, const char *queue, int plain)
{
    add_ready(n, queue, 1, plain);
}

void store_news_merge(struct store_news *n, const struct store_news *from)
{
    n->all |= from->all;
    for (size_t i = 0; i < from->n; i++)
        add_ready(n, from->queues[i], from->jobs[i], from->plain[i]);
    for (size_t i = 0; i < from->nlater; i++)
        store_news_later(n, from->later[i], from->later_at[i]);
}

void store_news_later(struct store_news *n, const char *queue, int64_t run_at)
{
    for (size_t i = 0; i < n->nlater; i++) {
        if (strcmp(n->later[i], queue) == 0) {
            if (run_at < n->later_at[i])
                n->later_at[i] = run_at;
            return;
        }
    }
    char *copy = n->nlater < STORE_NEWS_QUEUES ? strdup(queue) : NULL;
    if (!copy)
        return;
    n->later[n->nlater] = copy;
    n->later_at[n->nlater++] = run_at;
}

int64_t store_news_first_later(const struct store_news *n)
{
    int64_t first = JOB_NONE;
    for (size_t i = 0; i < n->nlater; i++)
        first = first == JOB_NONE || n->later_at[i] < first ? n->later_at[i] : first;
    return first;
}

void store_news_fire(const struct store_hooks *h, const struct store_news *n, int64_t later_shift)
{
    if (n->all) {
        if (h->on_lost)
            h->on_lost(h->ctx);
    } else {
        for (size_t i = 0; i < n->n; i++) {
            if (n->plain[i] && h->on_ready_some)
                h->on_ready_some(h->ctx, n->queues[i], n->jobs[i]);
            else if (h->on_ready)
                h->on_ready(h->ctx, n->queues[i]);
        }
    }
    int64_t first = store_news_first_later(n);
    if (first != JOB_NONE && h->on_scheduled)
        h->on_scheduled(h->ctx, first + later_shift);
}

void store_news_clear(struct store_news *n)
{
    for (size_t i = 0; i < n->n; i++)
        free(n->queues[i]);
    for (size_t i = 0; i < n->nlater; i++)
        free(n->later[i]);
    memset(n, 0, sizeof *n);
}
