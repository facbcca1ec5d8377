/* The benchmark harness: command line, peaks, median timings, the results table and JSON. */
#include "harness.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"

static void usage(const char *name)
{
    fprintf(stderr,
            "usage: %s [--device SPEC] [--manifest FILE] [--json FILE] [--quick]\n"
            "Times Kernelport kernels and their peer library in one process; prints a table\n"
            "and, with --json, writes the results (times, GFLOP/s, GB/s, fraction of the\n"
            "device's measured peaks, ratio against the peer).\n",
            name);
    exit(CLI_EXIT_USAGE);
}

void kpb_open(kpb *b, const char *name, int argc, char **argv)
{
    memset(b, 0, sizeof *b);
    b->name = name;
    kp_runtime_options o = kp_runtime_options_default();
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--quick") == 0)
            b->quick = 1;
        else if (i + 1 < argc && strcmp(a, "--device") == 0)
            o.device = argv[++i];
        else if (i + 1 < argc && strcmp(a, "--manifest") == 0)
            o.manifest_path = argv[++i];
        else if (i + 1 < argc && strcmp(a, "--json") == 0)
            b->json = argv[++i];
        else
            usage(name);
    }
    kp_status st = kp_runtime_create(&o, &b->rt);
    if (st != KP_OK) {
        cli_status_error(st, kp_last_error(NULL));
        exit(CLI_EXIT_RUNTIME);
    }
    kp_runtime_device(b->rt, &b->device, NULL);
    b->have_peak = kp_device_peak(b->rt, 0, &b->peak) == KP_OK;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

