/* SPDX-License-Identifier: Apache-2.0 */
/* `kernelport bench [PATTERN]`: each kernel timed on its benchmark sizes, against the peaks. */
#include "cli.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const cli_flag bench_flags[] = {
    {"size", "NAME", "only this sample size (default: the kernel's benchmark sizes)"},
    {"runs", "N", "timed launches at least (default 10)"},
    {"seconds", "S", "device time to accumulate per size at least (default 0.25)"},
    {"json", "FILE", "also write the results as JSON to FILE"},
    {NULL, NULL, NULL},
};

typedef struct row {
    char *kernel;
    char *size;
    kp_status status;
    char *message;
    kp_bench_result r;
    char *tuning_text; /* "WG=64 (default)" */
    kp_tuning_info *tuning;
    size_t n_tuning;
} row;

static int parse_number(const char *text, double *out)
{
    char *end;
    errno = 0;
    *out = strtod(text, &end);
    return errno == 0 && *end == '\0' && *out >= 0;
}

/* "file.yaml:12" from an origin "file.yaml:12 match {...}". */
static int origin_length(const char *origin)
{
    const char *sp = strstr(origin, " match");
    return sp ? (int)(sp - origin) : (int)strlen(origin);
}

static void collect_tuning(kp_runtime *rt, kp_kernel *k, row *r)
{
    kp_kernel_info info = {.struct_size = sizeof info};
    kp_kernel_info_get(k, &info);
    r->tuning = cli_realloc(NULL, (info.n_tunables + 1) * sizeof *r->tuning);
    size_t len = 1;
    char *text = cli_strdup("");
    for (size_t i = 0; i < info.n_tunables; i++) {
        kp_tuning_info *t = &r->tuning[r->n_tuning];
        t->struct_size = sizeof *t;
        if (kp_kernel_tuning(rt, k, i, t) != KP_OK)
            continue;
        r->n_tuning++;
        char value[128];
        cli_format_tuning_value(t, value, sizeof value);
        char part[512];
        int n = snprintf(part, sizeof part, "%s%s=%s (%.*s)", i ? ", " : "", t->name, value,
                         origin_length(t->origin), t->origin);
        len += (size_t)(n > 0 ? n : 0);
        text = cli_realloc(text, len);
        strcat(text, part);
    }
    r->tuning_text = text;
}

static double fraction(double value, double peak)
{
    return peak > 0 && value > 0 ? value / peak : -1;
}

static void print_table(row *rows, size_t n, const kp_peak *peak)
{
    cli_table *t = cli_table_create(10);
    const char *head[] = {"KERNEL",  "SIZE",   "RUNS", "MEDIAN us", "P10-P90 us",
                          "GFLOP/s", "% FP32", "GB/s", "% BW",      "TUNING"};
    for (int i = 0; i < 10; i++)
        cli_table_cell(t, "%s", head[i]);
    for (int i = 2; i <= 8; i++)
        cli_table_align_right(t, i);
    for (size_t i = 0; i < n; i++) {
        row *r = &rows[i];
        cli_table_cell(t, "%s", r->kernel);
        cli_table_cell(t, "%s", r->size);
        if (r->status != KP_OK) {
            for (int c = 0; c < 7; c++)
                cli_table_cell(t, "-");
            cli_table_cell(t, "%s: %.*s", kp_status_name(r->status), (int)strcspn(r->message, "\n"),
                           r->message);
            continue;
        }
        double ff = fraction(r->r.gflops, peak ? peak->fp32_gflops : 0);
        double fb = fraction(r->r.gbs, peak ? peak->bandwidth_gbs : 0);
        cli_table_cell(t, "%u", r->r.runs);
        cli_table_cell(t, "%.1f", r->r.median_s * 1e6);
        cli_table_cell(t, "%.1f-%.1f", r->r.p10_s * 1e6, r->r.p90_s * 1e6);
        cli_table_cell(t, "%.2f", r->r.gflops);
        cli_table_percent(t, ff, 0);
        cli_table_cell(t, "%.2f", r->r.gbs);
        cli_table_percent(t, fb, 1);
        cli_table_cell(t, "%s", r->tuning_text);
    }
    cli_table_print(t, stdout, 0);
    cli_table_destroy(t);
}

