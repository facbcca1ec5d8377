/* SPDX-License-Identifier: Apache-2.0 */
/* `kernelport tune [PATTERN] --write FILE`: search each kernel's tunables, write the fastest. */
#include "cli.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const cli_flag tune_flags[] = {
    {"write", "FILE", "merge the fastest values into this manifest file"},
    {"budget", "SECONDS", "wall-clock budget per kernel (default 60)"},
    {"size", "NAME", "sample size to time (default: each kernel's first benchmark size)"},
    {"match", "KIND", "what the written entry matches: name (default), arch or vendor"},
    {"only", "GLOBS", "search only the tunables matching these comma-separated globs"},
    {NULL, NULL, NULL},
};

/* One kernel's search. Its tunables in the kernel's order: the best values as numbers and as
 * manifest text (choice names where the tunable has them), and which of them go into FILE. */
typedef struct tuned {
    char *kernel;
    kp_status status;
    char *message;
    kp_tune_result r;
    size_t n;
    char **names;
    char **values;       /* the best values as manifest text */
    int *named;          /* the value is a choice name, not a number */
    int *write;          /* goes into FILE */
    char **write_values; /* what goes into FILE: the best value, or the starting one back */
    int64_t *start;      /* the values the manifest gave before tuning */
} tuned;

/* What the progress callback needs to save each new best as the search finds it. */
typedef struct tune_run {
    const cli_ctx *ctx;
    const char *file; /* --write, or NULL */
    const kp_device_info *device;
    size_t n;
    char **names; /* the kernel's tunables */
    const int64_t *start;
    int *saved; /* which tunables a saved candidate wrote into FILE */
} tune_run;

static kp_status write_entry(const cli_ctx *ctx, const char *file, const kp_device_info *d,
                             const kp_tuned_value *values, size_t n, const char *speedup)
{
    const char *match_kind = cli_flag_value(ctx, "match");
    kp_tuning_match m = {.vendor = kp_vendor_name(d->vendor)};
    if (!match_kind || strcmp(match_kind, "name") == 0)
        m.name = d->name;
    else if (strcmp(match_kind, "arch") == 0 && d->arch[0])
        m.arch = d->arch;
    else
        m.type = kp_device_type_name(d->type);
    char date[32];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(date, sizeof date, "%Y-%m-%d", &tm);
    const char *prov[] = {"device", d->name,      "driver",     d->driver, "date",
                          date,     "kernelport", kp_version(), "speedup", speedup};
    kp_status st = kp_manifest_write_tuning(file, &m, values, n, prov, 5);
    if (st != KP_OK)
        cli_status_error(st, kp_last_error(NULL));
    return st;
}

/* Saves a new best at once: a candidate that crashes the process (an out-of-bounds kernel on a
 * CPU device writes into our own heap) must not take the search's results with it. Only values
 * that differ from the starting ones are written; the starting values themselves never are. */
static void save_progress(const tune_run *run, const kp_tune_step *step)
{
    kp_tuned_value *values = cli_realloc(NULL, (run->n + 1) * sizeof *values);
    char(*text)[32] = cli_realloc(NULL, (run->n + 1) * sizeof *text);
    size_t v = 0;
    for (size_t i = 0; i < run->n && i < step->n_values; i++) {
        if (step->values[i] == run->start[i] && !run->saved[i])
            continue;
        snprintf(text[v], sizeof text[v], "%" PRId64, step->values[i]);
        values[v] = (kp_tuned_value){step->kernel, run->names[i], text[v]};
        v++;
    }
    char speedup[64];
    snprintf(speedup, sizeof speedup, "search in progress: best %.2f us so far",
             step->median_s * 1e6);
    if (v && write_entry(run->ctx, run->file, run->device, values, v, speedup) == KP_OK)
        for (size_t i = 0; i < run->n && i < step->n_values; i++)
            run->saved[i] |= step->values[i] != run->start[i];
    free(text);
    free(values);
}

static void report(void *user, const kp_tune_step *step)
{
    const tune_run *run = user;
    if (run->file && strcmp(step->outcome, "best so far") == 0)
        save_progress(run, step);
    /* With --json, stdout holds the document alone: progress goes to stderr. */
    FILE *out = run->ctx->json ? stderr : stdout;
    fprintf(out, "  %s", step->kernel);
    for (size_t i = 0; i < step->n_values; i++)
        fprintf(out, "%s%" PRId64, i ? "," : " [", step->values[i]);
    fprintf(out, "]  %s", step->outcome);
    if (step->median_s > 0)
        fprintf(out, "  %.2f us", step->median_s * 1e6);
    fprintf(out, "\n");
    fflush(out);
}

