/* SPDX-License-Identifier: Apache-2.0 */
/* `kernelport verify [PATTERN]`: each kernel on the device against its host reference. */
#include "cli.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_SEED 1

/* One output compared. The strings are copies: kernelport.h does not say that the library's
 * outlive the callback. */
typedef struct check {
    char *size;
    char *output;
    kp_verify_result r;
} check;

typedef struct kernel_run {
    char *name;
    kp_status status;
    char *message; /* kp_last_error when the run failed, why it was skipped, else "" */
    int skipped;
    int unsupported; /* skipped because the device cannot run it */
    int error_row;   /* the run failed in a way no failing check explains */
    size_t first_check, n_checks;
} kernel_run;

typedef struct verify_run {
    check *checks;
    size_t n_checks, cap_checks;
    kernel_run *kernels;
    size_t n_kernels, cap_kernels;
} verify_run;

static void collect(void *user, const kp_verify_result *result)
{
    verify_run *v = user;
    if (v->n_checks == v->cap_checks) {
        v->cap_checks = v->cap_checks ? v->cap_checks * 2 : 32;
        v->checks = cli_realloc(v->checks, v->cap_checks * sizeof *v->checks);
    }
    check *c = &v->checks[v->n_checks++];
    c->r = *result;
    c->size = cli_strdup(result->size);
    c->output = cli_strdup(result->output);
    c->r.kernel = c->r.size = c->r.output = NULL;
}

/* Non-zero when the kernel lists `size` among its verification sizes. */
static int offers_size(const kp_kernel *k, const char *size)
{
    const char *const *sizes = kp_kernel_sample_sizes(k, 0);
    for (size_t i = 0; sizes != NULL && sizes[i] != NULL; i++)
        if (strcmp(sizes[i], size) == 0)
            return 1;
    return 0;
}

/* "no sample size SIZE (offers: ...)". */
static char *no_such_size(const kp_kernel *k, const char *size)
{
    const char *const *sizes = kp_kernel_sample_sizes(k, 0);
    size_t len = 0;
    for (size_t i = 0; sizes != NULL && sizes[i] != NULL; i++)
        len += strlen(sizes[i]) + 2;
    char *why, *list = cli_realloc(NULL, len + 1);
    list[0] = '\0';
    for (size_t i = 0; sizes != NULL && sizes[i] != NULL; i++) {
        if (i > 0)
            strcat(list, ", ");
        strcat(list, sizes[i]);
    }
    if (asprintf(&why, "no sample size '%s' (offers: %s)", size, list[0] ? list : "none") < 0)
        cli_out_of_memory();
    free(list);
    return why;
}

static void run_kernel(kp_runtime *rt, kp_kernel *k, const char *name, const char *size,
                       uint64_t seed, verify_run *v)
{
    if (v->n_kernels == v->cap_kernels) {
        v->cap_kernels = v->cap_kernels ? v->cap_kernels * 2 : 16;
        v->kernels = cli_realloc(v->kernels, v->cap_kernels * sizeof *v->kernels);
    }
    kernel_run *run = &v->kernels[v->n_kernels++];
    memset(run, 0, sizeof *run);
    run->name = cli_strdup(name);
    run->first_check = v->n_checks;
    /* A kernel this device cannot run (tc.gemm without tensor cores) is not a failure of it. */
    if (kp_kernel_supported(rt, k) != KP_OK) {
        run->skipped = run->unsupported = 1;
        run->message = cli_strdup(kp_last_error(rt));
        return;
    }
    run->status = kp_kernel_verify(rt, k, size, seed, collect, v);
    /* A size outside the list runs when the sample function builds it ("MxNxK:nt", "f16-...");
     * one it does not know is skipped, naming the sizes offered. */
    if (run->status == KP_ERR_NOT_FOUND && size != NULL && !offers_size(k, size) &&
        v->n_checks == run->first_check) {
        run->skipped = 1;
        run->message = no_such_size(k, size);
        return;
    }
    const char *message = run->status == KP_OK ? "" : kp_last_error(rt);
    run->message =
        cli_strdup(run->status == KP_OK || message[0] ? message : kp_status_str(run->status));
    run->n_checks = v->n_checks - run->first_check;
    int failed_check = 0;
    for (size_t i = 0; i < run->n_checks; i++)
        failed_check |= !v->checks[run->first_check + i].r.passed;
    run->error_row = run->status != KP_OK && !(run->status == KP_ERR_VERIFY && failed_check);
}

