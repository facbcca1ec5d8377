/* SPDX-License-Identifier: Apache-2.0 */
/* bench-plugin-scan: what the plugin loader's out-of-process probe costs at start-up. Times
 * kp_runtime_create with 10 plugins (copies of the example plugin) with the probe's verdicts
 * warm, with none (every plugin probed in a child process), and with the probe turned off
 * (plugins.probe: false), plus a runtime without plugins. The runtimes are on the host device, so
 * that no OpenCL context is part of the time; each is destroyed outside the timing. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"

enum { PLUGINS = 10 };

typedef enum config { OFF, WARM, NONE, COLD, N_CONFIGS } config;

typedef struct setup {
    char root[64];      /* scratch directory */
    char plugins[128];  /* the 10 copies */
    char empty[128];    /* no plugins */
    char cache[128];    /* the verdicts' cache directory */
    char verdicts[192]; /* its plugin-verdicts.txt */
    char on[128];       /* manifest: plugins.probe: true (every configuration reads one) */
    char off[128];      /* manifest: plugins.probe: false */
} setup;

static void quiet(void *user, kp_log_level level, const char *message)
{
}

static int copy_file(const char *from, const char *to)
{
    FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
    char buf[65536];
    size_t n;
    int ok = in && out;
    while (ok && (n = fread(buf, 1, sizeof buf, in)) > 0)
        ok = fwrite(buf, 1, n, out) == n;
    if (in)
        fclose(in);
    if (out && fclose(out) != 0)
        ok = 0;
    return ok && chmod(to, 0755) == 0 ? 0 : -1;
}

/* The example plugin's file, from the runtime the harness opened (the installed plugins). */
static const char *example_path(kp_runtime *rt)
{
    for (size_t i = 0; i < kp_plugin_count(rt); i++) {
        kp_plugin_record r = {.struct_size = sizeof r};
        if (kp_plugin_get(rt, i, &r) == KP_OK && strcmp(r.name, "example") == 0)
            return r.path;
    }
    return NULL;
}

static int write_manifest(const char *path, const char *probe)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    int failed = fprintf(f, "kernelport: 1\nplugins: { probe: %s }\n", probe) < 0;
    return fclose(f) != 0 || failed ? -1 : 0;
}

static int prepare(setup *s, const char *example)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(s->root, sizeof s->root, "%.40s/kp-bench-scan-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(s->root))
        return -1;
    snprintf(s->plugins, sizeof s->plugins, "%s/plugins", s->root);
    snprintf(s->empty, sizeof s->empty, "%s/empty", s->root);
    snprintf(s->cache, sizeof s->cache, "%s/cache", s->root);
    snprintf(s->verdicts, sizeof s->verdicts, "%s/plugin-verdicts.txt", s->cache);
    snprintf(s->off, sizeof s->off, "%s/probe-off.yaml", s->root);
    if (mkdir(s->plugins, 0755) != 0 || mkdir(s->empty, 0755) != 0)
        return -1;
    for (int i = 0; i < PLUGINS; i++) {
        char to[192];
        snprintf(to, sizeof to, "%s/p%02d.so", s->plugins, i);
        if (copy_file(example, to) != 0)
            return -1;
    }
    snprintf(s->on, sizeof s->on, "%s/probe-on.yaml", s->root);
    return write_manifest(s->on, "true") || write_manifest(s->off, "false") ? -1 : 0;
}

static void cleanup(const setup *s)
{
    for (int i = 0; i < PLUGINS; i++) {
        char p[192];
        snprintf(p, sizeof p, "%s/p%02d.so", s->plugins, i);
        unlink(p);
    }
    unlink(s->verdicts);
    unlink(s->on);
    unlink(s->off);
    rmdir(s->cache);
    rmdir(s->plugins);
    rmdir(s->empty);
    rmdir(s->root);
}

