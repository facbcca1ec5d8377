/* SPDX-License-Identifier: Apache-2.0 */
/* `kernelport devices`: every device the runtime enumerated, and the one it chose. */
#include "cli.h"

#include <inttypes.h>

/* A row of the device's description; values that are empty are not reported by the driver. */
static void row(cli_table *t, const char *label, const char *value)
{
    if (value[0] == '\0')
        return;
    cli_table_cell(t, "%s", label);
    cli_table_cell(t, "%s", value);
}

/* As row(), for numbers, where the drivers say 0 for "not reported". */
static void row_number(cli_table *t, const char *label, uint64_t value, const char *unit)
{
    char buf[64];
    if (value == 0)
        return;
    if (unit == NULL)
        cli_format_bytes(value, buf, sizeof buf);
    else
        snprintf(buf, sizeof buf, "%" PRIu64 "%s", value, unit);
    row(t, label, buf);
}

static void print_device(const kp_device_info *d, int chosen)
{
    char buf[400];
    printf("%s [%" PRIu32 "] %s\n", chosen ? "*" : " ", d->index, d->name);
    cli_table *t = cli_table_create(2);
    if (d->vendor_string[0] || d->vendor_id)
        snprintf(buf, sizeof buf, "%s (%s, id 0x%04" PRIx32 ")", kp_vendor_name(d->vendor),
                 d->vendor_string, d->vendor_id);
    else
        snprintf(buf, sizeof buf, "%s", kp_vendor_name(d->vendor));
    row(t, "vendor", buf);
    row(t, "type", kp_device_type_name(d->type));
    row(t, "platform", d->platform);
    row(t, "driver", d->driver);
    snprintf(buf, sizeof buf, "%s%s%s", d->version, d->version[0] && d->c_version[0] ? ", " : "",
             d->c_version);
    row(t, "version", buf);
    row(t, "arch", d->arch);
    row_number(t, "compute units", d->compute_units, "");
    row_number(t, "clock", d->clock_mhz, " MHz");
    row_number(t, "global memory", d->global_mem, NULL);
    row_number(t, "local memory", d->local_mem, NULL);
    row_number(t, "max alloc", d->max_alloc, NULL);
    if (d->max_work_item[0] != 0)
        snprintf(buf, sizeof buf, "%zu (per dimension %zu x %zu x %zu)", d->max_workgroup,
                 d->max_work_item[0], d->max_work_item[1], d->max_work_item[2]);
    else
        snprintf(buf, sizeof buf, "%zu", d->max_workgroup);
    row(t, "max workgroup", buf);
    if (d->has_uuid) {
        kp_uuid_format(d->uuid, buf);
        row(t, "uuid", buf);
    }
    row(t, "pci bus", d->pci_bus);
    row(t, "fp16", d->fp16 ? "yes" : "no");
    row(t, "fp64", d->fp64 ? "yes" : "no");
    cli_table_print(t, stdout, 6);
    cli_table_destroy(t);
}

static int run_devices(const cli_ctx *ctx)
{
    kp_runtime *rt;
    int rc = cli_runtime_open(ctx, &rt);
    if (rc != CLI_EXIT_OK)
        return rc;

    kp_device_info chosen;
    const char *why;
    kp_status status = cli_runtime_device(rt, &chosen, &why);
    if (status != KP_OK) {
        cli_status_error(status, kp_last_error(rt));
        cli_runtime_close(ctx, rt);
        return CLI_EXIT_FAILED;
    }

    kpj_writer w;
    if (ctx->json) {
        cli_json_begin(&w);
        kpj_begin_object(&w);
        kpj_key_uint(&w, "chosen", chosen.index);
        cli_json_optional(&w, "why", why);
        cli_json_manifests(&w, rt);
        kpj_key(&w, "devices");
        kpj_begin_array(&w);
    }
    size_t n = kp_device_count(rt);
    for (size_t i = 0; i < n; i++) {
        kp_device_info d = {.struct_size = sizeof d};
        status = kp_device_get(rt, i, &d);
        if (status != KP_OK) {
            cli_status_error(status, kp_last_error(rt));
            rc = CLI_EXIT_FAILED;
            continue;
        }
        int is_chosen = d.index == chosen.index;
        if (ctx->json) {
            kpj_begin_object(&w);
            kpj_key_bool(&w, "chosen", is_chosen);
            cli_json_device_fields(&w, &d);
            kpj_end_object(&w);
        } else {
            if (i > 0)
                putchar('\n');
            print_device(&d, is_chosen);
        }
    }
    if (ctx->json) {
        kpj_end_array(&w);
        kpj_end_object(&w);
        if (cli_json_end(&w) != CLI_EXIT_OK)
            rc = CLI_EXIT_FAILED;
    } else {
        char line[400];
        printf("%sChosen: %s\n", n > 0 ? "\n" : "", cli_format_device(&chosen, line, sizeof line));
        if (why[0])
            printf("  %s\n", why);
        cli_print_manifests(rt);
    }
    cli_runtime_close(ctx, rt);
    return rc;
}

const cli_command cli_cmd_devices = {
    .name = "devices",
    .summary = "list the devices and the one the runtime chose",
    .usage = "",
    .details = "Lists every OpenCL device and then the host device, marks the chosen one\n"
               "with '*' and says which rule (--device, $KP_DEVICE or a manifest device rule)\n"
               "chose it, then the manifest files read (and the optional ones looked for).\n"
               "Numbers a driver does not report (0) are left out of the text.",
    .run = run_devices,
};
