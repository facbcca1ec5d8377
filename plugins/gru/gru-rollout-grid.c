/* SPDX-License-Identifier: Apache-2.0 */
/* gru.rollout_grid: the ensemble rollout with several work-groups per trajectory exchanging
 * h_t and the logits through global memory (gru_rollout_grid in kernels/gru-rollout.cl); and
 * gru.rollout's route to it. */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "gru-kernels.h"
#include "gru-rollout.h"

enum { TUNE_WG, TUNE_LANES, TUNE_GROUPS, TUNE_CACHE, TUNE_SHFL, TUNE_COUNT };
static const int64_t workgroups[] = {64, 128, 256, 512, 1024};
static const int64_t lanes[] = {1, 2, 4, 8, 16, 32};
static const int64_t groups[] = {0, 1, 2, 4, 8, 12, 16, 20, 24, 26, 32, 48, 64};
static const int64_t switches[] = {0, 1};
static const kp_tunable_desc tunables[] = {
    [TUNE_WG] = {.name = "WG",
                 .default_value = 256,
                 .allowed = workgroups,
                 .n_allowed = sizeof workgroups / sizeof workgroups[0],
                 .flags = KP_TUNABLE_WORKGROUP,
                 .doc = "work-items per work-group"},
    [TUNE_LANES] = {.name = "LANES",
                    .default_value = 8,
                    .allowed = lanes,
                    .n_allowed = sizeof lanes / sizeof lanes[0],
                    .doc = "work-items that share one weight row in a dot-product pass"},
    [TUNE_GROUPS] = {.name = "GROUPS",
                     .default_value = 0,
                     .allowed = groups,
                     .n_allowed = sizeof groups / sizeof groups[0],
                     .flags = KP_TUNABLE_NO_DEFINE,
                     .doc = "work-groups per trajectory, at most compute units / (E B) and H; 0: "
                            "that most. Not resolved per device: the cap depends on the call's "
                            "E B and H, so enqueue decides it for each call"},
    [TUNE_CACHE] = {.name = "CACHE",
                    .default_value = 1,
                    .allowed = switches,
                    .n_allowed = 2,
                    .flags = KP_TUNABLE_NO_DEFINE,
                    .doc =
                        "1: each work-group keeps its rows of w_hh, then of w_p, in local memory "
                        "where they fit"},
    [TUNE_SHFL] = {.name = "SHFL",
                   .default_value = 1,
                   .allowed = switches,
                   .n_allowed = 2,
                   .flags = KP_TUNABLE_NO_DEFINE,
                   .doc =
                       "1: on NVIDIA with the weights cached, warp shuffles (inline PTX) instead "
                       "of local-memory trees for the softmax; resolved to 0 on other devices "
                       "(whether the call's weights are cached is decided per call)"},
};

/* Every work-group of a launch must be resident at once, since readers wait on writers: E B G
 * work-groups within the device's compute units, one each (a work-group that fits a unit at all
 * fits one alone). More than H groups would own no hidden unit. */
static int64_t most_groups(const kp_device_info *dev, const ro_dims *d)
{
    int64_t units = dev && dev->compute_units ? dev->compute_units : 1;
    int64_t most = units / (d->E * d->B);
    most = most < d->H ? most : d->H;
    return most > 1 ? most : 1;
}

/* The groups a launch uses: the most that fit, or fewer where GROUPS asks (l is a
 * gru.rollout_grid launch: GROUPS is its tunable). */
static int64_t groups_of(kp_launch *l, const ro_dims *d)
{
    int64_t most = most_groups(gru_host->device(l), d);
    int64_t want = gru_host->tunable_index(l, TUNE_GROUPS);
    int64_t g = want && want < most ? want : most;
    /* Groups own ceil(H / g) units each; fewer groups own the same shares with none left
     * empty (H 33 over 22 groups is 17 groups of 2). */
    int64_t per = (d->H + g - 1) / g;
    return (d->H + per - 1) / per;
}

/* 64-bit words each trajectory publishes (h_t twice, r (.) h, the logits, the partial sums
 * twice, two announcements a group), each a value and its step. */
static int64_t state_words(const ro_dims *d, int64_t g)
{
    return 3 * d->H + d->S + 6 * g;
}

