/* What the HTTP layer needs from the process: borrowed for the server's lifetime. */
#ifndef JOBQ_APP_H
#define JOBQ_APP_H

#include "config.h"
#include "store.h"
#include "waitq.h"

struct auth;

struct app {
    struct store *store;
    struct waitq *waitq;
    const struct config *cfg;
    const struct auth *auth; /* bearer tokens (server/auth.h); NULL: no authentication */
};

#endif