/* Seconds kp_runtime_create took in configuration c, or a negative value on failure. */
static double create_once(const setup *s, config c, size_t *loaded)
{
    const char *dirs[] = {c == NONE ? s->empty : s->plugins};
    kp_runtime_options o = kp_runtime_options_default();
    o.flags = KP_RUNTIME_NO_ENV | KP_RUNTIME_NO_USER_MANIFESTS | KP_RUNTIME_NO_INSTALLED_PLUGINS;
    o.plugin_dirs = dirs;
    o.n_plugin_dirs = 1;
    o.device = "host";
    o.cache_dir = s->cache;
    o.manifest_path = c == OFF ? s->off : s->on;
    o.log = quiet;
    o.log_level = KP_LOG_ERROR;
    if (c == COLD && unlink(s->verdicts) != 0 && errno != ENOENT)
        return -1;
    kp_runtime *rt;
    double t0 = kpb_now();
    kp_status st = kp_runtime_create(&o, &rt);
    double t = kpb_now() - t0;
    if (st != KP_OK)
        return -1;
    *loaded = kp_plugin_count(rt);
    const char *want = c == WARM ? "cached" : c == COLD ? "probed" : "off";
    for (size_t i = 0; i < *loaded; i++)
        if (strcmp(kp_plugin_probe_result(rt, i), want) != 0)
            t = -1;
    kp_runtime_destroy(rt);
    return t;
}

/* Medians (and 10th/90th percentiles) over rounds in which the warm, off and no-plugin
 * configurations alternate, so that drift in the machine's load falls on all of them alike; the
 * cold one's rounds come after, since 10 child processes just before disturb the next runtime's
 * time (caches, the children's teardown). */
static int measure(const kpb *b, const setup *s, double med[], double p10[], double p90[])
{
    enum { MAX_ROUNDS = 60 };
    static double v[N_CONFIGS][MAX_ROUNDS];
    int rounds = b->quick ? 5 : MAX_ROUNDS;
    size_t loaded;
    if (create_once(s, COLD, &loaded) < 0 || loaded != PLUGINS) /* warm-up: writes the verdicts */
        return -1;
    for (int c0 = 0; c0 < N_CONFIGS; c0 += COLD)
        for (int r = 0; r < rounds; r++)
            for (int c = c0; c < (c0 ? N_CONFIGS : COLD); c++) {
                v[c][r] = create_once(s, (config)c, &loaded);
                if (v[c][r] < 0 || loaded != (c == NONE ? 0 : PLUGINS))
                    return -1;
            }
    for (int c = 0; c < N_CONFIGS; c++) {
        med[c] = kpb_median(v[c], (size_t)rounds); /* sorts */
        p10[c] = v[c][rounds / 10];
        p90[c] = v[c][rounds - 1 - rounds / 10];
    }
    return 0;
}

int main(int argc, char **argv)
{
    kpb b;
    kpb_open(&b, "bench-plugin-scan", argc, argv);
    b.no_peak = 1;
    const char *example = example_path(b.rt);
    setup s;
    if (!example || prepare(&s, example) != 0) {
        fprintf(stderr, "bench-plugin-scan: %s\n",
                example ? strerror(errno) : "the example plugin is not installed");
        return 1;
    }
    double med[N_CONFIGS], p10[N_CONFIGS], p90[N_CONFIGS];
    int failed = measure(&b, &s, med, p10, p90) != 0;
    cleanup(&s);
    if (failed) {
        fprintf(stderr, "bench-plugin-scan: a runtime failed or loaded other than expected: %s\n",
                kp_last_error(NULL));
        return 1;
    }
    static const config probed[] = {WARM, COLD};
    static const char *const names[] = {"warm verdicts", "no verdicts (10 probes)"};
    for (int i = 0; i < 2; i++) {
        config c = probed[i];
        kpb_row row = {.case_name = "10 plugins",
                       .ours = (char *)names[i],
                       .peer = "plugins.probe: false",
                       .ours_s = med[c],
                       .ours_p10 = p10[c],
                       .ours_p90 = p90[c],
                       .peer_s = med[OFF]};
        kpb_row_metric(&row, "probe_cost_s", med[c] - med[OFF]);
        kpb_add(&b, &row);
    }
    kpb_row none = {.case_name = "no plugins",
                    .ours = "kp_runtime_create",
                    .ours_s = med[NONE],
                    .ours_p10 = p10[NONE],
                    .ours_p90 = p90[NONE]};
    kpb_add(&b, &none);
    kpb_metric_add(&b, "warm_probe_cost_s", med[WARM] - med[OFF]);
    kpb_metric_add(&b, "warm_plugin_load_s", med[WARM] - med[NONE]);
    kpb_note(&b,
             "kp_runtime_create on the host device, medians of %d rounds; a warm start's probe "
             "costs %.3f ms over plugins.probe: false for %d plugins (target: under 5 ms); "
             "loading the %d plugins with warm verdicts costs %.3f ms over a runtime without "
             "plugins",
             b.quick ? 5 : 60, (med[WARM] - med[OFF]) * 1e3, PLUGINS, PLUGINS,
             (med[WARM] - med[NONE]) * 1e3);
    return kpb_close(&b);
}
