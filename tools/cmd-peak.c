/* SPDX-License-Identifier: Apache-2.0 */
/* `kernelport peak`: the device's measured bandwidth, FP32 rate and launch latency. */
#include "cli.h"

#include <string.h>

static const cli_flag peak_flags[] = {
    {"remeasure", NULL, "measure again instead of reading the cached result"},
    {NULL, NULL, NULL},
};

static int run_peak(const cli_ctx *ctx)
{
    kp_runtime *rt;
    int rc = cli_runtime_open(ctx, &rt);
    if (rc != CLI_EXIT_OK)
        return rc;
    kp_device_info d;
    const char *why;
    cli_runtime_device(rt, &d, &why);
    char name[400];
    cli_format_device(&d, name, sizeof name);
    if (!ctx->json)
        cli_progress("measuring peaks on %s", name);
    kp_peak p = {.struct_size = sizeof p};
    kp_status st = kp_device_peak(rt, cli_flag_value(ctx, "remeasure") != NULL, &p);
    cli_progress_clear();
    if (st != KP_OK) {
        cli_status_error(st, kp_last_error(rt));
        cli_runtime_close(ctx, rt);
        return CLI_EXIT_FAILED;
    }
    if (ctx->json) {
        kpj_writer w;
        cli_json_begin(&w);
        kpj_begin_object(&w);
        kpj_key(&w, "device");
        kpj_begin_object(&w);
        cli_json_device_fields(&w, &d);
        kpj_end_object(&w);
        kpj_key_double(&w, "bandwidth_gbs", p.bandwidth_gbs);
        kpj_key_double(&w, "read_gbs", p.read_gbs);
        kpj_key_double(&w, "copy_gbs", p.copy_gbs);
        kpj_key_double(&w, "triad_gbs", p.triad_gbs);
        kpj_key_int(&w, "vector_width", p.vector_width);
        kpj_key_double(&w, "fp32_gflops", p.fp32_gflops);
        kpj_key_double(&w, "launch_us", p.launch_us);
        kpj_key_double(&w, "roundtrip_us", p.roundtrip_us);
        kpj_key_string(&w, "measured", p.measured);
        kpj_key_bool(&w, "from_cache", p.from_cache);
        kpj_end_object(&w);
        rc = cli_json_end(&w);
    } else {
        printf("Peaks of %s%s\n\n", name,
               p.from_cache ? " (cached; --remeasure to measure again)" : "");
        cli_table *t = cli_table_create(2);
        cli_table_cell(t, "bandwidth");
        cli_table_cell(t, "%.1f GB/s (best stream, float%u vectors)", p.bandwidth_gbs,
                       p.vector_width);
        cli_table_cell(t, "  read");
        cli_table_cell(t, "%.1f GB/s", p.read_gbs);
        cli_table_cell(t, "  copy");
        cli_table_cell(t, "%.1f GB/s (read + write)", p.copy_gbs);
        cli_table_cell(t, "  triad");
        cli_table_cell(t, "%.1f GB/s (read + write)", p.triad_gbs);
        cli_table_cell(t, "fp32");
        cli_table_cell(t, "%.1f GFLOP/s (FMA chains)", p.fp32_gflops);
        cli_table_cell(t, "launch latency");
        cli_table_cell(t, "%.1f us queued to start, %.1f us host round trip", p.launch_us,
                       p.roundtrip_us);
        cli_table_cell(t, "measured");
        cli_table_cell(t, "%s", p.measured);
        cli_table_print(t, stdout, 2);
        cli_table_destroy(t);
    }
    cli_runtime_close(ctx, rt);
    return rc;
}

const cli_command cli_cmd_peak = {
    .name = "peak",
    .summary = "measure the device's memory bandwidth, FP32 rate and launch latency",
    .usage = "[--remeasure]",
    .details = "Streams copies and triads over float, float2 ... float16, runs independent FMA "
               "chains, and times empty kernels. The result is cached per device and driver in "
               "the cache directory; every benchmark reports its fraction of these peaks.",
    .flags = peak_flags,
    .min_args = 0,
    .max_args = 0,
    .run = run_peak,
};
