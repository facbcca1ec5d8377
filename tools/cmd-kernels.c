/* SPDX-License-Identifier: Apache-2.0 */
/* `kernelport kernels [PATTERN]`: each kernel's parameters and its tunables on this device. */
#include "cli.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* "f32,f16" from a mask of (1 << kp_dtype) bits; "-" when it has none. */
static char *format_dtypes(uint32_t mask, char *buf, size_t size)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int d = 1; d < KP_DTYPE_COUNT && d < 32; d++) {
        if ((mask & (1u << d)) && used < size) {
            int n = snprintf(buf + used, size - used, "%s%s", used ? "," : "",
                             kp_dtype_name((kp_dtype)d));
            used += n > 0 ? (size_t)n : 0;
        }
    }
    if (buf[0] == '\0')
        snprintf(buf, size, "-");
    return buf;
}

static void json_param(kpj_writer *w, const kp_param_info *p)
{
    kpj_begin_object(w);
    kpj_key_string(w, "name", p->name);
    cli_json_optional(w, "doc", p->doc);
    kpj_key_string(w, "kind", kp_arg_kind_name(p->kind));
    kpj_key_string(w, "access", kp_access_name(p->access));
    kpj_key(w, "dtypes");
    kpj_begin_array(w);
    for (int d = 1; d < KP_DTYPE_COUNT && d < 32; d++)
        if (p->dtypes & (1u << d))
            kpj_string(w, kp_dtype_name((kp_dtype)d));
    kpj_end_array(w);
    kpj_key_bool(w, "optional", p->optional != 0);
    kpj_key(w, "default");
    if (p->optional && p->kind == KP_ARG_KIND_INT)
        kpj_int(w, p->int_default);
    else if (p->optional && p->kind == KP_ARG_KIND_FLOAT)
        kpj_double(w, p->float_default);
    else
        kpj_null(w);
    kpj_end_object(w);
}

static void param_cells(cli_table *t, const kp_param_info *p)
{
    char buf[128];
    cli_table_cell(t, "%s", p->name);
    cli_table_cell(t, "%s", kp_arg_kind_name(p->kind));
    cli_table_cell(t, "%s", kp_access_name(p->access));
    cli_table_cell(t, "%s",
                   p->kind == KP_ARG_KIND_TENSOR ? format_dtypes(p->dtypes, buf, sizeof buf) : "-");
    if (!p->optional)
        cli_table_cell(t, "(required)");
    else if (p->kind == KP_ARG_KIND_INT)
        cli_table_cell(t, "%" PRId64, p->int_default);
    else if (p->kind == KP_ARG_KIND_FLOAT)
        cli_table_cell(t, "%g", p->float_default);
    else
        cli_table_cell(t, "(none)");
    cli_table_cell(t, "%s", p->doc != NULL ? p->doc : "");
}

