/* The claim over plain jobs and lanes (docs/flow-control.md), written once for both backends:
 * the backend lists the candidates (the best plain jobs of the requested queues, one row per
 * open lane that fits the claimer) and gives the primitives below; lane_claim_run takes jobs
 * in claim order (priority desc, run_at asc, id asc), asking the domain how much room each
 * concurrency key has (limit_resolve, limit_room) and when a key without room opens again
 * (limit_open_at). Private to server/store/. */
#ifndef JOBQ_LANE_CLAIM_H
#define JOBQ_LANE_CLAIM_H

#include <stddef.h>
#include <stdint.h>

#include "limit.h"
#include "store.h"

/* A candidate: a plain job (lane 0) or a lane with its head. */
struct lane_cand {
    int64_t lane;     /* 0: a plain job */
    int64_t id;       /* the job (a lane's head); 0: the lane has no job left */
    int64_t priority; /* of that job: the claim order */
    int64_t run_at;
    char *ckey; /* a lane's concurrency key (owned), NULL when none */
    int done;   /* taken, emptied, or its key is closed */
};

/* What the claim knows of one concurrency key. */
struct lane_key {
    char *key;          /* owned */
    int has_limit;      /* 0: no limit applies (only a pause can hold it) */
    struct limit limit; /* the one that applies (limit_resolve) */
    int64_t running;    /* its jobs running now, this claim's included */
    int64_t paused_until;
    int64_t window; /* claims its rate counts at now, this claim's included */
    int64_t now;    /* the claim's, or later: the second its claims count in (key_load) */
    int64_t room;   /* lane_key_room, kept up as this claim takes jobs */
    int closed;     /* lanes closed by this claim */
};

/* How many more jobs of k may be claimed at k->now (limit_room over what k holds). */
int64_t lane_key_room(const struct lane_key *k);

/* The backend's side of one claim transaction (be: its state). Each returns STORE_OK or the
 * error that ends the claim (rolled back). */
struct lane_claim_ops {
    /* Take job c->id (a plain job, or the head of lane c->lane) for the claimer
     * (compare-and-swap from queued, not expired) into out: STORE_NOT_FOUND when it is no
     * longer queued (taken, cancelled: a stale head). head(c) follows for a lane. */
    enum store_result (*take)(void *be, const struct lane_cand *c, struct job *out);
    /* Look at the lane of c again: its best queued job into c->id/priority/run_at (c->id 0
     * when none) and into the lane's stored head. A backend may have learnt it already in
     * the take just before. */
    enum store_result (*head)(void *be, struct lane_cand *c);
    /* Fill k for k->key: the limits that may apply (then k->has_limit and k->limit by
     * limit_resolve), running, paused_until, now (k->now, the claim's, moved up to
     * limit_claim_second over the newest second the key counts a claim in, when the applying
     * limit has a rate) and window (the claims counted at k->now by that rate). STORE_BUSY:
     * another claimer holds the key now (PostgreSQL): this claim passes it by. */
    enum store_result (*key_load)(void *be, struct lane_key *k);
    /* Record that this claim took one more job of k (for a rate: one more claim at k->now). */
    enum store_result (*key_claimed)(void *be, struct lane_key *k);
    /* The claim rows of k's window from second `from` on, at most cap of them, into rows (*n). */
    enum store_result (*key_window)(void *be, const struct lane_key *k, int64_t from,
                                    struct limit_claims *rows, size_t cap, size_t *n);
    /* Close k's lanes until `at` (limit_open_at, later than now; LIMIT_NEVER: until a job of
     * k ends). */
    enum store_result (*key_close)(void *be, const struct lane_key *k, int64_t at);
};

/* Take up to max_jobs jobs among cands[0..n) into out, best first: a plain candidate is taken
 * as it is; a lane gives its head while its key has room, then its next head. *got is how
 * many were taken (out[0..*got) are owned by the caller, also after an error: the caller
 * discards them with the transaction). keys (room for nkeys) holds the keys met; the caller
 * frees them with lane_keys_clear. Returns STORE_OK or the first error of a primitive. */
enum store_result lane_claim_run(const struct lane_claim_ops *ops, void *be, int64_t now,
                                 struct lane_cand *cands, size_t n, int max_jobs,
                                 struct lane_key *keys, size_t nkeys, struct job *out, size_t *got);

/* Free what cands[0..n) and keys[0..n) own. Accepts NULL. */
void lane_cands_clear(struct lane_cand *cands, size_t n);
void lane_keys_clear(struct lane_key *keys, size_t n);

/* The keys of the limits that may apply to job key `key` as a JSON array text (the key
 * itself and "p*" for each of its prefixes p that ends between characters, "" included),
 * for the backends' lookup; malloc'd, NULL when out of memory. */
char *lane_limit_keys_json(const char *key);

#endif