/* The kernel's own __local scalars: the drawn category and the mean state's loss term. */
#define STATIC_LOCAL_BYTES (sizeof(int) + sizeof(float))

/* Bytes of local memory a work-group uses: the buffer the kernel carves (h, r (.) h, f or
 * [y; z], the logits, three 3 UH arrays of the owned rows, the groups' 2 G partial sums, four WG
 * reduction buffers (two with the shuffles), then with `cache` bit 1 the owned rows of w_hh (3 UH
 * of them) and with bit 2 those of w_p (US), at the kernel's row stride HP: H padded to LANES
 * more than a multiple of 32) and its own scalars. */
static uint64_t local_bytes(kp_launch *l, const ro_dims *d, int64_t g, int64_t wg, int cache,
                            int shfl)
{
    int64_t uh = (d->H + g - 1) / g, us = (d->S + g - 1) / g;
    int64_t vin = d->F > 1 + d->S ? d->F : 1 + d->S;
    int64_t nl = gru_host->tunable_index(l, TUNE_LANES);
    int64_t hp = d->H + (nl % 32 - d->H % 32 + 32) % 32;
    int64_t floats = 2 * d->H + vin + d->S + 9 * uh + 2 * g + (shfl ? 2 : 4) * wg;
    floats += (cache & 1 ? 3 * uh * hp : 0) + (cache & 2 ? us * hp : 0);
    return (uint64_t)floats * sizeof(float) + STATIC_LOCAL_BYTES;
}

/* Whether the kernel can run the softmax on warp shuffles: NVIDIA's own driver takes inline
 * PTX, so the resolve hook keeps SHFL 1 only there. It does so only with weights cached: on the
 * H200 the shuffle build ran the H 1024 rollout, whose weights stay in global memory, in 7240 us
 * against 3019 us without (at the seed size, cached: 333 us against 365 us). Why the global-weight
 * path slows down was not found. */
static int shuffle_device(kp_launch *l)
{
    return gru_host->tunable_index(l, TUNE_SHFL) != 0;
}

/* SHFL 1 where the device is not NVIDIA's driver compiling PTX (sm_*): 0, the local-memory
 * trees, which is what such a device ran before SHFL was resolved here too. GROUPS 0 and CACHE 1
 * stay: each depends on the call (E B and H; what fits next to the call's vectors). */
static const char *resolve(kp_launch *l, uint32_t index, int64_t value, int64_t *resolved)
{
    if (index != TUNE_SHFL || value == 0)
        return NULL;
    const kp_device_info *d = gru_host->device(l);
    if (d && d->vendor == KP_VENDOR_NVIDIA && strncmp(d->arch, "sm_", 3) == 0)
        return NULL;
    *resolved = 0;
    return "warp shuffles are inline PTX, which only NVIDIA's driver takes";
}

/* The weight rows that fit in local memory next to the rest, when CACHE asks for them: bit 1
 * w_hh's, then bit 2 w_p's. Where the shuffles will run (some rows cached), two reduction
 * buffers fewer leave room: at the seed size w_p's rows fit only then. */
static int cache_of(kp_launch *l, const ro_dims *d, int64_t g, int64_t wg)
{
    const kp_device_info *dev = gru_host->device(l);
    if (!gru_host->tunable_index(l, TUNE_CACHE) || !dev || !dev->local_mem)
        return 0;
    int cache = 0, shfl = shuffle_device(l);
    if (local_bytes(l, d, g, wg, 1, shfl) <= dev->local_mem)
        cache = 1;
    if (local_bytes(l, d, g, wg, cache | 2, shfl) <= dev->local_mem)
        cache |= 2;
    return cache;
}

