/* The benchmark harness shared by bench/ programs: options, peer timing, a table and JSON. */
#ifndef KP_BENCH_HARNESS_H
#define KP_BENCH_HARNESS_H

#include <stddef.h>
#include <stdint.h>

#include "kernelport/kernelport.h"

typedef struct kpb {
    const char *name; /* "bench-example" */
    kp_runtime *rt;
    kp_device_info device;
    kp_peak peak;
    int have_peak;
    int quick;        /* --quick: fewer runs, for smoke tests */
    const char *json; /* --json FILE */
    struct kpb_row *rows;
    size_t n_rows;
} kpb;

/* One comparison: our kernel and a peer on the same problem, timed in the same process. */
typedef struct kpb_row {
    char *case_name; /* "n=16777216" */
    char *ours;      /* "example.axpy" */
    char *peer;      /* "cblas_saxpy (OpenBLAS, 2 threads)", or NULL */
    double ours_s;   /* median seconds per call */
    double ours_p10, ours_p90;
    double peer_s;       /* 0 when there is no peer */
    double flops, bytes; /* per call */
    char *note;
} kpb_row;

/*
 * Parses --device SPEC, --manifest FILE, --json FILE and --quick, creates the runtime and reads
 * (or measures) the device's peaks. Prints usage and exits 2 on a bad command line, or exits 3
 * when the runtime cannot be created.
 */
void kpb_open(kpb *b, const char *name, int argc, char **argv);

/* Device time of a launch, median over repeated event-timed launches after warm-up. */
kp_status kpb_time_kernel(kpb *b, kp_kernel *k, const kp_arg *args, size_t n, double *median,
                          double *p10, double *p90);

/* Wall time of a host function (a peer library call), median over repeats after warm-up. */
double kpb_time_host(kpb *b, void (*fn)(void *user), void *user);

/* Records a row (copies the strings). */
void kpb_add(kpb *b, const kpb_row *row);

/* Prints the table, writes the JSON file when asked, releases everything. Returns the exit code:
 * 0, or 1 when writing failed. */
int kpb_close(kpb *b);

/* Uniform floats in [-1, 1) from a seeded generator (never all zeros). */
void kpb_fill(float *x, size_t n, uint64_t seed);

#endif