/* Tunable i's value v as manifest text (a choice name where the tunable has them); *named says
 * which. */
static char *value_text(kp_runtime *rt, kp_kernel *k, size_t i, int64_t v, int *named)
{
    kp_tuning_info ti = {.struct_size = sizeof ti};
    kp_kernel_tuning(rt, k, i, &ti);
    kp_kernel_tunable_set(rt, k, ti.name, v);
    kp_kernel_tuning(rt, k, i, &ti);
    char value[128];
    char *text = cli_strdup(cli_format_tuning_value(&ti, value, sizeof value));
    if (named)
        *named = ti.value_text != NULL && ti.value_text[0] != '\0';
    kp_kernel_tuning_reset(rt, k);
    return text;
}

/* Every tunable's best value, and what goes into FILE: when tuning improved the kernel beyond
 * noise, the best values that differ from the starting ones; otherwise nothing. Either way, a
 * tunable a saved candidate changed in FILE is written again (the best value, or the starting
 * one back). */
static void describe_best(kp_runtime *rt, kp_kernel *k, tuned *t, const int *saved)
{
    kp_kernel_info info = {.struct_size = sizeof info};
    kp_kernel_info_get(k, &info);
    t->n = info.n_tunables;
    t->names = cli_realloc(NULL, (t->n + 1) * sizeof *t->names);
    t->values = cli_realloc(NULL, (t->n + 1) * sizeof *t->values);
    t->named = cli_realloc(NULL, (t->n + 1) * sizeof *t->named);
    t->write = cli_realloc(NULL, (t->n + 1) * sizeof *t->write);
    t->write_values = cli_realloc(NULL, (t->n + 1) * sizeof *t->write_values);
    for (size_t i = 0; i < t->n; i++) {
        kp_tuning_info ti = {.struct_size = sizeof ti};
        kp_kernel_tuning(rt, k, i, &ti);
        t->names[i] = cli_strdup(ti.name);
        t->values[i] = value_text(rt, k, i, t->r.values[i], &t->named[i]);
        int changed = t->r.values[i] != t->start[i];
        t->write[i] = saved[i] || (t->r.improved && changed);
        t->write_values[i] = t->r.improved || !changed ? cli_strdup(t->values[i])
                                                       : value_text(rt, k, i, t->start[i], NULL);
    }
}

static size_t written(const tuned *t)
{
    size_t n = 0;
    for (size_t j = 0; t->status == KP_OK && j < t->n; j++)
        n += t->write[j] != 0;
    return n;
}

/* Writes the kernels' values into FILE as one entry. Returns KP_ERR_NOT_FOUND when no kernel has
 * anything to write (no tuning improved beyond noise). */
static kp_status write_manifest(const cli_ctx *ctx, const char *file, const kp_device_info *d,
                                tuned *list, size_t n)
{
    size_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += written(&list[i]);
    if (!total)
        return KP_ERR_NOT_FOUND;
    kp_tuned_value *values = cli_realloc(NULL, (total + 1) * sizeof *values);
    size_t v = 0, improved = 0;
    double worst = 0, best = 0;
    for (size_t i = 0; i < n; i++) {
        if (!written(&list[i]))
            continue;
        for (size_t j = 0; j < list[i].n; j++)
            if (list[i].write[j])
                values[v++] =
                    (kp_tuned_value){list[i].kernel, list[i].names[j], list[i].write_values[j]};
        if (!list[i].r.improved)
            continue;
        improved++;
        if (worst == 0 || list[i].r.speedup < worst)
            worst = list[i].r.speedup;
        if (list[i].r.speedup > best)
            best = list[i].r.speedup;
    }
    char speedup[96];
    if (improved)
        snprintf(speedup, sizeof speedup, "%.2f-%.2fx over the previous values", worst, best);
    else
        snprintf(speedup, sizeof speedup,
                 "none: the previous values restored (the search's best was within noise)");
    kp_status st = write_entry(ctx, file, d, values, v, speedup);
    free(values);
    return st;
}

/* Whether --write FILE can be written, checked before a search that may take minutes: its
 * directory must exist and be writable, and FILE, when it exists, writable. A message in why. */
static int writable(const char *file, char *why, size_t size)
{
    char dir[4096];
    const char *slash = strrchr(file, '/');
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else
        snprintf(dir, sizeof dir, "%.*s", (int)(slash == file ? 1 : slash - file), file);
    if (access(dir, F_OK) != 0) {
        snprintf(why, size, "--write %s: the directory %s does not exist", file, dir);
        return 0;
    }
    if (access(dir, W_OK) != 0 || (access(file, F_OK) == 0 && access(file, W_OK) != 0)) {
        snprintf(why, size, "--write %s: %s is not writable", file,
                 access(file, F_OK) == 0 ? file : dir);
        return 0;
    }
    return 1;
}

