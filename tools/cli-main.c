/* SPDX-License-Identifier: Apache-2.0 */
/* The kernelport command line: global options, the command table, parsing and help (cli_main). */
#include "cli.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

static int run_help(const cli_ctx *ctx);

static const cli_command cmd_help = {
    .name = "help",
    .summary = "show the help of a command",
    .usage = "[COMMAND]",
    .max_args = 1,
    .run = run_help,
};

/* Every command, in the order `kernelport --help` lists them. */
static const cli_command *const commands[] = {
    &cli_cmd_devices, &cli_cmd_plugins, &cli_cmd_kernels, &cli_cmd_verify, &cli_cmd_explain,
    &cli_cmd_peak,    &cli_cmd_bench,   &cli_cmd_tune,    &cli_cmd_warmup, &cmd_help,
};

#define N_COMMANDS (sizeof commands / sizeof commands[0])

/* The options every command accepts, before or after its name. */
enum { OPT_MANIFEST, OPT_DEVICE, OPT_PLUGIN_DIR, OPT_JSON, OPT_HELP, OPT_VERSION, N_GLOBAL };

static const cli_flag global_flags[] = {
    [OPT_MANIFEST] = {"manifest", "FILE",
                      "layer FILE over the built-in, system and user manifests\n"
                      "(default: $KP_MANIFEST)"},
    [OPT_DEVICE] = {"device", "SPEC",
                    "run on SPEC: nvidia, pocl, gpu:1, cpu, host, a name or a UUID\n"
                    "(default: $KP_DEVICE, else the manifest's device rules)"},
    [OPT_PLUGIN_DIR] = {"plugin-dir", "DIR",
                        "load plugins from DIR first (repeatable; then $KP_PLUGIN_PATH, the\n"
                        "manifest's plugins.dirs and the installed plugins)"},
    [OPT_JSON] = {"json", NULL, "write one JSON document on stdout instead of text"},
    [OPT_HELP] = {"help", NULL, "show this help, or the command's (-h too)"},
    [OPT_VERSION] = {"version", NULL, "print the version"},
    [N_GLOBAL] = {NULL, NULL, NULL},
};

static const cli_command *find_command(const char *name)
{
    for (size_t i = 0; i < N_COMMANDS; i++)
        if (strcmp(commands[i]->name, name) == 0)
            return commands[i];
    return NULL;
}

/* The index of the flag called name[0..len) in `flags`, or -1. */
static int find_flag(const cli_flag *flags, const char *name, size_t len)
{
    for (int i = 0; flags != NULL && flags[i].name != NULL && i < CLI_MAX_FLAGS; i++)
        if (strlen(flags[i].name) == len && strncmp(flags[i].name, name, len) == 0)
            return i;
    return -1;
}

static void print_flags(FILE *out, const cli_flag *flags)
{
    cli_table *t = cli_table_create(2);
    for (int i = 0; flags[i].name != NULL; i++) {
        cli_table_cell(t, "--%s%s%s", flags[i].name, flags[i].metavar ? " " : "",
                       flags[i].metavar ? flags[i].metavar : "");
        cli_table_cell(t, "%s", flags[i].help);
    }
    cli_table_print(t, out, 2);
    cli_table_destroy(t);
}

