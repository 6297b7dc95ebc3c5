/* What the backends' links reads hand out (store.h: struct job_link). */
#include <stdlib.h>

#include "store.h"

void job_links_free(struct job_link *links, size_t n)
{
    if (!links)
        return;
    for (size_t i = 0; i < n; i++) {
        free(links[i].result);
        free(links[i].queue);
    }
    free(links);
}