static void print_result(const tuned *t)
{
    printf("  best:");
    for (size_t j = 0; j < t->n; j++)
        printf(" %s=%s", t->names[j], t->values[j]);
    const kp_tune_result *r = &t->r;
    printf("  %.2f us vs %.2f us before", r->best_s * 1e6, r->default_s * 1e6);
    if (r->improved && r->default_s > 0)
        printf(" (%.2fx, beyond the noise of %.1f%%)", r->speedup, 100 * r->noise);
    else if (r->improved)
        printf(" (the starting values did not run here)");
    else if (r->speedup != 1.0)
        printf(" (%.2fx, within the noise of %.1f%%: the starting values are kept)", r->speedup,
               100 * r->noise);
    else
        printf(" (the starting values are the fastest)");
    printf("; %u measured, %u skipped, %u rejected%s\n", r->tried, r->skipped, r->rejected,
           r->exhaustive ? ", full grid" : "");
}

/* The values under `key`: every tunable's best, or (`only_written`) those --write writes.
 * Numbers are JSON numbers; choice names strings. */
static void json_values(kpj_writer *w, const char *key, const tuned *t, int only_written)
{
    kpj_key(w, key);
    kpj_begin_object(w);
    for (size_t j = 0; j < t->n; j++) {
        if (only_written && !t->write[j])
            continue;
        const char *text = only_written ? t->write_values[j] : t->values[j];
        if (t->named[j])
            kpj_key_string(w, t->names[j], text);
        else
            kpj_key_int(w, t->names[j], strtoll(text, NULL, 10));
    }
    kpj_end_object(w);
}