static kp_status check(const kp_call *call, kp_launch *l)
{
    kp_status st = gru_rollout_check_shapes(call, l);
    if (st != KP_OK)
        return st;
    ro_dims d;
    gru_rollout_dims(call, &d);
    int64_t g = groups_of(l, &d), wg = gru_host->tunable_index(l, TUNE_WG);
    if ((double)d.E * (double)d.B * (double)state_words(&d, g) > INT_MAX)
        return gru_host->fail(l, KP_ERR_UNSUPPORTED,
                              "E * B * (3H + S + 6G) words of state exceed what int indexing "
                              "reaches");
    const kp_device_info *dev = gru_host->device(l);
    if (dev && dev->type != KP_DEVICE_HOST && dev->local_mem > 0 &&
        local_bytes(l, &d, g, wg, 0, 0) > dev->local_mem)
        return gru_host->fail(l, KP_ERR_UNSUPPORTED,
                              "H = %lld, S = %lld, F = %lld need %.1f KiB of local memory per "
                              "work-group with WG = %lld and %lld groups per trajectory, but %s "
                              "has %.1f KiB; set a smaller WG",
                              (long long)d.H, (long long)d.S, (long long)d.F,
                              (double)local_bytes(l, &d, g, wg, 0, 0) / 1024, (long long)wg,
                              (long long)g, dev->name, (double)dev->local_mem / 1024);
    return KP_OK;
}

/* Whether the kernel uses warp shuffles for the softmax (shuffle_device, with weights cached). */
static int shuffles(kp_launch *l, int cache)
{
    return cache && shuffle_device(l);
}

/* The build options that pick how the kernel's exchanged words are accessed (RO_SYNC in
 * gru-rollout.cl), with RO_PTX when the softmax runs on shuffles: 1 on NVIDIA's driver for
 * sm_70 and later, whose PTX has relaxed loads and stores of GPU scope; 2 where the device
 * compiles OpenCL C 2.0 or later, asked for with -cl-std; 0, OpenCL 1.2's atomics, elsewhere. */
static void sync_options(kp_launch *l, int shfl, char *out, size_t size)
{
    const kp_device_info *d = gru_host->device(l);
    int sync = 0, major = 0, minor = 0, sm = 0;
    char std[32] = "";
    if (d && d->vendor == KP_VENDOR_NVIDIA && sscanf(d->arch, "sm_%d", &sm) == 1 && sm >= 70)
        sync = 1;
    else if (d && sscanf(d->c_version, "OpenCL C %d.%d", &major, &minor) == 2 && major >= 2) {
        sync = 2;
        snprintf(std, sizeof std, " -cl-std=CL%d.%d", major, minor);
    }
    snprintf(out, size, "-D RO_SYNC=%d%s%s", sync, std, shfl ? " -D RO_PTX=1" : "");
}

static kp_status enqueue(const kp_call *call, kp_launch *l)
{
    ro_dims d;
    gru_rollout_dims(call, &d);
    const int32_t g = (int32_t)groups_of(l, &d);
    const int32_t n_traj = (int32_t)(d.E * d.B), n_state = (int32_t)(n_traj * state_words(&d, g));
    size_t wg = (size_t)gru_host->tunable_index(l, TUNE_WG);
    const int32_t cache = cache_of(l, &d, g, (int64_t)wg);
    const int shfl = shuffles(l, cache);
    size_t global = (size_t)(d.E * d.B * g) * wg;
    size_t reset_local = 64, reset_global = ((size_t)n_state + 63) / 64 * 64;
    kp_buffer *state = NULL, *gave_up = NULL;
    kp_status st = gru_host->scratch(l, 0, (size_t)n_state * sizeof(uint64_t), &state);
    if (st == KP_OK)
        st = gru_host->scratch(l, 1, (size_t)n_traj * sizeof(uint32_t), &gave_up);
    if (st != KP_OK)
        return st;
    /* Published words must not carry a step number from an earlier launch, nor the trajectories
     * a gave-up mark: a kernel of their own clears them first. */
    char options[96];
    sync_options(l, shfl, options, sizeof options);
    kp_clargs reset = kp_clargs_begin(gru_host, l, "gru_rollout_grid_reset", options);
    kp_clargs_buffer(&reset, state);
    kp_clargs_int(&reset, n_state);
    kp_clargs_buffer(&reset, gave_up);
    kp_clargs_int(&reset, n_traj);
    st = kp_clargs_enqueue(&reset, 1, &reset_global, &reset_local);
    if (st != KP_OK)
        return st;
    kp_clargs a = kp_clargs_begin(gru_host, l, "gru_rollout_grid", options);
    gru_rollout_args(&a, call);
    kp_clargs_int(&a, g);
    kp_clargs_int(&a, cache);
    kp_clargs_buffer(&a, state);
    kp_clargs_buffer(&a, gave_up);
    kp_clargs_local(&a,
                    (size_t)local_bytes(l, &d, g, (int64_t)wg, cache, shfl) - STATIC_LOCAL_BYTES);
    return kp_clargs_enqueue(&a, 1, &global, &wg);
}

