/* SPDX-License-Identifier: Apache-2.0 */
/* Shared declarations of the kernelport command-line tool: commands, options, output helpers. */
#ifndef KP_TOOLS_CLI_H
#define KP_TOOLS_CLI_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "json.h"
#include "kernelport/kernelport.h"

/* Exit codes, the same for every command; docs/cli.md documents them. */
enum {
    CLI_EXIT_OK = 0,      /* success */
    CLI_EXIT_FAILED = 1,  /* a check failed, nothing matched, or the command could not finish */
    CLI_EXIT_USAGE = 2,   /* the command line is wrong */
    CLI_EXIT_RUNTIME = 3, /* kp_runtime_create failed */
};

/* The most options one command may declare. */
#define CLI_MAX_FLAGS 8

/* An option of one command: "--name VALUE", "--name=VALUE", or "--name" when metavar is NULL. */
typedef struct cli_flag {
    const char *name; /* without the dashes; NULL ends a command's list */
    const char *metavar;
    const char *help;
} cli_flag;

typedef struct cli_ctx cli_ctx;

/*
 * One command. A command lives in its own cmd-NAME.c file, which defines `cli_cmd_NAME`; adding
 * one takes that file, its declaration below and a row in kernelport.c's table. The parser in
 * kernelport.c handles the global options, the command's flags and the operand count, so `run`
 * starts from a well-formed command line and only checks the values.
 */
typedef struct cli_command {
    const char *name;
    const char *summary;   /* one line for `kernelport --help` */
    const char *usage;     /* what follows the command name: "[PATTERN] [--size NAME]" */
    const char *details;   /* paragraph for `kernelport help NAME`, or NULL */
    const cli_flag *flags; /* ended by a NULL name; NULL when the command has none */
    int min_args;          /* operands accepted */
    int max_args;
    int (*run)(const cli_ctx *ctx); /* returns a CLI_EXIT_* code */
} cli_command;

#define CLI_MAX_PLUGIN_DIRS 16

/* The parsed command line. */
struct cli_ctx {
    const char *manifest; /* --manifest, or NULL (the library then reads KP_MANIFEST) */
    const char *device;   /* --device, or NULL (the library then reads KP_DEVICE) */
    const char *plugin_dirs[CLI_MAX_PLUGIN_DIRS]; /* --plugin-dir, in order */
    size_t n_plugin_dirs;
    int json; /* --json: a JSON document on stdout instead of text */
    const cli_command *command;
    int argc; /* the operands after the command name, options removed */
    char **argv;
    /* Per entry of command->flags: its value, "" for a switch given, NULL when absent. */
    const char *flag_values[CLI_MAX_FLAGS];
    /* A runtime the caller opened (cli_main's), used instead of opening one; NULL for the tool. */
    kp_runtime *runtime;
};

/*
 * The whole command line: parses argv (argv[0] is the program), runs the command and returns its
 * CLI_EXIT_* code, reporting a failed write to stdout. With `runtime` the command runs on that
 * runtime (borrowed, not destroyed) instead of opening one from --manifest and --device, so a
 * program, or a test, can run the tool's code paths on kernels it registered itself.
 */
int cli_main(int argc, char **argv, kp_runtime *runtime);

/* The manifest layers the runtime read or looked for: a "Manifests: ..." line, or a JSON
 * "manifests" member ([{layer, path, read}]). */
void cli_print_manifests(const kp_runtime *rt);
void cli_json_manifests(kpj_writer *w, const kp_runtime *rt);

extern const cli_command cli_cmd_devices;
extern const cli_command cli_cmd_plugins;
extern const cli_command cli_cmd_kernels;
extern const cli_command cli_cmd_verify;
extern const cli_command cli_cmd_explain;
extern const cli_command cli_cmd_peak;
extern const cli_command cli_cmd_bench;
extern const cli_command cli_cmd_tune;
extern const cli_command cli_cmd_warmup;

/* ---- cli.c: errors, runtime, formatting -------------------------------------------------- */

/* The value of the command's flag `name` (as in cli_ctx.flag_values), NULL when absent. */
const char *cli_flag_value(const cli_ctx *ctx, const char *name);

/* Prints "kernelport: error: ..." on stderr. */
void cli_error(const char *fmt, ...) KP_PRINTF(1, 2);

/* Prints "kernelport: error: STATUS_NAME: message" (the message verbatim, newlines kept). */
void cli_status_error(kp_status status, const char *message);