/* Lists one kernel, as text or into the open JSON array; returns a CLI_EXIT_* code. */
static int show_kernel(kp_runtime *rt, kp_kernel *k, kpj_writer *w)
{
    int rc = CLI_EXIT_OK;
    kp_kernel_info info = {.struct_size = sizeof info};
    kp_status status = kp_kernel_info_get(k, &info);
    if (status != KP_OK) {
        cli_status_error(status, kp_last_error(rt));
        return CLI_EXIT_FAILED;
    }
    cli_table *params = NULL, *tunables = NULL;
    if (w != NULL) {
        kpj_begin_object(w);
        cli_json_kernel_fields(w, rt, &info);
        kpj_key(w, "params");
        kpj_begin_array(w);
    } else {
        const char *version = cli_plugin_version(rt, &info);
        if (info.summary != NULL && info.summary[0] != '\0')
            printf("%s  %s\n", info.name, info.summary);
        else
            printf("%s\n", info.name);
        cli_table *head = cli_table_create(2);
        cli_table_cell(head, "plugin");
        cli_table_cell(head, "%s%s%s", info.plugin, version[0] ? " " : "", version);
        cli_table_cell(head, "file");
        cli_table_cell(head, "%s", info.plugin_path);
        cli_table_cell(head, "source");
        cli_table_cell(head, "%s", info.source_name != NULL ? info.source_name : "(library)");
        cli_table_print(head, stdout, 2);
        cli_table_destroy(head);
        params = cli_table_create(6);
        cli_table_cell(params, "NAME");
        cli_table_cell(params, "KIND");
        cli_table_cell(params, "ACCESS");
        cli_table_cell(params, "DTYPES");
        cli_table_cell(params, "DEFAULT");
        cli_table_cell(params, "DOC");
    }
    for (size_t i = 0; i < info.n_params; i++) {
        kp_param_info p = {.struct_size = sizeof p};
        status = kp_kernel_param(k, i, &p);
        if (status != KP_OK) {
            cli_status_error(status, kp_last_error(rt));
            rc = CLI_EXIT_FAILED;
        } else if (w != NULL) {
            json_param(w, &p);
        } else {
            param_cells(params, &p);
        }
    }
    if (w != NULL) {
        kpj_end_array(w);
        kpj_key(w, "tunables");
        kpj_begin_array(w);
    } else {
        if (info.n_params == 0) {
            printf("  parameters: none\n");
        } else {
            printf("  parameters\n");
            cli_table_print(params, stdout, 4);
        }
        cli_table_destroy(params);
        tunables = cli_table_create(4);
        cli_table_cell(tunables, "NAME");
        cli_table_cell(tunables, "VALUE");
        cli_table_cell(tunables, "ALLOWED");
        cli_table_cell(tunables, "ORIGIN");
    }
    for (size_t i = 0; i < info.n_tunables; i++) {
        kp_tuning_info t = {.struct_size = sizeof t};
        status = kp_kernel_tuning(rt, k, i, &t);
        char *error = status != KP_OK ? cli_strdup(kp_last_error(rt)) : NULL;
        if (status != KP_OK)
            rc = CLI_EXIT_FAILED;
        if (w != NULL) {
            cli_json_tuning(w, &t, status, error);
        } else if (status != KP_OK) {
            cli_table_cell(tunables, "(tunable %zu)", i);
            cli_table_cell(tunables, "?");
            cli_table_cell(tunables, "?");
            cli_table_cell(tunables, "%s: %s", kp_status_name(status), error);
        } else {
            char value[128];
            cli_table_cell(tunables, "%s", t.name);
            cli_table_cell(tunables, "%s", cli_format_tuning_value(&t, value, sizeof value));
            cli_table_cell(tunables, "%s", t.allowed);
            cli_table_cell(tunables, "%s", t.origin);
        }
        free(error);
    }
    if (w != NULL) {
        kpj_end_array(w);
        kpj_end_object(w);
    } else {
        if (info.n_tunables == 0) {
            printf("  tunables: none\n");
        } else {
            printf("  tunables\n");
            cli_table_print(tunables, stdout, 4);
        }
        cli_table_destroy(tunables);
    }
    return rc;
}

static int run_kernels(const cli_ctx *ctx)
{
    const char *pattern = ctx->argc > 0 ? ctx->argv[0] : NULL;
    kp_runtime *rt;
    int rc = cli_runtime_open(ctx, &rt);
    if (rc != CLI_EXIT_OK)
        return rc;

    kp_device_info device;
    const char *why;
    kp_status status = cli_runtime_device(rt, &device, &why);
    if (status != KP_OK) {
        cli_status_error(status, kp_last_error(rt));
        cli_runtime_close(ctx, rt);
        return CLI_EXIT_FAILED;
    }
    kpj_writer w;
    kpj_writer *json = ctx->json ? &w : NULL;
    if (json != NULL) {
        cli_json_begin(json);
        kpj_begin_object(json);
        kpj_key(json, "device");
        kpj_begin_object(json);
        cli_json_device_fields(json, &device);
        cli_json_optional(json, "why", why);
        kpj_end_object(json);
        kpj_key(json, "kernels");
        kpj_begin_array(json);
    } else {
        char line[400];
        printf("Tunables resolved for %s\n", cli_format_device(&device, line, sizeof line));
    }
    size_t matched = 0, n = kp_kernel_count(rt);
    for (size_t i = 0; i < n; i++) {
        kp_kernel *k = kp_kernel_at(rt, i);
        kp_kernel_info info = {.struct_size = sizeof info};
        if (k == NULL || kp_kernel_info_get(k, &info) != KP_OK ||
            !kp_kernel_name_matches(pattern, info.name))
            continue;
        if (json == NULL)
            putchar('\n');
        if (show_kernel(rt, k, json) != CLI_EXIT_OK)
            rc = CLI_EXIT_FAILED;
        matched++;
    }
    if (json != NULL) {
        kpj_end_array(json);
        kpj_end_object(json);
        if (cli_json_end(json) != CLI_EXIT_OK)
            rc = CLI_EXIT_FAILED;
    } else if (matched == 0 && pattern == NULL) {
        printf("\nNo kernels are registered; 'kernelport plugins' shows what was loaded.\n");
    }
    if (matched == 0 && pattern != NULL) {
        cli_error("no kernel matches '%s'", pattern);
        rc = CLI_EXIT_FAILED;
    }
    cli_runtime_close(ctx, rt);
    return rc;
}

const cli_command cli_cmd_kernels = {
    .name = "kernels",
    .summary = "describe kernels: parameters, tunables and their values here",
    .usage = "[PATTERN]",
    .details = "PATTERN is a glob over kernel names ('gru.*', 'blas.gemm'); a pattern without a\n"
               "wildcard also matches a whole family ('gru'). Resolving tunables may build a\n"
               "kernel's program to learn its limits.",
    .max_args = 1,
    .run = run_kernels,
};
