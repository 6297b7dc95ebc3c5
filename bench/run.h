/* Run one scenario with a driver and print its result line on stdout:
 *   result<TAB>scenario=...<TAB>system=...<TAB>jobs_s=...<TAB>p50_ms=...<TAB>p99_ms=... ...
 * (key=value fields; bench/report.py reads them). */
#ifndef BENCH_RUN_H
#define BENCH_RUN_H

#include "bench.h"

/* Returns 0, or 1 when the run failed (the line is printed all the same when it got that far).
 * d may be NULL for the watch scenario. */
int run_scenario(const struct opts *o, const struct driver *d);

#endif