static void print_help(FILE *out)
{
    fputs("usage: kernelport [--manifest FILE] [--device SPEC] [--plugin-dir DIR] [--json]\n"
          "                  COMMAND [ARGS...]\n\n"
          "Inspect, verify and explain the kernels of a Kernelport installation.\n\n"
          "Commands:\n",
          out);
    cli_table *t = cli_table_create(2);
    for (size_t i = 0; i < N_COMMANDS; i++) {
        cli_table_cell(t, "%s", commands[i]->name);
        cli_table_cell(t, "%s", commands[i]->summary);
    }
    cli_table_print(t, out, 2);
    cli_table_destroy(t);
    fputs("\nGlobal options (before or after the command):\n", out);
    print_flags(out, global_flags);
    fputs("\nEnvironment:\n"
          "  KP_DEVICE       the device, as --device takes it\n"
          "  KP_MANIFEST     a manifest layered over the others, as --manifest\n"
          "  KP_PLUGIN_PATH  plugin directories, ':'-separated, after --plugin-dir\n"
          "  KP_KERNEL_DIR   a directory of .cl files replacing plugins' kernel sources\n"
          "  KP_LOG          error, warn (default), info or debug\n"
          "  KP_PROFILE      a file (or stderr) for each kernel's launches and device time,\n"
          "                  written when the runtime ends (.json: as JSON)\n"
          "\nExit status: 0 success, 1 a check failed or nothing matched, 2 usage error,\n"
          "3 the runtime could not be created.\n"
          "\n'kernelport help COMMAND' describes a command.\n",
          out);
}

static void print_command_help(FILE *out, const cli_command *c)
{
    /* The summary reads as a sentence here: capitalised, with a full stop. */
    fprintf(out, "usage: kernelport %s%s%s\n\n%c%s.\n", c->name, c->usage[0] ? " " : "", c->usage,
            toupper((unsigned char)c->summary[0]), c->summary + 1);
    if (c->details != NULL)
        fprintf(out, "\n%s\n", c->details);
    if (c->flags != NULL && c->flags[0].name != NULL) {
        fputs("\nOptions:\n", out);
        print_flags(out, c->flags);
    }
    fputs("\nGlobal options: --manifest FILE, --device SPEC, --plugin-dir DIR, --json\n"
          "('kernelport --help').\n",
          out);
}

static int run_help(const cli_ctx *ctx)
{
    if (ctx->argc == 0) {
        print_help(stdout);
        return CLI_EXIT_OK;
    }
    const cli_command *c = find_command(ctx->argv[0]);
    if (c == NULL)
        return cli_usage_error(NULL, "unknown command '%s'", ctx->argv[0]);
    print_command_help(stdout, c);
    return CLI_EXIT_OK;
}

/*
 * Parses argv into *ctx. Global options may come anywhere; a command's own options only after
 * its name, since before it they could not be told apart from a mistake. "--" ends the options.
 * Returns -1 when the command line is well-formed, else the exit code to return.
 */