static kp_status describe(kp_launch *l, char *out, size_t size)
{
    const kp_device_info *d = gru_host->device(l);
    if (d && d->type == KP_DEVICE_HOST) {
        snprintf(out, size, "the host reference in plain C (double)");
        return KP_OK;
    }
    if (!gru_rollout_grid_runs_on(d)) {
        snprintf(out, size,
                 "none: it does not run on CPUs (gru.rollout with GRID 0 is the CPU "
                 "kernel)");
        return KP_OK;
    }
    int64_t want = gru_host->tunable_index(l, TUNE_GROUPS);
    unsigned units = d ? d->compute_units : 0;
    char what[160];
    if (want)
        snprintf(what, sizeof what,
                 "%lld work-groups per trajectory, fewer where E B of them would exceed the "
                 "device's %u compute units or H",
                 (long long)want, units);
    else
        snprintf(what, sizeof what,
                 "as many work-groups per trajectory as the device's %u compute units hold for "
                 "E B trajectories (at most H)",
                 units);
    snprintf(out, size, "%s; WG %lld, LANES %lld; 1 to 3 exchanges through global memory a step",
             what, (long long)gru_host->tunable_index(l, TUNE_WG),
             (long long)gru_host->tunable_index(l, TUNE_LANES));
    return KP_OK;
}

int gru_rollout_grid_spreads(const kp_call *call, kp_launch *l)
{
    ro_dims d;
    gru_rollout_dims(call, &d);
    const kp_device_info *dev = gru_host->device(l);
    return gru_rollout_grid_runs_on(dev) && most_groups(dev, &d) >= 2;
}

int gru_rollout_grid_runs_on(const kp_device_info *d)
{
    return !d || d->type != KP_DEVICE_CPU;
}

static kp_status supported(kp_launch *l)
{
    const kp_device_info *d = gru_host->device(l);
    if (gru_rollout_grid_runs_on(d))
        return KP_OK;
    return gru_host->fail(l, KP_ERR_UNSUPPORTED,
                          "gru.rollout_grid is for GPUs, and %s is a CPU: its work-groups take "
                          "turns on a few threads, so one would wait on values from work-groups "
                          "not yet started (and PoCL's compiler takes minutes over the kernel's "
                          "loops of barriers); gru.rollout with GRID 0 is the CPU kernel",
                          d->name);
}

kp_status gru_rollout_through_grid(const kp_call *call, kp_launch *l)
{
    kp_arg args[RO_NPARAMS];
    size_t n = 0;
    for (int i = 0; i < RO_NPARAMS; i++) {
        const kp_value *v = &call->args[i];
        if (!v->present)
            continue;
        const char *name = gru_rollout_params[i].name;
        args[n++] = gru_rollout_params[i].kind == KP_ARG_KIND_TENSOR
                        ? kp_arg_tensor(name, v->tensor)
                        : kp_arg_int(name, v->i);
    }
    return gru_host->launch(l, "gru.rollout_grid", args, n);
}

const kp_kernel_desc gru_rollout_grid_desc = {
    .struct_size = sizeof(kp_kernel_desc),
    .name = "gru.rollout_grid",
    .summary = "gru.rollout with several work-groups per trajectory (GPUs: latency at small E B)",
    .params = gru_rollout_params,
    .n_params = RO_NPARAMS,
    .tunables = tunables,
    .n_tunables = TUNE_COUNT,
    .source = kp_kernel_gru_rollout_cl,
    .source_name = "gru-rollout.cl",
    .entry = "gru_rollout_grid",
    .build_options = "-D RO_GRID=1", /* picks the grid half of gru-rollout.cl */
    .check = check,
    .enqueue = enqueue,
    .reference = gru_rollout_reference,
    .sample = gru_rollout_sample,
    .cost = gru_rollout_cost,
    .verify_sizes = gru_rollout_verify_sizes,
    .bench_sizes = gru_rollout_bench_sizes,
    .tolerance = gru_rollout_tolerance,
    .describe = describe,
    .supported = supported,
    .resolve = resolve,
};