static int run_tune(const cli_ctx *ctx)
{
    const char *pattern = ctx->argc > 0 ? ctx->argv[0] : NULL;
    const char *file = cli_flag_value(ctx, "write"), *match = cli_flag_value(ctx, "match");
    kp_tune_options opt = kp_tune_options_default();
    opt.size = cli_flag_value(ctx, "size");
    opt.tunables = cli_flag_value(ctx, "only");
    opt.report = report;
    if (cli_flag_value(ctx, "budget")) {
        char *end;
        errno = 0;
        opt.budget_seconds = strtod(cli_flag_value(ctx, "budget"), &end);
        if (errno || *end || opt.budget_seconds < 0)
            return cli_usage_error(ctx->command, "--budget needs a number of seconds >= 0");
    }
    if (match && strcmp(match, "name") && strcmp(match, "arch") && strcmp(match, "vendor"))
        return cli_usage_error(ctx->command, "--match takes name, arch or vendor");
    char unwritable[4300];
    if (file && !writable(file, unwritable, sizeof unwritable))
        return cli_usage_error(ctx->command, "%s", unwritable);
    kp_runtime *rt;
    int rc = cli_runtime_open(ctx, &rt);
    if (rc != CLI_EXIT_OK)
        return rc;
    kp_device_info d;
    const char *why;
    cli_runtime_device(rt, &d, &why);
    char name[400];
    if (!ctx->json)
        printf("Tuning on %s\n", cli_format_device(&d, name, sizeof name));

    tuned *list = NULL;
    size_t n = 0, failed = 0;
    for (size_t i = 0; i < kp_kernel_count(rt); i++) {
        kp_kernel *k = kp_kernel_at(rt, i);
        kp_kernel_info info = {.struct_size = sizeof info};
        kp_kernel_info_get(k, &info);
        if (!kp_kernel_name_matches(pattern, info.name) || info.n_tunables == 0)
            continue;
        /* A kernel this device cannot run has nothing to tune here. */
        if (kp_kernel_supported(rt, k) != KP_OK) {
            if (!ctx->json)
                printf("\n%s\n  skipped: %s\n", info.name, kp_last_error(rt));
            continue;
        }
        list = cli_realloc(list, (n + 1) * sizeof *list);
        tuned *t = &list[n++];
        memset(t, 0, sizeof *t);
        t->kernel = cli_strdup(info.name);
        if (!ctx->json)
            printf("\n%s\n", info.name);
        tune_run run = {.ctx = ctx, .file = file, .device = &d, .n = info.n_tunables};
        run.names = cli_realloc(NULL, (run.n + 1) * sizeof *run.names);
        t->start = cli_realloc(NULL, (run.n + 1) * sizeof *t->start);
        run.start = t->start;
        run.saved = cli_realloc(NULL, (run.n + 1) * sizeof *run.saved);
        for (size_t j = 0; j < run.n; j++) {
            kp_tuning_info ti = {.struct_size = sizeof ti};
            kp_kernel_tuning(rt, k, j, &ti);
            run.names[j] = cli_strdup(ti.name);
            t->start[j] = ti.value;
            run.saved[j] = 0;
        }
        opt.user = &run;
        t->r.struct_size = sizeof t->r;
        t->status = kp_kernel_tune(rt, k, &opt, &t->r);
        for (size_t j = 0; j < run.n; j++)
            free(run.names[j]);
        free(run.names);
        t->message = cli_strdup(t->status == KP_OK ? "" : kp_last_error(rt));
        if (t->status == KP_OK) {
            describe_best(rt, k, t, run.saved);
            if (!ctx->json)
                print_result(t);
        } else {
            failed++;
            cli_status_error(t->status, t->message);
        }
        free(run.saved);
    }
    if (n == 0) {
        cli_error("no kernel with tunables matches '%s'", pattern ? pattern : "*");
        rc = CLI_EXIT_FAILED;
    }
    if (file && n > failed) {
        kp_status st = write_manifest(ctx, file, &d, list, n);
        if (st != KP_OK && st != KP_ERR_NOT_FOUND)
            rc = CLI_EXIT_FAILED;
        else if (!ctx->json && st == KP_ERR_NOT_FOUND)
            printf("\nnothing written to %s: no kernel improved beyond noise\n", file);
        else if (!ctx->json)
            printf("\nwrote %s\n", file);
    }
    if (ctx->json && n) {
        kpj_writer w;
        cli_json_begin(&w);
        kpj_begin_object(&w);
        kpj_key(&w, "device");
        kpj_begin_object(&w);
        cli_json_device_fields(&w, &d);
        kpj_end_object(&w);
        kpj_key(&w, "kernels");
        kpj_begin_array(&w);
        for (size_t i = 0; i < n; i++) {
            kpj_begin_object(&w);
            kpj_key_string(&w, "kernel", list[i].kernel);
            kpj_key_string(&w, "status", kp_status_name(list[i].status));
            cli_json_optional(&w, "message", list[i].message);
            json_values(&w, "best", &list[i], 0);
            json_values(&w, "changes", &list[i], 1);
            kpj_key_double(&w, "best_s", list[i].r.best_s);
            kpj_key_double(&w, "default_s", list[i].r.default_s);
            kpj_key_double(&w, "speedup", list[i].r.speedup);
            kpj_key_double(&w, "noise", list[i].r.noise);
            kpj_key_bool(&w, "improved", list[i].r.improved);
            kpj_key_int(&w, "measured", list[i].r.tried);
            kpj_key_int(&w, "skipped", list[i].r.skipped);
            kpj_key_int(&w, "rejected", list[i].r.rejected);
            kpj_key_bool(&w, "exhaustive", list[i].r.exhaustive);
            kpj_end_object(&w);
        }
        kpj_end_array(&w);
        kpj_end_object(&w);
        int jr = cli_json_end(&w);
        if (rc == CLI_EXIT_OK)
            rc = jr;
    }
    for (size_t i = 0; i < n; i++) {
        for (size_t j = 0; j < list[i].n; j++) {
            free(list[i].names[j]);
            free(list[i].values[j]);
            free(list[i].write_values[j]);
        }
        free(list[i].names);
        free(list[i].values);
        free(list[i].named);
        free(list[i].write);
        free(list[i].write_values);
        free(list[i].start);
        free(list[i].kernel);
        free(list[i].message);
    }
    free(list);
    cli_runtime_close(ctx, rt);
    return failed ? CLI_EXIT_FAILED : rc;
}

const cli_command cli_cmd_tune = {
    .name = "tune",
    .summary = "search kernels' tunables on this device and write the fastest to a manifest",
    .usage = "[PATTERN] [--write FILE] [--budget SECONDS] [--size NAME] [--match KIND] "
             "[--only GLOBS]",
    .details = "Tries the allowed values of each kernel's tunables (the full grid when it has at "
               "most 64 points, otherwise coordinate descent and random points within the "
               "budget). Every candidate is verified against the host reference before it is "
               "timed; candidates that fail to build, exceed the device's limits or give wrong "
               "results are skipped. The starting values are warmed up before they are timed, and "
               "when the fastest differs, both are timed again three times each, alternating: "
               "a speedup counts only beyond the spread of those times (within it, the "
               "starting values are kept). With --write, the values that improved are merged "
               "into FILE as a tuning entry matched to this device, with provenance (device, "
               "driver, date, kernelport version, speedup); other entries and comments are "
               "kept; values equal to the starting ones are not written. With --json, "
               "progress goes to stderr.",
    .flags = tune_flags,
    .min_args = 0,
    .max_args = 1,
    .run = run_tune,
};
