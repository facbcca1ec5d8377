/* SPDX-License-Identifier: Apache-2.0 */
/* `kernelport explain KERNEL`: where each tuning value of a kernel comes from on this device. */
#include "cli.h"

#include <inttypes.h>
#include <stdlib.h>

static void print_header(const kp_runtime *rt, const kp_kernel_info *info,
                         const kp_device_info *device, const char *why, const char *path)
{
    char line[400];
    const char *version = cli_plugin_version(rt, info);
    cli_table *t = cli_table_create(2);
    cli_table_cell(t, "kernel");
    int has_summary = info->summary != NULL && info->summary[0] != '\0';
    cli_table_cell(t, "%s%s%s", info->name, has_summary ? " - " : "",
                   has_summary ? info->summary : "");
    cli_table_cell(t, "plugin");
    cli_table_cell(t, "%s%s%s", info->plugin, version[0] ? " " : "", version);
    cli_table_cell(t, "file");
    cli_table_cell(t, "%s", info->plugin_path);
    cli_table_cell(t, "source");
    cli_table_cell(t, "%s", info->source_name ? info->source_name : "(library-backed)");
    cli_table_cell(t, "device");
    cli_table_cell(t, "%s", cli_format_device(device, line, sizeof line));
    if (why[0]) {
        cli_table_cell(t, "chosen by");
        cli_table_cell(t, "%s", why);
    }
    if (path[0]) {
        cli_table_cell(t, "path");
        cli_table_cell(t, "%s", path);
    }
    cli_table_print(t, stdout, 0);
    cli_table_destroy(t);
    cli_print_manifests(rt);
}

static void print_tuning(const kp_tuning_info *t)
{
    char value[128];
    printf("\n%s = %s\n", t->name, cli_format_tuning_value(t, value, sizeof value));
    cli_table *kv = cli_table_create(2);
    if (t->doc && t->doc[0]) {
        cli_table_cell(kv, "doc");
        cli_table_cell(kv, "%s", t->doc);
    }
    cli_table_cell(kv, "origin");
    cli_table_cell(kv, "%s", t->origin);
    /* Who measured the value, where and how much it gained (kernelport tune writes it). */
    if (t->provenance && t->provenance[0]) {
        cli_table_cell(kv, "provenance");
        cli_table_cell(kv, "%s", t->provenance);
    }
    cli_table_cell(kv, "allowed");
    cli_table_cell(kv, "%s", t->allowed);
    cli_table_cell(kv, "default");
    cli_table_cell(kv, "%" PRId64, t->default_value);
    /* The rejected candidates are how a user finds out why a manifest entry had no effect. */
    cli_table_cell(kv, "notes");
    cli_table_cell(kv, "%s", t->notes && t->notes[0] ? t->notes : "none");
    cli_table_print(kv, stdout, 2);
    cli_table_destroy(kv);
}

static int run_explain(const cli_ctx *ctx)
{
    const char *name = ctx->argv[0];
    kp_runtime *rt;
    int rc = cli_runtime_open(ctx, &rt);
    if (rc != CLI_EXIT_OK)
        return rc;

    kp_kernel *k;
    kp_kernel_info info = {.struct_size = sizeof info};
    kp_device_info device;
    const char *why;
    kp_status status = kp_kernel_find(rt, name, &k);
    if (status == KP_OK)
        status = kp_kernel_info_get(k, &info);
    if (status == KP_OK)
        status = cli_runtime_device(rt, &device, &why);
    /* Which implementation runs, in the kernel's words (blas.gemm: CLBlast, or tc.gemm). */
    char path[512];
    if (status == KP_OK)
        status = kp_kernel_describe(rt, k, path, sizeof path);
    if (status != KP_OK) {
        cli_status_error(status, kp_last_error(rt));
        cli_runtime_close(ctx, rt);
        return CLI_EXIT_FAILED;
    }

    kpj_writer w;
    if (ctx->json) {
        cli_json_begin(&w);
        kpj_begin_object(&w);
        kpj_key(&w, "kernel");
        kpj_begin_object(&w);
        cli_json_kernel_fields(&w, rt, &info);
        kpj_end_object(&w);
        kpj_key(&w, "device");
        kpj_begin_object(&w);
        cli_json_device_fields(&w, &device);
        cli_json_optional(&w, "why", why);
        kpj_end_object(&w);
        cli_json_optional(&w, "path", path);
        cli_json_manifests(&w, rt);
        kpj_key(&w, "tunables");
        kpj_begin_array(&w);
    } else {
        print_header(rt, &info, &device, why, path);
        if (info.n_tunables == 0)
            printf("\n%s has no tunables.\n", info.name);
    }
    for (size_t i = 0; i < info.n_tunables; i++) {
        kp_tuning_info t = {.struct_size = sizeof t};
        status = kp_kernel_tuning(rt, k, i, &t);
        if (status != KP_OK) {
            char *error = cli_strdup(kp_last_error(rt));
            if (ctx->json) {
                cli_json_tuning(&w, &t, status, error);
            } else {
                printf("\n%s = ? (not resolved)\n", t.name);
                fflush(stdout); /* keep the error after the heading it belongs to */
                cli_status_error(status, error);
            }
            free(error);
            rc = CLI_EXIT_FAILED;
        } else if (ctx->json) {
            cli_json_tuning(&w, &t, KP_OK, NULL);
        } else {
            print_tuning(&t);
        }
    }
    if (ctx->json) {
        kpj_end_array(&w);
        kpj_end_object(&w);
        if (cli_json_end(&w) != CLI_EXIT_OK)
            rc = CLI_EXIT_FAILED;
    }
    cli_runtime_close(ctx, rt);
    return rc;
}

const cli_command cli_cmd_explain = {
    .name = "explain",
    .summary = "show where each tuning value of a kernel comes from",
    .usage = "KERNEL",
    .details = "The implementation a launch takes here, when the kernel says (path). For\n"
               "each tunable: the value used, its origin (the built-in default, or the\n"
               "manifest entry file:line and its match) and that entry's provenance, the\n"
               "allowed values, the default, and\n"
               "the candidates rejected on the way with the reason (not allowed, larger than the\n"
               "device or the compiled kernel can run).",
    .min_args = 1,
    .max_args = 1,
    .run = run_explain,
};
