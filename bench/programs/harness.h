/* SPDX-License-Identifier: Apache-2.0 */
/* The benchmark harness shared by bench/programs/: options, peer timing, a table and JSON. */
#ifndef KP_BENCH_HARNESS_H
#define KP_BENCH_HARNESS_H

#include <stddef.h>
#include <stdint.h>

#include "kernelport/kernelport.h"

/* The most named numbers one row (or the whole run) carries beside its timings. */
#define KPB_MAX_METRICS 16

/* A named number written as a JSON member and printed under the table. */
typedef struct kpb_metric {
    const char *name; /* a static string ("clblast_direct_s"): not copied */
    double value;
} kpb_metric;

/* A program-specific option for kpb_open_flags: a switch ("--first-call" sets *value to 1), or,
 * where `text` is set, an option that takes an argument ("--dump DIR" sets *text to "DIR"). */
typedef struct kpb_flag {
    const char *name; /* with the dashes; NULL ends the list */
    const char *help; /* one line for the usage text */
    int *value;
    const char **text;
} kpb_flag;

typedef struct kpb {
    const char *name; /* "bench-example" */
    kp_runtime *rt;
    kp_device_info device;
    kp_peak peak;
    int have_peak;
    int no_peak;      /* set before kpb_close to leave the peaks unmeasured (first-call runs) */
    int quick;        /* --quick: fewer runs, for smoke tests */
    const char *json; /* --json FILE */
    /* Stop timing a case once this much time is measured, after at least 3 runs (0: no cap);
     * keeps second-long calls (8192^3 on a CPU) from taking ten runs. */
    double max_case_s;
    /* Called before each event-timed launch (may be NULL). A program may enqueue work there that
     * keeps the device busy while the host submits the launch, so that the launch's span holds
     * its own commands rather than the host's submission latency. */
    void (*before_timed)(void *user);
    void *before_timed_user;
    struct kpb_row *rows;
    size_t n_rows;
    char **notes; /* kpb_note */
    size_t n_notes;
    kpb_metric metrics[KPB_MAX_METRICS]; /* kpb_metric_add */
    size_t n_metrics;
} kpb;

/* One comparison: our kernel and a peer on the same problem, timed in the same process. */
typedef struct kpb_row {
    char *case_name; /* "n=16777216" */
    char *ours;      /* "example.axpy" */
    char *peer;      /* "cblas_saxpy (OpenBLAS, 2 threads)", or NULL */
    double ours_s;   /* median seconds per call; 0 when withheld (status not KP_OK) */
    double ours_p10, ours_p90;
    double peer_s;       /* 0 when there is no peer */
    double flops, bytes; /* per call */
    char *note;
    /* KP_OK, or why ours_s is not a valid figure (KP_ERR_VERIFY: a wrong result, which is never
     * reported as a speed); rows that are not KP_OK are marked in the table and the JSON. */
    kp_status status;
    kpb_metric metrics[KPB_MAX_METRICS]; /* extra figures: kpb_row_metric */
    size_t n_metrics;
} kpb_row;

/*
 * Parses --device SPEC, --manifest FILE, --json FILE and --quick, and creates the runtime. The
 * device's peaks are read (or measured) later, by kpb_close, so that the program's own first
 * calls are not preceded by the peak kernels. Prints usage and exits 2 on a bad command line, or
 * exits 3 when the runtime cannot be created.
 */
void kpb_open(kpb *b, const char *name, int argc, char **argv);

/* kpb_open that also accepts the options in `flags` (NULL-name terminated; may be NULL). */
void kpb_open_flags(kpb *b, const char *name, int argc, char **argv, const kpb_flag *flags);

/* Device time of a launch, median over repeated event-timed launches after warm-up. */
kp_status kpb_time_kernel(kpb *b, kp_kernel *k, const kp_arg *args, size_t n, double *median,
                          double *p10, double *p90);

/* Wall time of a host function (a peer library call), median over repeats after warm-up. */
double kpb_time_host(kpb *b, void (*fn)(void *user), void *user);

/* Whether a timing loop that has `runs` samples adding up to `total` seconds takes another: the
 * rule kpb_time_* follow (--quick or not, max_case_s, at most 200 runs), for programs that time
 * a path of their own the same way. */
int kpb_more_runs(const kpb *b, int runs, double total);

/* The median of n values, which it sorts in ascending order; 0 when n is 0. */
double kpb_median(double *v, size_t n);

/* Wall-clock seconds from a monotonic clock. */
double kpb_now(void);

/* Appends a named figure to a row before kpb_add (ignored past KPB_MAX_METRICS). */
void kpb_row_metric(kpb_row *row, const char *name, double value);

/* Records a row (copies the strings and the metrics; metric names stay borrowed). */
void kpb_add(kpb *b, const kpb_row *row);

/* A run-wide note (printed under the table, JSON "notes"); printf-style, copied. */
void kpb_note(kpb *b, const char *fmt, ...) KP_PRINTF(2, 3);

/* A run-wide figure (printed under the table, JSON "metrics"); the name is borrowed. */
void kpb_metric_add(kpb *b, const char *name, double value);

/* Prints the table, writes the JSON file when asked, releases everything. Returns the exit code:
 * 0, or 1 when writing failed. */
int kpb_close(kpb *b);

/* A note of the tunables a kernel runs with, their values and where each comes from ("logic.forward
 * tuning: WG=256 (default)"): benchmarks say what they ran (STYLE). Nothing when it is absent. */
void kpb_note_tuning(kpb *b, const char *kernel);

/* Uniform floats in [-1, 1) from a seeded generator (never all zeros). */
void kpb_fill(float *x, size_t n, uint64_t seed);

#endif
