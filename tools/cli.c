/* SPDX-License-Identifier: Apache-2.0 */
/* Helpers shared by the commands: error reporting, runtime creation, formatting, JSON shapes. */
#include "cli.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *cli_flag_value(const cli_ctx *ctx, const char *name)
{
    const cli_flag *flags = ctx->command->flags;
    for (int i = 0; flags != NULL && flags[i].name != NULL && i < CLI_MAX_FLAGS; i++)
        if (strcmp(flags[i].name, name) == 0)
            return ctx->flag_values[i];
    return NULL;
}

static void verror(const char *fmt, va_list ap) KP_PRINTF(1, 0);

static void verror(const char *fmt, va_list ap)
{
    fputs("kernelport: error: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
}

void cli_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    verror(fmt, ap);
    va_end(ap);
}

void cli_status_error(kp_status status, const char *message)
{
    if (message == NULL || message[0] == '\0')
        message = kp_status_str(status);
    size_t n = strlen(message);
    /* Verbatim: manifest errors span several lines (the source line and a caret). */
    fprintf(stderr, "kernelport: error: %s: %s%s", kp_status_name(status), message,
            message[n - 1] == '\n' ? "" : "\n");
}

int cli_usage_error(const cli_command *command, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    verror(fmt, ap);
    va_end(ap);
    if (command != NULL) {
        fprintf(stderr, "usage: kernelport %s%s%s\n", command->name, command->usage[0] ? " " : "",
                command->usage);
        fprintf(stderr, "Try 'kernelport help %s' or 'kernelport --help'.\n", command->name);
    } else {
        fputs("Try 'kernelport --help'.\n", stderr);
    }
    return CLI_EXIT_USAGE;
}

int cli_runtime_open(const cli_ctx *ctx, kp_runtime **out)
{
    if (ctx->runtime) {
        *out = ctx->runtime;
        return CLI_EXIT_OK;
    }
    kp_runtime_options opt = kp_runtime_options_default();
    opt.manifest_path = ctx->manifest;
    opt.device = ctx->device;
    opt.plugin_dirs = ctx->plugin_dirs;
    opt.n_plugin_dirs = ctx->n_plugin_dirs;
    kp_status status = kp_runtime_create(&opt, out);
    if (status == KP_OK)
        return CLI_EXIT_OK;
    *out = NULL;
    cli_status_error(status, kp_last_error(NULL));
    return CLI_EXIT_RUNTIME;
}

void cli_runtime_close(const cli_ctx *ctx, kp_runtime *rt)
{
    if (rt != ctx->runtime)
        kp_runtime_destroy(rt);
}

kp_status cli_runtime_device(kp_runtime *rt, kp_device_info *out, const char **why)
{
    memset(out, 0, sizeof *out);
    out->struct_size = sizeof *out;
    *why = NULL;
    kp_status status = kp_runtime_device(rt, out, why);
    if (*why == NULL)
        *why = "";
    return status;
}

_Noreturn void cli_out_of_memory(void)
{
    cli_error("out of memory");
    exit(CLI_EXIT_FAILED);
}

char *cli_strdup(const char *s)
{
    char *copy = strdup(s != NULL ? s : "");
    if (copy == NULL)
        cli_out_of_memory();
    return copy;
}

void *cli_realloc(void *p, size_t size)
{
    void *q = realloc(p, size ? size : 1);
    if (q == NULL)
        cli_out_of_memory();
    return q;
}

char *cli_format_bytes(uint64_t bytes, char *buf, size_t size)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    size_t u = 0;
    uint64_t divisor = 1;
    /* The largest unit whose value, printed with one decimal, stays below 1024. */
    while (u + 1 < sizeof units / sizeof units[0] && (double)bytes / (double)divisor >= 1023.95) {
        divisor *= 1024;
        u++;
    }
    if (bytes % divisor == 0)
        snprintf(buf, size, "%" PRIu64 " %s", bytes / divisor, units[u]);
    else
        snprintf(buf, size, "%.1f %s", (double)bytes / (double)divisor, units[u]);
    return buf;
}

char *cli_format_device(const kp_device_info *d, char *buf, size_t size)
{
    const char *vendor = kp_vendor_name(d->vendor), *type = kp_device_type_name(d->type);
    /* The host device is vendor "host" and type "host": say it once. */
    int same = strcmp(vendor, type) == 0;
    snprintf(buf, size, "[%" PRIu32 "] %s (%s%s%s%s%s)", d->index, d->name, same ? "" : vendor,
             same ? "" : " ", type, d->arch[0] ? ", " : "", d->arch);
    return buf;
}

const char *cli_plugin_version(const kp_runtime *rt, const kp_kernel_info *k)
{
    size_t n = kp_plugin_count(rt);
    for (size_t i = 0; i < n; i++) {
        kp_plugin_record p = {.struct_size = sizeof p};
        if (kp_plugin_get(rt, i, &p) == KP_OK && p.name != NULL && p.path != NULL &&
            k->plugin != NULL && k->plugin_path != NULL && strcmp(p.name, k->plugin) == 0 &&
            strcmp(p.path, k->plugin_path) == 0)
            return p.version != NULL ? p.version : "";
    }
    return "";
}

char *cli_format_tuning_value(const kp_tuning_info *t, char *buf, size_t size)
{
    if (t->value_text != NULL && t->value_text[0] != '\0')
        snprintf(buf, size, "%s", t->value_text);
    else
        snprintf(buf, size, "%" PRId64, t->value);
    return buf;
}

static int progress_shown;

