/* When a group-commit executor starts another transaction beside those in flight: a pure
 * decision of the executor's state (the PostgreSQL store's writers, pg_exec.c).
 *
 * A group of calls shares one transaction and one WAL flush; a second group in flight at the
 * same time takes calls that would otherwise have joined the next group, so it is worth
 * starting only when waiting would cost more than it saves:
 * - fewer groups are in flight than admit_free allows: start at once (an idle process answers
 *   a lone call without delay; on a host of many cores a group in flight keeps one of the
 *   database's cores busy and leaves the others idle, so each group more in flight is
 *   throughput until half of them are, the other half being the writers', the clients' and
 *   the system's own);
 * - a full group's calls (group_max) or more wait: start (the offered load is more than one
 *   group takes; fewer all join the next group when the one in flight ends);
 * - else once the newest group in flight has run for a hold: while the round trip to the
 *   database is small beside a group's time, twice a group's usual time, the time most
 *   groups end within (a group stalled far past it lets the others by; an average would
 *   count a one-call group as usual and let a second group start beside every large one,
 *   which on 2 cores costs both transactions more than it saves); once the round trip is a
 *   quarter of it or more, a quarter of the server's part (the network's wait is what
 *   overlap wins back); a line between the two. The hold is for a 2-core host and shrinks
 *   with more cores (2 / cpus of it): the writers' own work, and the database's, spread over
 *   them. With fewer than ADMIT_FEW calls waiting the hold is four times as long while the
 *   round trip is small beside a group's time (a group of their own would cost a commit for
 *   little), falling on a line to once where the round trip is a quarter of it (then they
 *   would wait a round trip more, which costs more than the commit). */
#ifndef JOBQ_ADMIT_H
#define JOBQ_ADMIT_H

#include <stddef.h>
#include <stdint.h>

#define ADMIT_FEW 4
#define ADMIT_TIMES 64 /* the groups whose times make the usual time */
#define ADMIT_USUAL 90 /* the usual time: the percentile of those times */

/* The times of the last ADMIT_TIMES groups (zeroed: none yet). */
struct admit_times {
    int64_t us[ADMIT_TIMES];
    size_t n;      /* groups recorded: the next goes to us[n % ADMIT_TIMES] */
    int64_t usual; /* admit_usual, as of the last record */
};

struct admit_state {
    int inflight;           /* groups in flight now */
    size_t queued;          /* calls waiting (0: nothing to start) */
    size_t group_max;       /* the most calls one group takes */
    int64_t group_us;       /* a group's time from start to end, smoothed (0: none measured) */
    int64_t usual_us;       /* a group's usual time (admit_usual; below group_us: group_us) */
    int64_t rtt_us;         /* a round trip to the database (0: not measured) */
    int64_t since_start_us; /* since the newest group in flight started */
    int cpus;               /* of this host (< 1 counts as 1) */
};

/* How many groups may be in flight before a call waits for one to end or for a hold: half
 * the host's cores, at least one (so on 2 cores only an idle executor starts at once). This
 * function can't fail. */
int admit_free(int cpus);

/* 0: start a group now; > 0: look again in that many microseconds (unless something changes
 * first); -1: nothing to start until a call comes. This function can't fail. */
int64_t admit_wait(const struct admit_state *s);

/* Record a group's time (microseconds). A time past twice the usual one (a group stalled on
 * a lock, which is what the hold is there to see) counts as twice the usual time, so that a
 * few stalls raise the usual time at most twofold instead of holding every group after them
 * for as long as they lasted. This function can't fail. */
void admit_record(struct admit_times *t, int64_t us);

/* The usual time of a group: the ADMIT_USUAL-th percentile of the recorded times (0: none).
 * This function can't fail. */
int64_t admit_usual(const struct admit_times *t);

#endif