/* The verification size of k whose sample takes the fewest bytes (the first of equals), or NULL
 * when none builds: the one to run where every run is dear, as under a simulator. */
static const char *smallest_size(kp_runtime *rt, kp_kernel *k)
{
    const char *const *sizes = kp_kernel_sample_sizes(k, 0);
    const char *best = NULL;
    uint64_t least = UINT64_MAX;
    for (size_t i = 0; sizes[i] != NULL; i++) {
        uint64_t bytes;
        if (kp_kernel_sample_bytes(rt, k, sizes[i], &bytes) == KP_OK && bytes < least) {
            least = bytes;
            best = sizes[i];
        }
    }
    return best;
}

static void check_cells(cli_table *t, const char *kernel, const check *c)
{
    const kp_verify_result *r = &c->r;
    cli_table_cell(t, "%s", kernel);
    cli_table_cell(t, "%s", c->size);
    cli_table_cell(t, "%s", c->output);
    cli_table_cell(t, "%" PRId64, r->elements);
    cli_table_cell(t, "%.3g", r->max_abs_err);
    cli_table_cell(t, "%.3g", r->max_rel_err);
    cli_table_cell(t, "%g/%g", r->atol, r->rtol);
    cli_table_cell(t, "%s", r->passed ? "PASS" : "FAIL");
    if (r->passed)
        cli_table_cell(t, "%s", "");
    else
        cli_table_cell(t, "%" PRId64 " of %" PRId64 " outside tolerance, worst at element %" PRId64,
                       r->failures, r->elements, r->worst_index);
}

/* A row for a kernel that has no check to show: skipped, or its run failed. */
static void run_cells(cli_table *t, const kernel_run *run, const char *size)
{
    cli_table_cell(t, "%s", run->name);
    cli_table_cell(t, "%s", size != NULL ? size : "-");
    for (int i = 0; i < 5; i++)
        cli_table_cell(t, "-");
    if (run->skipped) {
        cli_table_cell(t, "SKIP");
        cli_table_cell(t, "%s", run->message);
    } else {
        cli_table_cell(t, "FAIL");
        cli_table_cell(t, "%s: %.*s", kp_status_name(run->status), (int)strcspn(run->message, "\n"),
                       run->message);
    }
}

static void print_text(const verify_run *v, const char *size)
{
    cli_table *t = cli_table_create(9);
    const char *head[] = {"KERNEL",      "SIZE",      "OUTPUT", "ELEMENTS", "MAX ABS ERR",
                          "MAX REL ERR", "ATOL/RTOL", "RESULT", "NOTE"};
    for (int i = 0; i < 9; i++)
        cli_table_cell(t, "%s", head[i]);
    for (int i = 3; i <= 5; i++)
        cli_table_align_right(t, i);
    for (size_t i = 0; i < v->n_kernels; i++) {
        const kernel_run *run = &v->kernels[i];
        for (size_t j = 0; j < run->n_checks; j++)
            check_cells(t, run->name, &v->checks[run->first_check + j]);
        if (run->skipped || run->error_row)
            run_cells(t, run, size);
    }
    cli_table_print(t, stdout, 0);
    cli_table_destroy(t);
    /* Build logs and manifest errors span lines; the table showed only their first. */
    for (size_t i = 0; i < v->n_kernels; i++) {
        const kernel_run *run = &v->kernels[i];
        if (run->error_row && strchr(run->message, '\n') != NULL)
            printf("\n%s: %s:\n%s%s", run->name, kp_status_name(run->status), run->message,
                   run->message[strlen(run->message) - 1] == '\n' ? "" : "\n");
    }
}