kp_status kpb_time_kernel(kpb *b, kp_kernel *k, const kp_arg *args, size_t n, double *median,
                          double *p10, double *p90)
{
    enum { MAX_RUNS = 200 };
    double t[MAX_RUNS], total = 0;
    int runs = 0, want = b->quick ? 3 : 10;
    double min_total = b->quick ? 0.01 : 0.3;
    kp_status st = KP_OK;
    for (int i = 0; i < 3 && st == KP_OK; i++)
        st = kp_kernel_launch(b->rt, k, args, n, NULL);
    if (st == KP_OK)
        st = kp_finish(b->rt);
    while (st == KP_OK && runs < MAX_RUNS && (runs < want || total < min_total)) {
        kp_event *ev = NULL;
        st = kp_kernel_launch(b->rt, k, args, n, &ev);
        if (st == KP_OK)
            st = kp_event_elapsed(b->rt, ev, &t[runs]);
        kp_event_destroy(b->rt, ev);
        if (st == KP_OK)
            total += t[runs++];
    }
    if (st != KP_OK)
        return st;
    qsort(t, (size_t)runs, sizeof *t, by_value);
    *median = t[runs / 2];
    if (p10)
        *p10 = t[runs / 10];
    if (p90)
        *p90 = t[(runs * 9) / 10];
    return KP_OK;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

double kpb_time_host(kpb *b, void (*fn)(void *user), void *user)
{
    enum { MAX_RUNS = 200 };
    double t[MAX_RUNS], total = 0;
    int runs = 0, want = b->quick ? 3 : 10;
    double min_total = b->quick ? 0.01 : 0.3;
    for (int i = 0; i < 2; i++)
        fn(user);
    while (runs < MAX_RUNS && (runs < want || total < min_total)) {
        double t0 = now();
        fn(user);
        t[runs] = now() - t0;
        total += t[runs++];
    }
    qsort(t, (size_t)runs, sizeof *t, by_value);
    return t[runs / 2];
}

void kpb_add(kpb *b, const kpb_row *row)
{
    b->rows = cli_realloc(b->rows, (b->n_rows + 1) * sizeof *b->rows);
    kpb_row *r = &b->rows[b->n_rows++];
    *r = *row;
    r->case_name = cli_strdup(row->case_name);
    r->ours = cli_strdup(row->ours);
    r->peer = row->peer ? cli_strdup(row->peer) : NULL;
    r->note = row->note ? cli_strdup(row->note) : NULL;
}

static double per_second(double amount, double seconds)
{
    return seconds > 0 ? amount / seconds * 1e-9 : 0;
}

static void print_table(const kpb *b)
{
    char dev[400];
    printf("%s on %s\n", b->name, cli_format_device(&b->device, dev, sizeof dev));
    if (b->have_peak)
        printf("peaks: %.1f GB/s, %.1f GFLOP/s fp32 (measured %s)\n\n", b->peak.bandwidth_gbs,
               b->peak.fp32_gflops, b->peak.measured);
    else
        printf("peaks: not measured\n\n");
    cli_table *t = cli_table_create(10);
    const char *head[] = {"CASE", "KERNEL", "US",   "GFLOP/s", "% FP32",
                          "GB/s", "% BW",   "PEER", "PEER US", "VS PEER"};
    for (int i = 0; i < 10; i++)
        cli_table_cell(t, "%s", head[i]);
    for (int i = 2; i <= 6; i++)
        cli_table_align_right(t, i);
    cli_table_align_right(t, 8);
    cli_table_align_right(t, 9);
    for (size_t i = 0; i < b->n_rows; i++) {
        const kpb_row *r = &b->rows[i];
        double gf = per_second(r->flops, r->ours_s), gb = per_second(r->bytes, r->ours_s);
        cli_table_cell(t, "%s", r->case_name);
        cli_table_cell(t, "%s", r->ours);
        cli_table_cell(t, "%.1f", r->ours_s * 1e6);
        cli_table_cell(t, "%.2f", gf);
        cli_table_cell(t, b->have_peak ? "%.1f" : "-", gf / b->peak.fp32_gflops * 100);
        cli_table_cell(t, "%.2f", gb);
        cli_table_cell(t, b->have_peak ? "%.1f" : "-", gb / b->peak.bandwidth_gbs * 100);
        cli_table_cell(t, "%s", r->peer ? r->peer : "-");
        cli_table_cell(t, r->peer_s > 0 ? "%.1f" : "-", r->peer_s * 1e6);
        /* Above 1 means Kernelport is faster than the peer. */
        cli_table_cell(t, r->peer_s > 0 ? "%.2fx" : "-", r->peer_s / r->ours_s);
    }
    cli_table_print(t, stdout, 0);
    cli_table_destroy(t);
}

static int write_json(const kpb *b)
{
    FILE *f = fopen(b->json, "w");
    if (!f) {
        cli_error("cannot write %s: %s", b->json, strerror(errno));
        return 1;
    }
    kpj_writer w;
    kpj_init(&w, f, 2);
    kpj_begin_object(&w);
    kpj_key_string(&w, "benchmark", b->name);
    kpj_key_string(&w, "kernelport", kp_version());
    kpj_key(&w, "device");
    kpj_begin_object(&w);
    cli_json_device_fields(&w, &b->device);
    kpj_end_object(&w);
    kpj_key(&w, "peak");
    if (b->have_peak) {
        kpj_begin_object(&w);
        kpj_key_double(&w, "bandwidth_gbs", b->peak.bandwidth_gbs);
        kpj_key_double(&w, "fp32_gflops", b->peak.fp32_gflops);
        kpj_key_double(&w, "launch_us", b->peak.launch_us);
        kpj_key_string(&w, "measured", b->peak.measured);
        kpj_end_object(&w);
    } else {
        kpj_null(&w);
    }
    kpj_key(&w, "results");
    kpj_begin_array(&w);
    for (size_t i = 0; i < b->n_rows; i++) {
        const kpb_row *r = &b->rows[i];
        double gf = per_second(r->flops, r->ours_s), gb = per_second(r->bytes, r->ours_s);
        kpj_begin_object(&w);
        kpj_key_string(&w, "case", r->case_name);
        kpj_key_string(&w, "kernel", r->ours);
        kpj_key_double(&w, "seconds", r->ours_s);
        kpj_key_double(&w, "p10_s", r->ours_p10);
        kpj_key_double(&w, "p90_s", r->ours_p90);
        kpj_key_double(&w, "flops", r->flops);
        kpj_key_double(&w, "bytes", r->bytes);
        kpj_key_double(&w, "gflops", gf);
        kpj_key_double(&w, "gbs", gb);
        if (b->have_peak) {
            kpj_key_double(&w, "fraction_fp32", gf / b->peak.fp32_gflops);
            kpj_key_double(&w, "fraction_bandwidth", gb / b->peak.bandwidth_gbs);
        } else {
            kpj_key_null(&w, "fraction_fp32");
            kpj_key_null(&w, "fraction_bandwidth");
        }
        cli_json_optional(&w, "peer", r->peer);
        if (r->peer_s > 0) {
            kpj_key_double(&w, "peer_seconds", r->peer_s);
            kpj_key_double(&w, "speedup_vs_peer", r->peer_s / r->ours_s);
        } else {
            kpj_key_null(&w, "peer_seconds");
            kpj_key_null(&w, "speedup_vs_peer");
        }
        cli_json_optional(&w, "note", r->note);
        kpj_end_object(&w);
    }
    kpj_end_array(&w);
    kpj_end_object(&w);
    int bad = kpj_finish(&w) != 0;
    bad |= fclose(f) != 0;
    if (bad)
        cli_error("cannot write %s", b->json);
    return bad;
}

int kpb_close(kpb *b)
{
    print_table(b);
    int rc = b->json ? write_json(b) : 0;
    for (size_t i = 0; i < b->n_rows; i++) {
        free(b->rows[i].case_name);
        free(b->rows[i].ours);
        free(b->rows[i].peer);
        free(b->rows[i].note);
    }
    free(b->rows);
    kp_runtime_destroy(b->rt);
    return rc;
}

void kpb_fill(float *x, size_t n, uint64_t seed)
{
    uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1;
    for (size_t i = 0; i < n; i++) {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        x[i] = (float)((double)(s >> 11) * 0x1.0p-52 - 1.0);
    }
}
