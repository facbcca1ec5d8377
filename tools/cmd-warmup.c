/* SPDX-License-Identifier: Apache-2.0 */
/* `kernelport warmup [PATTERN]`: builds kernels ahead of first use, filling the caches. */
#include "cli.h"

#include <time.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int run_warmup(const cli_ctx *ctx)
{
    const char *pattern = ctx->argc > 0 ? ctx->argv[0] : NULL;
    kp_runtime *rt;
    int rc = cli_runtime_open(ctx, &rt);
    if (rc != CLI_EXIT_OK)
        return rc;
    size_t n = 0, unsupported = 0;
    for (size_t i = 0; i < kp_kernel_count(rt); i++) {
        kp_kernel_info info = {.struct_size = sizeof info};
        kp_kernel *k = kp_kernel_at(rt, i);
        kp_kernel_info_get(k, &info);
        if (!kp_kernel_name_matches(pattern, info.name))
            continue;
        n++;
        /* kp_runtime_warmup skips these too: they are not warmed up. */
        unsupported += kp_kernel_supported(rt, k) != KP_OK;
    }
    double t0 = now();
    kp_status st = n ? kp_runtime_warmup(rt, pattern) : KP_ERR_NOT_FOUND;
    double seconds = now() - t0;
    if (st == KP_ERR_NOT_FOUND && n == 0)
        cli_error("no kernel matches '%s'", pattern ? pattern : "*");
    else if (st != KP_OK)
        cli_status_error(st, kp_last_error(rt));
    if (ctx->json) {
        kpj_writer w;
        cli_json_begin(&w);
        kpj_begin_object(&w);
        kpj_key_string(&w, "pattern", pattern);
        kpj_key_int(&w, "kernels", (int64_t)(n - unsupported));
        kpj_key_int(&w, "unsupported", (int64_t)unsupported);
        kpj_key_double(&w, "seconds", seconds);
        kpj_key_string(&w, "status", kp_status_name(st));
        kpj_end_object(&w);
        rc = cli_json_end(&w);
    } else if (st == KP_OK) {
        printf("warmed up %zu kernel%s in %.3f s", n - unsupported, n - unsupported == 1 ? "" : "s",
               seconds);
        if (unsupported)
            printf(" (%zu this device cannot run: skipped)", unsupported);
        putchar('\n');
    }
    cli_runtime_close(ctx, rt);
    return st == KP_OK ? rc : CLI_EXIT_FAILED;
}

const cli_command cli_cmd_warmup = {
    .name = "warmup",
    .summary = "build kernels ahead of first use (fills the program caches)",
    .usage = "[PATTERN]",
    .details = "Resolves the tuning of each matching kernel and builds its program with those "
               "values, so later processes load the binary from the disk cache. Library-backed "
               "kernels (CLBlast) compile their own kernels, which live per OpenCL context.",
    .flags = NULL,
    .min_args = 0,
    .max_args = 1,
    .run = run_warmup,
};