static void print_json(kpj_writer *w, const verify_run *v)
{
    kpj_key(w, "kernels");
    kpj_begin_array(w);
    for (size_t i = 0; i < v->n_kernels; i++) {
        const kernel_run *run = &v->kernels[i];
        int passed = !run->skipped && run->status == KP_OK;
        for (size_t j = 0; j < run->n_checks; j++)
            passed &= v->checks[run->first_check + j].r.passed != 0;
        kpj_begin_object(w);
        kpj_key_string(w, "name", run->name);
        kpj_key_string(w, "result", run->skipped ? "skipped" : passed ? "pass" : "fail");
        kpj_key_string(w, "status", run->skipped ? NULL : kp_status_name(run->status));
        cli_json_optional(w, "message", run->message);
        kpj_key(w, "checks");
        kpj_begin_array(w);
        for (size_t j = 0; j < run->n_checks; j++) {
            const check *c = &v->checks[run->first_check + j];
            kpj_begin_object(w);
            kpj_key_string(w, "size", c->size);
            kpj_key_string(w, "output", c->output);
            kpj_key_int(w, "elements", c->r.elements);
            kpj_key_double(w, "max_abs_err", c->r.max_abs_err);
            kpj_key_double(w, "max_rel_err", c->r.max_rel_err);
            kpj_key_double(w, "atol", c->r.atol);
            kpj_key_double(w, "rtol", c->r.rtol);
            kpj_key_int(w, "worst_index", c->r.worst_index);
            kpj_key_int(w, "failures", c->r.failures);
            kpj_key_bool(w, "passed", c->r.passed != 0);
            kpj_end_object(w);
        }
        kpj_end_array(w);
        kpj_end_object(w);
    }
    kpj_end_array(w);
}

static int parse_seed(const cli_ctx *ctx, uint64_t *seed)
{
    const char *text = cli_flag_value(ctx, "seed");
    *seed = DEFAULT_SEED;
    if (text == NULL)
        return CLI_EXIT_OK;
    char *end;
    errno = 0;
    /* Decimal or 0x hex; base 0 would also read a leading 0 as octal, which surprises. */
    int hex = text[0] == '0' && (text[1] == 'x' || text[1] == 'X');
    unsigned long long value = strtoull(text, &end, hex ? 16 : 10);
    /* strtoull would accept "-1" as its two's complement; a seed is written unsigned. */
    if (!isdigit((unsigned char)text[0]) || *end != '\0' || errno == ERANGE)
        return cli_usage_error(ctx->command, "--seed wants an unsigned 64-bit integer, not '%s'",
                               text);
    *seed = value;
    return CLI_EXIT_OK;
}

static void free_run(verify_run *v)
{
    for (size_t i = 0; i < v->n_checks; i++) {
        free(v->checks[i].size);
        free(v->checks[i].output);
    }
    for (size_t i = 0; i < v->n_kernels; i++) {
        free(v->kernels[i].name);
        free(v->kernels[i].message);
    }
    free(v->checks);
    free(v->kernels);
}

