/* Releasing schedules (store.h): apart from store.c, which calls the backends that call
 * these. */
#include <stdlib.h>

#include "store.h"
#include "store_schedule.h"

void store_schedule_clear(struct store_schedule *s)
{
    if (!s)
        return;
    free(s->job);
    free(s->cron);
    free(s->timezone);
    s->job = s->cron = s->timezone = NULL;
}

void store_schedules_free(struct store_schedule *a, size_t n)
{
    for (size_t i = 0; a && i < n; i++)
        store_schedule_clear(&a[i]);
    free(a);
}
