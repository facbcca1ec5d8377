/* SPDX-License-Identifier: Apache-2.0 */
/* The benchmark harness: command line, peaks, median timings, the results table and JSON. */
#include "harness.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"

static void usage(const char *name, const kpb_flag *flags)
{
    fprintf(stderr, "usage: %s [--device SPEC] [--manifest FILE] [--json FILE] [--quick]", name);
    for (const kpb_flag *f = flags; f && f->name; f++)
        fprintf(stderr, f->text ? " [%s ARG]" : " [%s]", f->name);
    fprintf(stderr,
            "\nTimes Kernelport kernels and their peer library in one process; prints a table\n"
            "and, with --json, writes the results (times, GFLOP/s, GB/s, fraction of the\n"
            "device's measured peaks, ratio against the peer).\n");
    for (const kpb_flag *f = flags; f && f->name; f++)
        fprintf(stderr, "  %-14s %s\n", f->name, f->help);
    exit(CLI_EXIT_USAGE);
}

/* How many of argv[i], argv[i + 1] one of `flags` takes (0: none matches). */
static int take_flag(const kpb_flag *flags, int argc, char **argv, int i)
{
    for (const kpb_flag *f = flags; f && f->name; f++) {
        if (strcmp(argv[i], f->name) != 0)
            continue;
        if (!f->text) {
            *f->value = 1;
            return 1;
        }
        if (i + 1 < argc) {
            *f->text = argv[i + 1];
            return 2;
        }
    }
    return 0;
}

void kpb_open(kpb *b, const char *name, int argc, char **argv)
{
    kpb_open_flags(b, name, argc, argv, NULL);
}

void kpb_open_flags(kpb *b, const char *name, int argc, char **argv, const kpb_flag *flags)
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
        else {
            const int taken = take_flag(flags, argc, argv, i);
            if (!taken)
                usage(name, flags);
            i += taken - 1;
        }
    }
    kp_status st = kp_runtime_create(&o, &b->rt);
    if (st != KP_OK) {
        cli_status_error(st, kp_last_error(NULL));
        exit(CLI_EXIT_RUNTIME);
    }
    b->device.struct_size = sizeof b->device;
    kp_runtime_device(b->rt, &b->device, NULL);
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double kpb_median(double *v, size_t n)
{
    if (n == 0)
        return 0;
    qsort(v, n, sizeof *v, by_value);
    return v[n / 2];
}

double kpb_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int kpb_more_runs(const kpb *b, int runs, double total)
{
    if (runs >= 200)
        return 0;
    if (b->max_case_s > 0 && runs >= 3 && total >= b->max_case_s)
        return 0;
    return runs < (b->quick ? 3 : 10) || total < (b->quick ? 0.01 : 0.3);
}

kp_status kpb_time_kernel(kpb *b, kp_kernel *k, const kp_arg *args, size_t n, double *median,
                          double *p10, double *p90)
{
    enum { MAX_RUNS = 200 };
    double t[MAX_RUNS], total = 0;
    int runs = 0;
    kp_status st = KP_OK;
    for (int i = 0; i < 3 && st == KP_OK; i++)
        st = kp_kernel_launch(b->rt, k, args, n, NULL);
    if (st == KP_OK)
        st = kp_finish(b->rt);
    while (st == KP_OK && runs < MAX_RUNS && kpb_more_runs(b, runs, total)) {
        kp_event *ev = NULL;
        if (b->before_timed)
            b->before_timed(b->before_timed_user);
        st = kp_kernel_launch(b->rt, k, args, n, &ev);
        if (st == KP_OK)
            st = kp_event_elapsed(b->rt, ev, &t[runs]);
        kp_event_destroy(b->rt, ev);
        if (st == KP_OK)
            total += t[runs++];
    }
    if (st != KP_OK)
        return st;
    *median = kpb_median(t, (size_t)runs);
    if (p10)
        *p10 = t[runs / 10];
    if (p90)
        *p90 = t[(runs * 9) / 10];
    return KP_OK;
}

double kpb_time_host(kpb *b, void (*fn)(void *user), void *user)
{
    enum { MAX_RUNS = 200 };
    double t[MAX_RUNS], total = 0;
    int runs = 0;
    for (int i = 0; i < 2; i++)
        fn(user);
    while (runs < MAX_RUNS && kpb_more_runs(b, runs, total)) {
        double t0 = kpb_now();
        fn(user);
        t[runs] = kpb_now() - t0;
        total += t[runs++];
    }
    return kpb_median(t, (size_t)runs);
}