void cli_progress(const char *fmt, ...)
{
    if (!isatty(STDERR_FILENO))
        return;
    /* Short enough not to wrap on a narrow terminal, where "\r" could no longer replace it. */
    char line[78];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\r\033[K%s", line);
    fflush(stderr);
    progress_shown = 1;
}

void cli_progress_clear(void)
{
    if (!progress_shown)
        return;
    fputs("\r\033[K", stderr);
    fflush(stderr);
    progress_shown = 0;
}

void cli_json_begin(kpj_writer *w)
{
    kpj_init(w, stdout, 2);
}

int cli_json_end(kpj_writer *w)
{
    if (kpj_finish(w) == 0)
        return CLI_EXIT_OK;
    /* Write errors are reported once, by main; anything else is a bug in the command. */
    if (!ferror(w->out))
        cli_error("internal error: the JSON document is malformed");
    return CLI_EXIT_FAILED;
}

void cli_json_optional(kpj_writer *w, const char *key, const char *s)
{
    kpj_key_string(w, key, s != NULL && s[0] != '\0' ? s : NULL);
}

void cli_json_device_fields(kpj_writer *w, const kp_device_info *d)
{
    kpj_key_uint(w, "index", d->index);
    kpj_key_string(w, "vendor", kp_vendor_name(d->vendor));
    kpj_key_string(w, "type", kp_device_type_name(d->type));
    cli_json_optional(w, "name", d->name);
    cli_json_optional(w, "vendor_string", d->vendor_string);
    kpj_key_uint(w, "vendor_id", d->vendor_id);
    cli_json_optional(w, "platform", d->platform);
    cli_json_optional(w, "driver", d->driver);
    cli_json_optional(w, "version", d->version);
    cli_json_optional(w, "c_version", d->c_version);
    cli_json_optional(w, "arch", d->arch);
    if (d->has_uuid) {
        char uuid[40];
        kp_uuid_format(d->uuid, uuid);
        kpj_key_string(w, "uuid", uuid);
    } else {
        kpj_key_null(w, "uuid");
    }
    cli_json_optional(w, "pci_bus", d->pci_bus);
    kpj_key_uint(w, "compute_units", d->compute_units);
    kpj_key_uint(w, "clock_mhz", d->clock_mhz);
    kpj_key_uint(w, "global_mem", d->global_mem);
    kpj_key_uint(w, "local_mem", d->local_mem);
    kpj_key_uint(w, "max_alloc", d->max_alloc);
    kpj_key_uint(w, "max_workgroup", d->max_workgroup);
    kpj_key(w, "max_work_item");
    kpj_begin_array(w);
    for (int i = 0; i < 3; i++)
        kpj_uint(w, d->max_work_item[i]);
    kpj_end_array(w);
    kpj_key_bool(w, "fp16", d->fp16 != 0);
    kpj_key_bool(w, "fp64", d->fp64 != 0);
}

void cli_json_kernel_fields(kpj_writer *w, const kp_runtime *rt, const kp_kernel_info *k)
{
    kpj_key_string(w, "name", k->name);
    cli_json_optional(w, "summary", k->summary);
    kpj_key_string(w, "plugin", k->plugin);
    cli_json_optional(w, "plugin_version", cli_plugin_version(rt, k));
    kpj_key_string(w, "plugin_path", k->plugin_path);
    cli_json_optional(w, "source", k->source_name);
}

void cli_json_tuning(kpj_writer *w, const kp_tuning_info *t, kp_status status, const char *error)
{
    int ok = status == KP_OK;
    kpj_begin_object(w);
    /* The name and doc come from the descriptor: known even when resolution failed. */
    cli_json_optional(w, "name", t->name);
    cli_json_optional(w, "doc", t->doc);
    kpj_key(w, "value");
    if (ok)
        kpj_int(w, t->value);
    else
        kpj_null(w);
    cli_json_optional(w, "value_text", ok ? t->value_text : NULL);
    kpj_key(w, "default");
    if (ok)
        kpj_int(w, t->default_value);
    else
        kpj_null(w);
    cli_json_optional(w, "origin", ok ? t->origin : NULL);
    cli_json_optional(w, "provenance", ok ? t->provenance : NULL);
    cli_json_optional(w, "allowed", ok ? t->allowed : NULL);
    cli_json_optional(w, "notes", ok ? t->notes : NULL);
    kpj_key(w, "error");
    if (ok) {
        kpj_null(w);
    } else {
        kpj_begin_object(w);
        kpj_key_string(w, "status", kp_status_name(status));
        cli_json_optional(w, "message", error);
        kpj_end_object(w);
    }
    kpj_end_object(w);
}

void cli_print_manifests(const kp_runtime *rt)
{
    printf("Manifests:");
    for (size_t i = 0; i < kp_runtime_manifest_count(rt); i++) {
        kp_manifest_layer l = {.struct_size = sizeof l};
        if (kp_runtime_manifest_layer(rt, i, &l) != KP_OK)
            continue;
        printf("%s %s%s%s%s", i ? "," : "", l.name, l.path[0] ? " " : "", l.path,
               l.read ? "" : " (absent)");
    }
    printf("\n");
}

void cli_json_manifests(kpj_writer *w, const kp_runtime *rt)
{
    kpj_key(w, "manifests");
    kpj_begin_array(w);
    for (size_t i = 0; i < kp_runtime_manifest_count(rt); i++) {
        kp_manifest_layer l = {.struct_size = sizeof l};
        if (kp_runtime_manifest_layer(rt, i, &l) != KP_OK)
            continue;
        kpj_begin_object(w);
        kpj_key_string(w, "layer", l.name);
        cli_json_optional(w, "path", l.path[0] ? l.path : NULL);
        kpj_key_bool(w, "read", l.read);
        kpj_end_object(w);
    }
    kpj_end_array(w);
}