static int run_verify(const cli_ctx *ctx)
{
    const char *pattern = ctx->argc > 0 ? ctx->argv[0] : NULL;
    const char *size = cli_flag_value(ctx, "size");
    const int smallest = cli_flag_value(ctx, "smallest") != NULL;
    if (size != NULL && smallest)
        return cli_usage_error(ctx->command, "--size and --smallest exclude each other");
    uint64_t seed;
    int rc = parse_seed(ctx, &seed);
    if (rc != CLI_EXIT_OK)
        return rc;
    kp_runtime *rt;
    rc = cli_runtime_open(ctx, &rt);
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

    size_t n = kp_kernel_count(rt), total = 0, done = 0;
    for (size_t i = 0; i < n; i++) {
        kp_kernel_info info = {.struct_size = sizeof info};
        kp_kernel *k = kp_kernel_at(rt, i);
        if (k != NULL && kp_kernel_info_get(k, &info) == KP_OK &&
            kp_kernel_name_matches(pattern, info.name))
            total++;
    }
    if (!ctx->json) {
        char line[400];
        printf("Verifying on %s, seed %" PRIu64 "\n\n",
               cli_format_device(&device, line, sizeof line), seed);
        fflush(stdout); /* before the progress line, when both go to the terminal */
    }
    verify_run v = {0};
    for (size_t i = 0; i < n; i++) {
        kp_kernel_info info = {.struct_size = sizeof info};
        kp_kernel *k = kp_kernel_at(rt, i);
        if (k == NULL || kp_kernel_info_get(k, &info) != KP_OK ||
            !kp_kernel_name_matches(pattern, info.name))
            continue;
        cli_progress("verify [%zu/%zu] %s", ++done, total, info.name);
        run_kernel(rt, k, info.name, smallest ? smallest_size(rt, k) : size, seed, &v);
    }
    cli_progress_clear();

    size_t failed = 0, skipped = 0, unsupported = 0;
    for (size_t i = 0; i < v.n_checks; i++)
        failed += !v.checks[i].r.passed;
    for (size_t i = 0; i < v.n_kernels; i++) {
        failed += v.kernels[i].error_row != 0;
        skipped += v.kernels[i].skipped != 0;
        unsupported += v.kernels[i].unsupported != 0;
    }
    size_t verified = v.n_kernels - skipped;

    if (ctx->json) {
        kpj_writer w;
        cli_json_begin(&w);
        kpj_begin_object(&w);
        kpj_key(&w, "device");
        kpj_begin_object(&w);
        cli_json_device_fields(&w, &device);
        cli_json_optional(&w, "why", why);
        kpj_end_object(&w);
        kpj_key_string(&w, "pattern", pattern);
        kpj_key_string(&w, "size", size);
        kpj_key_uint(&w, "seed", seed);
        print_json(&w, &v);
        kpj_key(&w, "summary");
        kpj_begin_object(&w);
        kpj_key_uint(&w, "kernels", verified);
        kpj_key_uint(&w, "checks", v.n_checks);
        kpj_key_uint(&w, "failed", failed);
        kpj_key_uint(&w, "skipped", skipped);
        kpj_end_object(&w);
        kpj_end_object(&w);
        rc = cli_json_end(&w);
    } else {
        if (v.n_kernels > 0) {
            print_text(&v, size);
            putchar('\n');
        }
        printf("%zu kernel%s, %zu check%s, %zu failed", verified, verified == 1 ? "" : "s",
               v.n_checks, v.n_checks == 1 ? "" : "s", failed);
        if (skipped > 0)
            printf(", %zu skipped", skipped);
        putchar('\n');
    }
    if (v.n_kernels == 0) {
        if (pattern != NULL)
            cli_error("no kernel matches '%s'", pattern);
        else
            cli_error("no kernels are registered ('kernelport plugins' shows what was loaded)");
        rc = CLI_EXIT_FAILED;
    } else if (verified == 0 && unsupported == v.n_kernels) {
        /* Nothing to verify here is not a failure: the SKIP rows say why. */
        rc = CLI_EXIT_OK;
    } else if (verified == 0) {
        cli_error("no kernel%s%s%s offers sample size '%s'", pattern ? " matching '" : "",
                  pattern ? pattern : "", pattern ? "'" : "", size ? size : "(any)");
        rc = CLI_EXIT_FAILED;
    } else if (failed > 0) {
        rc = CLI_EXIT_FAILED;
    }
    free_run(&v);
    cli_runtime_close(ctx, rt);
    return rc;
}

static const cli_flag verify_flags[] = {
    {"size", "NAME", "only the sample size NAME (default: each size a kernel offers)"},
    {"smallest", NULL, "only each kernel's verification size with the fewest bytes"},
    {"seed", "N", "seed of the random inputs (default: 1)"},
    {NULL, NULL, NULL},
};

const cli_command cli_cmd_verify = {
    .name = "verify",
    .summary = "compare kernels on the device with their host reference",
    .usage = "[PATTERN] [--size NAME | --smallest] [--seed N]",
    .details = "Each output is compared element by element within the kernel's tolerance,\n"
               "|device - reference| <= atol + rtol * |reference|. A kernel that does not offer\n"
               "--size is skipped. Exits 1 when any check or run failed, or nothing matched.",
    .flags = verify_flags,
    .max_args = 1,
    .run = run_verify,
};