static void write_json(kpj_writer *w, const kp_device_info *d, const kp_peak *peak, row *rows,
                       size_t n)
{
    kpj_begin_object(w);
    kpj_key(w, "device");
    kpj_begin_object(w);
    cli_json_device_fields(w, d);
    kpj_end_object(w);
    kpj_key(w, "peak");
    if (peak) {
        kpj_begin_object(w);
        kpj_key_double(w, "bandwidth_gbs", peak->bandwidth_gbs);
        kpj_key_double(w, "fp32_gflops", peak->fp32_gflops);
        kpj_key_double(w, "launch_us", peak->launch_us);
        kpj_key_string(w, "measured", peak->measured);
        kpj_end_object(w);
    } else {
        kpj_null(w);
    }
    kpj_key_string(w, "kernelport", kp_version());
    kpj_key(w, "results");
    kpj_begin_array(w);
    for (size_t i = 0; i < n; i++) {
        row *r = &rows[i];
        kpj_begin_object(w);
        kpj_key_string(w, "kernel", r->kernel);
        kpj_key_string(w, "size", r->size);
        kpj_key_string(w, "status", kp_status_name(r->status));
        cli_json_optional(w, "message", r->message);
        kpj_key_int(w, "runs", r->r.runs);
        kpj_key_double(w, "median_s", r->r.median_s);
        kpj_key_double(w, "min_s", r->r.min_s);
        kpj_key_double(w, "max_s", r->r.max_s);
        kpj_key_double(w, "p10_s", r->r.p10_s);
        kpj_key_double(w, "p90_s", r->r.p90_s);
        kpj_key_double(w, "flops", r->r.flops);
        kpj_key_double(w, "bytes", r->r.bytes);
        kpj_key_double(w, "gflops", r->r.gflops);
        kpj_key_double(w, "gbs", r->r.gbs);
        double ff = fraction(r->r.gflops, peak ? peak->fp32_gflops : 0);
        double fb = fraction(r->r.gbs, peak ? peak->bandwidth_gbs : 0);
        if (ff < 0)
            kpj_key_null(w, "fraction_fp32");
        else
            kpj_key_double(w, "fraction_fp32", ff);
        if (fb < 0)
            kpj_key_null(w, "fraction_bandwidth");
        else
            kpj_key_double(w, "fraction_bandwidth", fb);
        kpj_key(w, "tuning");
        kpj_begin_array(w);
        for (size_t j = 0; j < r->n_tuning; j++)
            cli_json_tuning(w, &r->tuning[j], KP_OK, NULL);
        kpj_end_array(w);
        kpj_end_object(w);
    }
    kpj_end_array(w);
    kpj_end_object(w);
}

