/* Lanes and concurrency keys on PostgreSQL (docs/flow-control.md): the claim's way through
 * the lanes (used when a queue has an open lane for the claimer: the plain claim statement
 * then takes nothing), with lane_claim.c's order and the domain's limits, exact across
 * processes: a key is decided on under its transaction advisory lock. */
#ifndef JOBQ_PG_LANES_H
#define JOBQ_PG_LANES_H

/* The advisory lock of concurrency key k (an SQL text expression), shared by the claim (tried)
 * and the end of a keyed job (waited for: the update trigger, migration 15). */
#define PG_KEY_LOCK(k) "hashtextextended(" k ", 7461003)"

/* LIMIT_NEVER as an SQL literal: a lane closed until a running job of its key ends. */
#define PG_LANE_NEVER "9223372036854775807"

#include "store.h"

struct pg_call;
struct pg_bind;
struct pg_conn;
struct pg_result;
struct store_news;

/* The claim of pc by the lanes on c (after the plain claim statement took nothing): inside
 * the transaction c is in, its news added to notes (committed with it); else in a
 * transaction of its own, its news published after the commit. call->claim.out and .n as the
 * claim's; *more is 1 when a lane it looked at still has a head (a next claim of the queues
 * will likely come this way too). Returns the claim's result. */
enum store_result pg_lanes_claim(struct pg_conn *c, struct pg_call *pc, struct store_news *notes,
                                 int *more);

/* The first statement of pc's claim by the lanes (its candidates), bound into b to be sent in
 * the pipeline of pc's group when the claim expects the lanes: then pg_lanes_keep keeps its
 * result in pc->lanes, and pg_lanes_claim starts from it instead of reading them itself.
 * Returns 0, or -1 (logged) when memory ran out. */
int pg_lanes_bind(struct pg_call *pc, struct pg_bind *b);
enum store_result pg_lanes_keep(struct pg_call *pc, const struct pg_result *res);

/* Free what pg_lanes_keep kept in pc (accepts a pc with none). */
void pg_lanes_drop(struct pg_call *pc);

#endif
