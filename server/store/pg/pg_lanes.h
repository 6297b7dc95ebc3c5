/* Lanes and concurrency keys on PostgreSQL (docs/flow-control.md): the claim's way through
 * the lanes (used when a queue has an open lane for the claimer: the plain claim statement
 * then takes nothing), with lane_claim.c's order and the domain's limits, exact across
 * processes: a key is decided on under its transaction advisory lock. */
#ifndef JOBQ_PG_LANES_H
#define JOBQ_PG_LANES_H

/* The advisory lock of concurrency key k (an SQL text expression), shared by the claim (tried)
 * and the end of a keyed job (waited for: the update trigger, migration 14). */
#define PG_KEY_LOCK(k) "hashtextextended(" k ", 7461003)"

/* LIMIT_NEVER as an SQL literal: a lane closed until a running job of its key ends. */
#define PG_LANE_NEVER "9223372036854775807"

#include "store.h"

struct pg_call;
struct pg_conn;

/* The claim of pc by the lanes, in a transaction of its own on c (after the plain claim
 * statement took nothing): call->claim.out and .n as the claim's, news published after the
 * commit. Returns the claim's result. */
enum store_result pg_lanes_claim(struct pg_conn *c, struct pg_call *pc);

#endif