static int parse(int argc, char **argv, cli_ctx *ctx, int *help, int *version)
{
    int options_done = 0;
    for (int i = 1; i < argc; i++) {
        char *arg = argv[i];
        if (!options_done && strcmp(arg, "--") == 0) {
            options_done = 1;
            continue;
        }
        if (options_done || arg[0] != '-' || arg[1] == '\0') {
            if (ctx->command == NULL) {
                ctx->command = find_command(arg);
                if (ctx->command == NULL)
                    return cli_usage_error(NULL, "unknown command '%s'", arg);
            } else {
                ctx->argv[ctx->argc++] = arg;
            }
            continue;
        }
        if (strcmp(arg, "-h") == 0) {
            *help = 1;
            continue;
        }
        const char *name = arg + 2;
        const char *eq = strchr(name, '=');
        size_t len = eq ? (size_t)(eq - name) : strlen(name);
        /* After the command's name its own options come first, so `bench --json FILE` can
         * take a file where the global --json is a switch. */
        const cli_flag *flags = ctx->command != NULL ? ctx->command->flags : NULL;
        int index = arg[1] == '-' && flags != NULL ? find_flag(flags, name, len) : -1;
        if (index < 0) {
            flags = global_flags;
            index = arg[1] == '-' ? find_flag(global_flags, name, len) : -1;
        }
        if (index < 0) {
            if (ctx->command != NULL)
                return cli_usage_error(ctx->command, "unknown option '%s' for '%s'", arg,
                                       ctx->command->name);
            /* A command's option given before the command's name: say where it goes. */
            for (size_t c = 0; c < N_COMMANDS && arg[1] == '-'; c++)
                if (find_flag(commands[c]->flags, name, len) >= 0)
                    return cli_usage_error(NULL, "option '%.*s' belongs after '%s'", (int)(len + 2),
                                           arg, commands[c]->name);
            return cli_usage_error(NULL, "unknown option '%s'", arg);
        }
        const char *value = "";
        if (flags[index].metavar != NULL) {
            if (eq != NULL)
                value = eq + 1;
            else if (i + 1 < argc)
                value = argv[++i];
            else
                return cli_usage_error(ctx->command, "option '--%s' needs a value (%s)",
                                       flags[index].name, flags[index].metavar);
        } else if (eq != NULL) {
            return cli_usage_error(ctx->command, "option '--%s' takes no value", flags[index].name);
        }
        if (flags[index].metavar != NULL && value[0] == '\0')
            return cli_usage_error(ctx->command, "option '--%s' needs a non-empty value (%s)",
                                   flags[index].name, flags[index].metavar);
        if (flags != global_flags)
            ctx->flag_values[index] = value;
        else if (index == OPT_MANIFEST)
            ctx->manifest = value;
        else if (index == OPT_DEVICE)
            ctx->device = value;
        else if (index == OPT_PLUGIN_DIR && ctx->n_plugin_dirs < CLI_MAX_PLUGIN_DIRS)
            ctx->plugin_dirs[ctx->n_plugin_dirs++] = value;
        else if (index == OPT_PLUGIN_DIR)
            return cli_usage_error(NULL, "more than %d --plugin-dir options", CLI_MAX_PLUGIN_DIRS);
        else if (index == OPT_JSON)
            ctx->json = 1;
        else if (index == OPT_HELP)
            *help = 1;
        else
            *version = 1;
    }
    return -1;
}

static int run(int argc, char **argv, cli_ctx *ctx)
{
    int help = 0, version = 0;
    int rc = parse(argc, argv, ctx, &help, &version);
    if (rc >= 0)
        return rc;
    const cli_command *c = ctx->command;
    /* "help --help" falls through to the help command, which reads its operand. */
    if (help && c != &cmd_help) {
        if (c != NULL)
            print_command_help(stdout, c);
        else
            print_help(stdout);
        return CLI_EXIT_OK;
    }
    if (version) {
        /* The library may be newer than the headers this tool was built with. */
        if (strcmp(kp_version(), KP_VERSION_STRING) != 0)
            printf("kernelport %s (library %s)\n", KP_VERSION_STRING, kp_version());
        else
            printf("kernelport %s\n", KP_VERSION_STRING);
        return CLI_EXIT_OK;
    }
    if (c == NULL) {
        print_help(stderr);
        return CLI_EXIT_USAGE;
    }
    if (ctx->argc < c->min_args)
        return cli_usage_error(c, "missing %.*s", (int)strcspn(c->usage, " "), c->usage);
    if (ctx->argc > c->max_args)
        return cli_usage_error(c, "unexpected argument '%s'", ctx->argv[c->max_args]);
    return c->run(ctx);
}

int cli_main(int argc, char **argv, kp_runtime *runtime)
{
    cli_ctx ctx = {0};
    ctx.runtime = runtime;
    /* Operands are at most every argument; a copy keeps argv itself untouched. */
    ctx.argv = cli_realloc(NULL, (size_t)(argc > 0 ? argc : 1) * sizeof *ctx.argv);
    int rc = run(argc, argv, &ctx);
    free(ctx.argv);
    /* Output that never arrived (a full disk, a closed pipe) must not look like success. */
    int flush_failed = fflush(stdout) != 0;
    int error = errno;
    if (flush_failed || ferror(stdout)) {
        if (flush_failed)
            cli_error("writing the output failed: %s", strerror(error));
        else
            cli_error("writing the output failed");
        if (rc == CLI_EXIT_OK)
            rc = CLI_EXIT_FAILED;
    }
    return rc;
}
