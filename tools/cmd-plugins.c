/* SPDX-License-Identifier: Apache-2.0 */
/* `kernelport plugins`: the plugins loaded, and those found but refused with the reason. */
#include "cli.h"

static void json_record(kpj_writer *w, const kp_plugin_record *p, const char *probe)
{
    kpj_begin_object(w);
    kpj_key_string(w, "path", p->path);
    cli_json_optional(w, "name", p->name);
    cli_json_optional(w, "version", p->version);
    if (probe) {
        kpj_key_uint(w, "kernels", p->n_kernels);
        kpj_key_string(w, "probe", probe);
    } else
        kpj_key_string(w, "reason", p->reason);
    kpj_end_object(w);
}

/* Prints or writes one list; returns CLI_EXIT_FAILED when a record could not be read. */
static int list(kp_runtime *rt, int loaded, kpj_writer *w)
{
    size_t n = loaded ? kp_plugin_count(rt) : kp_plugin_rejected_count(rt);
    int rc = CLI_EXIT_OK;
    cli_table *t = NULL;
    if (w != NULL) {
        kpj_key(w, loaded ? "loaded" : "rejected");
        kpj_begin_array(w);
    } else if (n == 0) {
        printf("%s plugins: none\n", loaded ? "Loaded" : "Rejected");
    } else {
        printf("%s plugins:\n", loaded ? "Loaded" : "Rejected");
        t = cli_table_create(loaded ? 5 : 2);
        if (loaded) {
            cli_table_align_right(t, 2);
            cli_table_cell(t, "NAME");
            cli_table_cell(t, "VERSION");
            cli_table_cell(t, "KERNELS");
            cli_table_cell(t, "PROBE");
            cli_table_cell(t, "PATH");
        } else {
            cli_table_cell(t, "PATH");
            cli_table_cell(t, "REASON");
        }
    }
    for (size_t i = 0; i < n; i++) {
        kp_plugin_record p = {.struct_size = sizeof p};
        kp_status status = loaded ? kp_plugin_get(rt, i, &p) : kp_plugin_rejected(rt, i, &p);
        if (status != KP_OK) {
            cli_status_error(status, kp_last_error(rt));
            rc = CLI_EXIT_FAILED;
            continue;
        }
        const char *probe = loaded ? kp_plugin_probe_result(rt, i) : NULL;
        if (w != NULL) {
            json_record(w, &p, probe);
        } else if (loaded) {
            cli_table_cell(t, "%s", p.name);
            cli_table_cell(t, "%s", p.version);
            cli_table_cell(t, "%zu", p.n_kernels);
            cli_table_cell(t, "%s", probe);
            cli_table_cell(t, "%s", p.path);
        } else {
            cli_table_cell(t, "%s", p.path);
            cli_table_cell(t, "%s", p.reason);
        }
    }
    if (w != NULL) {
        kpj_end_array(w);
    } else if (t != NULL) {
        cli_table_print(t, stdout, 2);
        cli_table_destroy(t);
    }
    return rc;
}

static int run_plugins(const cli_ctx *ctx)
{
    kp_runtime *rt;
    int rc = cli_runtime_open(ctx, &rt);
    if (rc != CLI_EXIT_OK)
        return rc;
    kpj_writer w;
    kpj_writer *json = ctx->json ? &w : NULL;
    if (json != NULL) {
        cli_json_begin(json);
        kpj_begin_object(json);
    }
    rc = list(rt, 1, json);
    if (json == NULL)
        putchar('\n');
    if (list(rt, 0, json) != CLI_EXIT_OK)
        rc = CLI_EXIT_FAILED;
    if (json != NULL) {
        kpj_end_object(json);
        if (cli_json_end(json) != CLI_EXIT_OK)
            rc = CLI_EXIT_FAILED;
    }
    cli_runtime_close(ctx, rt);
    return rc;
}

const cli_command cli_cmd_plugins = {
    .name = "plugins",
    .summary = "list the plugins loaded and the plugins refused",
    .usage = "",
    .details = "A refused plugin (no entry point, a wrong ABI, a failing init, a crash in the\n"
               "out-of-process probe, an insecure directory, ...) does not stop the others from\n"
               "loading; this lists why it was refused. PROBE says how a loaded plugin was\n"
               "vetted: probed (in a child process, this time), cached (on an earlier start,\n"
               "file unchanged), static, off (plugins.probe: false) or unavailable.",
    .run = run_plugins,
};