static int run_bench(const cli_ctx *ctx)
{
    const char *pattern = ctx->argc > 0 ? ctx->argv[0] : NULL;
    const char *only = cli_flag_value(ctx, "size"), *json_file = cli_flag_value(ctx, "json");
    kp_bench_options opt = kp_bench_options_default();
    double v;
    if (cli_flag_value(ctx, "runs")) {
        if (!parse_number(cli_flag_value(ctx, "runs"), &v) || v < 1)
            return cli_usage_error(ctx->command, "--runs needs a positive integer");
        opt.min_runs = (uint32_t)v;
    }
    if (cli_flag_value(ctx, "seconds")) {
        if (!parse_number(cli_flag_value(ctx, "seconds"), &v))
            return cli_usage_error(ctx->command, "--seconds needs a number >= 0");
        opt.min_seconds = v;
    }
    kp_runtime *rt;
    int rc = cli_runtime_open(ctx, &rt);
    if (rc != CLI_EXIT_OK)
        return rc;
    kp_device_info d;
    const char *why;
    cli_runtime_device(rt, &d, &why);
    char name[400];
    cli_format_device(&d, name, sizeof name);

    kp_peak peak = {.struct_size = sizeof peak};
    cli_progress("measuring the device's peaks");
    kp_status pst = kp_device_peak(rt, 0, &peak);
    cli_progress_clear();
    if (pst != KP_OK && pst != KP_ERR_UNSUPPORTED)
        cli_status_error(pst, kp_last_error(rt));

    row *rows = NULL;
    size_t n = 0, failed = 0, matched = 0;
    for (size_t i = 0; i < kp_kernel_count(rt); i++) {
        kp_kernel *k = kp_kernel_at(rt, i);
        kp_kernel_info info = {.struct_size = sizeof info};
        kp_kernel_info_get(k, &info);
        if (!kp_kernel_name_matches(pattern, info.name))
            continue;
        matched++;
        /* A kernel this device cannot run is left out, with a note. */
        if (kp_kernel_supported(rt, k) != KP_OK) {
            if (!ctx->json)
                fprintf(stderr, "kernelport: note: %s skipped: %s\n", info.name, kp_last_error(rt));
            continue;
        }
        const char *one[] = {only, NULL};
        const char *const *sizes = only ? one : kp_kernel_sample_sizes(k, 1);
        for (size_t s = 0; sizes[s]; s++) {
            rows = cli_realloc(rows, (n + 1) * sizeof *rows);
            row *r = &rows[n++];
            memset(r, 0, sizeof *r);
            r->kernel = cli_strdup(info.name);
            r->size = cli_strdup(sizes[s]);
            cli_progress("[%zu] %s %s", n, info.name, sizes[s]);
            r->r.struct_size = sizeof r->r;
            r->status = kp_kernel_bench(rt, k, sizes[s], &opt, &r->r);
            r->message = cli_strdup(r->status == KP_OK ? "" : kp_last_error(rt));
            failed += r->status != KP_OK;
            collect_tuning(rt, k, r);
        }
    }
    cli_progress_clear();
    const kp_peak *pk = pst == KP_OK ? &peak : NULL;
    if (matched == 0) {
        cli_error("no kernel matches '%s'", pattern ? pattern : "*");
        rc = CLI_EXIT_FAILED;
    } else if (ctx->json) {
        kpj_writer w;
        kpj_init(&w, stdout, 2);
        write_json(&w, &d, pk, rows, n);
        rc = kpj_finish(&w) == 0 ? CLI_EXIT_OK : CLI_EXIT_FAILED;
    } else {
        printf("Benchmarks on %s\n", name);
        if (pk)
            printf("peaks: %.1f GB/s, %.1f GFLOP/s fp32, %.1f us launch (%s)\n\n",
                   pk->bandwidth_gbs, pk->fp32_gflops, pk->launch_us, pk->measured);
        else
            printf("peaks: not measured on this device\n\n");
        print_table(rows, n, pk);
    }
    if (json_file && matched) {
        FILE *f = fopen(json_file, "w");
        if (!f) {
            cli_error("cannot write %s: %s", json_file, strerror(errno));
            rc = CLI_EXIT_FAILED;
        } else {
            kpj_writer w;
            kpj_init(&w, f, 2);
            write_json(&w, &d, pk, rows, n);
            if (kpj_finish(&w) != 0 || fclose(f) != 0) {
                cli_error("cannot write %s", json_file);
                rc = CLI_EXIT_FAILED;
            }
        }
    }
    for (size_t i = 0; i < n; i++) {
        free(rows[i].kernel);
        free(rows[i].size);
        free(rows[i].message);
        free(rows[i].tuning_text);
        free(rows[i].tuning);
    }
    free(rows);
    cli_runtime_close(ctx, rt);
    return failed ? CLI_EXIT_FAILED : rc;
}

const cli_command cli_cmd_bench = {
    .name = "bench",
    .summary = "time kernels on their benchmark sizes against the device's peaks",
    .usage = "[PATTERN] [--size NAME] [--runs N] [--seconds S] [--json FILE]",
    .details = "Each kernel runs on the sample arguments of each of its benchmark sizes: warm-up "
               "launches, then launches timed one by one with events until --runs and --seconds "
               "are both reached. The table shows the median, the 10th-90th percentile spread, "
               "GFLOP/s and GB/s from the kernel's cost, their fractions of the measured peaks "
               "(`kernelport peak`), and the tuning values used with where they came from.",
    .flags = bench_flags,
    .min_args = 0,
    .max_args = 1,
    .run = run_bench,
};
