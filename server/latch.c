#include "latch.h"

void latch_init(struct latch *l)
{
    l->open = 0;
    pthread_mutex_init(&l->mu, NULL);
    pthread_cond_init(&l->cv, NULL);
}

void latch_open(struct latch *l)
{
    pthread_mutex_lock(&l->mu);
    l->open = 1;
    pthread_cond_signal(&l->cv); /* under the lock: the waiter may free l once it sees open */
    pthread_mutex_unlock(&l->mu);
}

void latch_wait_and_destroy(struct latch *l)
{
    pthread_mutex_lock(&l->mu);
    while (!l->open)
        pthread_cond_wait(&l->cv, &l->mu);
    pthread_mutex_unlock(&l->mu);
    pthread_cond_destroy(&l->cv);
    pthread_mutex_destroy(&l->mu);
}