/*
 * Prints a usage error, then the command's usage line (when `command` is not NULL) and where to
 * find help. Returns CLI_EXIT_USAGE.
 */
int cli_usage_error(const cli_command *command, const char *fmt, ...) KP_PRINTF(2, 3);

/*
 * Creates the runtime from --manifest and --device (NULL ones leave the choice to the library
 * and its environment variables). Returns CLI_EXIT_OK, or CLI_EXIT_RUNTIME after printing why.
 */
int cli_runtime_open(const cli_ctx *ctx, kp_runtime **out);

/* Destroys a runtime cli_runtime_open created; leaves the caller's (ctx->runtime) alone. */
void cli_runtime_close(const cli_ctx *ctx, kp_runtime *rt);

/* Fills *out with the runtime's device and *why with the rule that chose it ("" if unknown). */
kp_status cli_runtime_device(kp_runtime *rt, kp_device_info *out, const char **why);

/* Prints "kernelport: error: out of memory" and exits with CLI_EXIT_FAILED. */
_Noreturn void cli_out_of_memory(void);

/* A heap copy of s ("" for NULL); exits with "out of memory" rather than return NULL. */
char *cli_strdup(const char *s);

/* realloc that exits with "out of memory" rather than return NULL. */
void *cli_realloc(void *p, size_t size);

/* "512 B", "48 KiB", "79.2 GiB" into buf; returns buf. */
char *cli_format_bytes(uint64_t bytes, char *buf, size_t size);

/* "[0] NVIDIA H100 (nvidia gpu, sm_90)" into buf; returns buf. */
char *cli_format_device(const kp_device_info *d, char *buf, size_t size);

/* The version of the plugin that registered the kernel ("" when not found). */
const char *cli_plugin_version(const kp_runtime *rt, const kp_kernel_info *k);

/* A tunable's value as text: value_text when set, else the number. Returns buf. */
char *cli_format_tuning_value(const kp_tuning_info *t, char *buf, size_t size);

/*
 * Progress for long runs, on stderr and only when stderr is a terminal: each call replaces the
 * line; cli_progress_clear erases it before results are printed.
 */
void cli_progress(const char *fmt, ...) KP_PRINTF(1, 2);
void cli_progress_clear(void);

/* ---- cli.c: JSON shapes shared by commands (docs/cli.md) --------------------------------- */

/* Starts the command's JSON document on stdout. */
void cli_json_begin(kpj_writer *w);

/* Ends it; returns CLI_EXIT_OK, or CLI_EXIT_FAILED when it is malformed or was not written. */
int cli_json_end(kpj_writer *w);

/* A string member that is null when s is NULL or empty, for fields the API reports as "". */
void cli_json_optional(kpj_writer *w, const char *key, const char *s);

/* The members of a device object (inside an open object). */
void cli_json_device_fields(kpj_writer *w, const kp_device_info *d);

/* The members describing a kernel and its origin (inside an open object). */
void cli_json_kernel_fields(kpj_writer *w, const kp_runtime *rt, const kp_kernel_info *k);

/* A tunable object; on error (status != KP_OK) the values are null and `error` is set. */
void cli_json_tuning(kpj_writer *w, const kp_tuning_info *t, kp_status status, const char *error);

/* ---- table.c: aligned text tables -------------------------------------------------------- */

typedef struct cli_table cli_table;

/* A table of `ncols` columns; exits with "out of memory" rather than return NULL. */
cli_table *cli_table_create(int ncols);
void cli_table_destroy(cli_table *t);

/* Right-aligns column `col` (numbers); columns are left-aligned otherwise. */
void cli_table_align_right(cli_table *t, int col);

/*
 * Appends a cell to the current row, starting a new row when the current one is full. Text
 * after a newline is dropped, except in the last column, whose extra lines are printed
 * indented to the column's start.
 */
void cli_table_cell(cli_table *t, const char *fmt, ...) KP_PRINTF(2, 3);

/* A "% of peak" cell from a fraction (negative: no peak, "-"). Above 1 of the bandwidth
 * (`bandwidth` set) the data stayed in a cache, so the figure says "(cache)": it is no fraction
 * of the memory's bandwidth; above 1 of FP32, "(above peak)". */
void cli_table_percent(cli_table *t, double fraction, int bandwidth);

/* Prints every row, each prefixed by `indent` spaces, columns two spaces apart. */
void cli_table_print(const cli_table *t, FILE *out, int indent);

#endif
