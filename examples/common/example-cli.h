/* SPDX-License-Identifier: Apache-2.0 */
/* What the example programs share on their command lines: a clock, an error report, a number
 * argument. */
#ifndef EXAMPLE_CLI_H
#define EXAMPLE_CLI_H

#include "kernelport/kernelport.h"

/* Seconds from a monotonic clock. */
double example_now(void);

/* Prints "PROGRAM: WHAT: STATUS: the runtime's message" to stderr (rt may be NULL) and returns
 * 1, the programs' exit code for a failure. */
int example_fail(const char *program, const kp_runtime *rt, kp_status st, const char *what);

/* Parses argv[*i + 1], the value of option argv[*i], as a number in [lo, hi] into *out and steps
 * *i past it; on a missing or bad value prints why (and `usage` when it is missing) and returns
 * 0. */
int example_number(const char *program, const char *usage, int argc, char **argv, int *i, double lo,
                   double hi, double *out);

#endif
