/* SPDX-License-Identifier: Apache-2.0 */
/* The example programs' shared command-line helpers (example-cli.h). */
#include "example-cli.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

double example_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int example_fail(const char *program, const kp_runtime *rt, kp_status st, const char *what)
{
    fprintf(stderr, "%s: %s: %s: %s\n", program, what, kp_status_name(st), kp_last_error(rt));
    return 1;
}

int example_number(const char *program, const char *usage, int argc, char **argv, int *i, double lo,
                   double hi, double *out)
{
    char *end = NULL;
    if (*i + 1 >= argc) {
        fprintf(stderr, "%s: %s needs a value\n%s", program, argv[*i], usage);
        return 0;
    }
    errno = 0;
    *out = strtod(argv[++*i], &end);
    if (errno || end == argv[*i] || *end || *out < lo || *out > hi) {
        fprintf(stderr, "%s: %s %s: expected a number in [%g, %g]\n", program, argv[*i - 1],
                argv[*i], lo, hi);
        return 0;
    }
    return 1;
}