void kpb_row_metric(kpb_row *row, const char *name, double value)
{
    if (row->n_metrics < KPB_MAX_METRICS)
        row->metrics[row->n_metrics++] = (kpb_metric){.name = name, .value = value};
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

void kpb_note(kpb *b, const char *fmt, ...)
{
    char text[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    b->notes = cli_realloc(b->notes, (b->n_notes + 1) * sizeof *b->notes);
    b->notes[b->n_notes++] = cli_strdup(text);
}

void kpb_metric_add(kpb *b, const char *name, double value)
{
    if (b->n_metrics < KPB_MAX_METRICS)
        b->metrics[b->n_metrics++] = (kpb_metric){.name = name, .value = value};
}

static double per_second(double amount, double seconds)
{
    return seconds > 0 ? amount / seconds * 1e-9 : 0;
}

static void print_metrics(const kpb_metric *m, size_t n)
{
    for (size_t i = 0; i < n; i++)
        printf("%s%s=%.6g", i ? ", " : "", m[i].name, m[i].value);
}

static void print_table(const kpb *b)
{
    char dev[400];
    printf("%s on %s\n", b->name, cli_format_device(&b->device, dev, sizeof dev));
    if (b->have_peak)
        printf("peaks: %.1f GB/s, %.1f GFLOP/s fp32 (measured %s)\n", b->peak.bandwidth_gbs,
               b->peak.fp32_gflops, b->peak.measured);
    else
        printf("peaks: not measured\n");
    if (b->n_rows > 0) {
        printf("\n");
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
            int ok = r->status == KP_OK && r->ours_s > 0;
            cli_table_cell(t, "%s", r->case_name);
            cli_table_cell(t, "%s", r->ours);
            /* A failed row shows its status where the time would be, never a speed. */
            if (ok)
                cli_table_cell(t, "%.1f", r->ours_s * 1e6);
            else
                cli_table_cell(t, "!! %s", kp_status_name(r->status));
            cli_table_cell(t, ok ? "%.2f" : "-", gf);
            cli_table_percent(t, ok && b->have_peak ? gf / b->peak.fp32_gflops : -1, 0);
            cli_table_cell(t, ok ? "%.2f" : "-", gb);
            cli_table_percent(t, ok && b->have_peak ? gb / b->peak.bandwidth_gbs : -1, 1);
            cli_table_cell(t, "%s", r->peer ? r->peer : "-");
            cli_table_cell(t, r->peer_s > 0 ? "%.1f" : "-", r->peer_s * 1e6);
            /* Above 1 means Kernelport is faster than the peer. */
            cli_table_cell(t, ok && r->peer_s > 0 ? "%.2fx" : "-", r->peer_s / r->ours_s);
        }
        cli_table_print(t, stdout, 0);
        cli_table_destroy(t);
    }
    int header = 0;
    for (size_t i = 0; i < b->n_rows; i++) {
        const kpb_row *r = &b->rows[i];
        if (!r->note && r->n_metrics == 0)
            continue;
        if (!header++)
            printf("\n");
        printf("%s %s: ", r->case_name, r->ours);
        if (r->note)
            printf("%s%s", r->note, r->n_metrics ? "; " : "");
        print_metrics(r->metrics, r->n_metrics);
        printf("\n");
    }
    if (b->n_notes || b->n_metrics)
        printf("\n");
    for (size_t i = 0; i < b->n_notes; i++)
        printf("note: %s\n", b->notes[i]);
    if (b->n_metrics) {
        printf("metrics: ");
        print_metrics(b->metrics, b->n_metrics);
        printf("\n");
    }
}

static void json_metrics(kpj_writer *w, const kpb_metric *m, size_t n)
{
    kpj_key(w, "metrics");
    kpj_begin_object(w);
    for (size_t i = 0; i < n; i++)
        kpj_key_double(w, m[i].name, m[i].value);
    kpj_end_object(w);
}

static void json_row(kpj_writer *w, const kpb *b, const kpb_row *r)
{
    int ok = r->status == KP_OK && r->ours_s > 0;
    double gf = per_second(r->flops, r->ours_s), gb = per_second(r->bytes, r->ours_s);
    kpj_begin_object(w);
    kpj_key_string(w, "case", r->case_name);
    kpj_key_string(w, "kernel", r->ours);
    kpj_key_string(w, "status", kp_status_name(r->status));
    /* A row that is not KP_OK has no time: a wrong result must never read as a speed. */
    if (ok) {
        kpj_key_double(w, "seconds", r->ours_s);
        kpj_key_double(w, "p10_s", r->ours_p10);
        kpj_key_double(w, "p90_s", r->ours_p90);
    } else {
        kpj_key_null(w, "seconds");
        kpj_key_null(w, "p10_s");
        kpj_key_null(w, "p90_s");
    }
    kpj_key_double(w, "flops", r->flops);
    kpj_key_double(w, "bytes", r->bytes);
    if (ok) {
        kpj_key_double(w, "gflops", gf);
        kpj_key_double(w, "gbs", gb);
    } else {
        kpj_key_null(w, "gflops");
        kpj_key_null(w, "gbs");
    }
    if (ok && b->have_peak) {
        kpj_key_double(w, "fraction_fp32", gf / b->peak.fp32_gflops);
        kpj_key_double(w, "fraction_bandwidth", gb / b->peak.bandwidth_gbs);
    } else {
        kpj_key_null(w, "fraction_fp32");
        kpj_key_null(w, "fraction_bandwidth");
    }
    cli_json_optional(w, "peer", r->peer);
    if (r->peer_s > 0) {
        kpj_key_double(w, "peer_seconds", r->peer_s);
        if (ok)
            kpj_key_double(w, "speedup_vs_peer", r->peer_s / r->ours_s);
        else
            kpj_key_null(w, "speedup_vs_peer");
    } else {
        kpj_key_null(w, "peer_seconds");
        kpj_key_null(w, "speedup_vs_peer");
    }
    cli_json_optional(w, "note", r->note);
    if (r->n_metrics)
        json_metrics(w, r->metrics, r->n_metrics);
    kpj_end_object(w);
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
    for (size_t i = 0; i < b->n_rows; i++)
        json_row(&w, b, &b->rows[i]);
    kpj_end_array(&w);
    if (b->n_notes) {
        kpj_key(&w, "notes");
        kpj_begin_array(&w);
        for (size_t i = 0; i < b->n_notes; i++)
            kpj_string(&w, b->notes[i]);
        kpj_end_array(&w);
    }
    if (b->n_metrics)
        json_metrics(&w, b->metrics, b->n_metrics);
    kpj_end_object(&w);
    int bad = kpj_finish(&w) != 0;
    bad |= fclose(f) != 0;
    if (bad)
        cli_error("cannot write %s", b->json);
    return bad;
}

int kpb_close(kpb *b)
{
    if (!b->no_peak) {
        b->peak.struct_size = sizeof b->peak;
        b->have_peak = kp_device_peak(b->rt, 0, &b->peak) == KP_OK;
    }
    print_table(b);
    int rc = b->json ? write_json(b) : 0;
    for (size_t i = 0; i < b->n_rows; i++) {
        free(b->rows[i].case_name);
        free(b->rows[i].ours);
        free(b->rows[i].peer);
        free(b->rows[i].note);
    }
    free(b->rows);
    for (size_t i = 0; i < b->n_notes; i++)
        free(b->notes[i]);
    free(b->notes);
    kp_runtime_destroy(b->rt);
    return rc;
}

void kpb_note_tuning(kpb *b, const char *kernel)
{
    kp_kernel *k;
    if (kp_kernel_find(b->rt, kernel, &k) != KP_OK)
        return;
    char text[400] = "";
    size_t used = 0;
    for (size_t i = 0; used < sizeof text; i++) {
        kp_tuning_info ti = {.struct_size = sizeof ti};
        if (kp_kernel_tuning(b->rt, k, i, &ti) != KP_OK)
            break;
        used += (size_t)snprintf(text + used, sizeof text - used, "%s%s=%lld (%s)", i ? ", " : "",
                                 ti.name, (long long)ti.value, ti.origin);
    }
    kpb_note(b, "%s tuning: %s", kernel, text);
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
