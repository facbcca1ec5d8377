/* SPDX-License-Identifier: Apache-2.0 */
/* CLBlast's tuning parameters as tunables: names, allowed values, and the constraints they obey. */
#include <stdio.h>
#include <string.h>

#include "blas.h"

/*
 * The allowed values of each parameter are CLBlast 1.5.3's own tuner search space (the union of
 * its variations, src/tuning/kernels/<kernel>.hpp and src/tuning/routines/routine_tuner.hpp), so
 * the manifest cannot pass values CLBlast never tried and `kernelport tune` searches what CLBlast's
 * tuner would. Each list starts with the value that means "CLBlast's own value": 0, or -1 for
 * the parameters where 0 is itself a CLBlast value (SA = 0: no local memory for A).
 */
#define LIST(...) ((const int64_t[]){__VA_ARGS__})
#define COUNT(...) ((uint32_t)(sizeof LIST(__VA_ARGS__) / sizeof(int64_t)))
#define TUNABLE_AS(prefix, own, kernel, param, ...)                                                \
    {                                                                                              \
        .name = prefix "." kernel "." param, .default_value = 0, .allowed = LIST(0, __VA_ARGS__),  \
        .n_allowed = COUNT(0, __VA_ARGS__), .flags = KP_TUNABLE_NO_DEFINE,                         \
        .doc = "CLBlast " kernel " parameter " param "; 0 keeps " own,                             \
    }
#define SWITCH_AS(prefix, own, kernel, param)                                                      \
    {                                                                                              \
        .name = prefix "." kernel "." param, .default_value = -1, .allowed = LIST(-1, 0, 1),       \
        .n_allowed = 3, .flags = KP_TUNABLE_NO_DEFINE,                                             \
        .doc = "CLBlast " kernel " parameter " param " (0 or 1); -1 keeps " own,                   \
    }
#define TUNABLE(kernel, ...) TUNABLE_AS("clblast", "CLBlast's own value", kernel, __VA_ARGS__)
#define SWITCH(kernel, param) SWITCH_AS("clblast", "CLBlast's own value", kernel, param)
/* The narrow set: each value unset falls back to clblast.Xgemm's (blas-clblast.c). */
#define NARROW(...) TUNABLE_AS("narrow", "clblast.Xgemm's value", "Xgemm", __VA_ARGS__)
#define NARROW_SWITCH(param) SWITCH_AS("narrow", "clblast.Xgemm's value", "Xgemm", param)
#define DIMS 2, 4, 8, 16, 32
#define MIN_INDIRECT                                                                               \
    64, 128, 192, 256, 320, 384, 448, 512, 576, 640, 704, 768, 832, 896, 960, 1024, 1088, 1152,    \
        1216, 1280, 1344, 1408, 1472, 1536, 1600, 1664, 1728, 1792, 1856, 1920, 1984, 2048

/* Xgemm's parameters, for its two sets (clblast.Xgemm.* and narrow.Xgemm.*): T(param, values)
 * or S(param) for a 0/1 switch. */
#define XGEMM_TUNABLES(T, S)                                                                       \
    S("GEMMK"), T("KREG", 1, 2, 4, 8, 16), T("KWG", 1, 16, 32), T("KWI", 1, 2), T("MDIMA", DIMS),  \
        T("MDIMC", DIMS), T("MWG", 8, 16, 32, 64, 128), T("NDIMB", DIMS), T("NDIMC", DIMS),        \
        T("NWG", 8, 16, 32, 64, 128), S("SA"), S("SB"), S("STRM"), S("STRN"),                      \
        T("VWM", 1, 2, 4, 8), T("VWN", 1, 2, 4, 8)
#define XGEMM_NAME(param, ...) param
#define XGEMM(...) TUNABLE("Xgemm", __VA_ARGS__)
#define XGEMM_SWITCH(param) SWITCH("Xgemm", param)

/* The order within each kernel is CLBlast's (alphabetical) order of its database entries;
 * blas_gemm_clkernels below names the same parameters in the same order (init checks it). */
const kp_tunable_desc blas_gemm_tunables[BLAS_N_GEMM_ALL_TUNABLES] = {
    XGEMM_TUNABLES(XGEMM, XGEMM_SWITCH),
    TUNABLE("XgemmDirect", "KWID", 2, 8, 16),
    TUNABLE("XgemmDirect", "MDIMAD", 8, 16, 32),
    TUNABLE("XgemmDirect", "MDIMCD", 8, 16, 32),
    TUNABLE("XgemmDirect", "NDIMBD", 8, 16, 32),
    TUNABLE("XgemmDirect", "NDIMCD", 8, 16, 32),
    SWITCH("XgemmDirect", "PADA"),
    SWITCH("XgemmDirect", "PADB"),
    TUNABLE("XgemmDirect", "VWMD", 1, 2, 4, 8),
    TUNABLE("XgemmDirect", "VWND", 1, 2, 4, 8),
    TUNABLE("XgemmDirect", "WGD", 8, 16, 32, 64),
    TUNABLE("Copy", "COPY_DIMX", 8, 16, 32),
    TUNABLE("Copy", "COPY_DIMY", 8, 16, 32),
    TUNABLE("Copy", "COPY_VW", 1, 2, 4, 8),
    TUNABLE("Copy", "COPY_WPT", 1, 2, 4, 8),
    TUNABLE("Pad", "PAD_DIMX", 8, 16, 32),
    TUNABLE("Pad", "PAD_DIMY", 8, 16, 32),
    TUNABLE("Pad", "PAD_WPTX", 1, 2, 4),
    TUNABLE("Pad", "PAD_WPTY", 1, 2, 4),
    TUNABLE("Transpose", "TRA_DIM", 4, 8, 16, 32, 64),
    SWITCH("Transpose", "TRA_PAD"),
    SWITCH("Transpose", "TRA_SHUFFLE"),
    TUNABLE("Transpose", "TRA_WPT", 1, 2, 4, 8, 16),
    SWITCH("Padtranspose", "PADTRA_PAD"),
    TUNABLE("Padtranspose", "PADTRA_TILE", 8, 16, 32, 64),
    TUNABLE("Padtranspose", "PADTRA_WPT", 1, 2, 4, 8, 16),
    TUNABLE("GemmRoutine", "XGEMM_MIN_INDIRECT_SIZE", MIN_INDIRECT),
    /* CLBlast takes one Xgemm set per device; tiles that fill the GPU for a square product
     * leave most of it idle when C has a short side (a GRU step's batch, a convolution's
     * output channels). The plugin switches sets per call; CLBlast keeps a compiled program per
     * set, so a switch back costs no compile. */
    XGEMM_TUNABLES(NARROW, NARROW_SWITCH),
    {
        .name = "narrow.max_dim",
        .default_value = 0,
        .allowed = LIST(0, 16, 32, 64, 128, 256, 512, 1024),
        .n_allowed = 8,
        .flags = KP_TUNABLE_NO_DEFINE | KP_TUNABLE_NO_SEARCH,
        .doc = "a product on CLBlast's indirect path whose C has at most this many rows or "
               "columns runs with the narrow.Xgemm set; 0: never",
    },
    {
        .name = "route",
        .default_value = BLAS_ROUTE_AUTO,
        .min = 0,
        .max = 3,
        .choices = blas_routes,
        .flags = KP_TUNABLE_NO_DEFINE | KP_TUNABLE_NO_SEARCH,
        .doc = "auto (host-blas on CPU devices when OpenBLAS was found at build time, else "
               "clblast), clblast, host-blas (OpenBLAS on the buffers' host memory as a native "
               "kernel in the queue, a batch as one command; f32 only) or host-blas-mapped "
               "(the same between blocking maps, for devices without native kernels)",
    },
    /* blas.gemm only (blas.gemm_batched lists the ones above): blas-route.c. */
    {
        .name = "precision",
        .default_value = 0,
        .min = 0,
        .max = 4,
        .choices = blas_precisions,
        .flags = KP_TUNABLE_NO_DEFINE | KP_TUNABLE_NO_SEARCH,
        .doc = "fp32 (CLBlast, exact FP32), or tf32, tf32x3, f16, bf16: f32 GEMMs run through "
               "tc.gemm on tensor cores (NVIDIA sm_80+), and in fp32 with a warning elsewhere",
    },
};

const char *const blas_precisions[] = {"fp32", "tf32", "tf32x3", "f16", "bf16", NULL};

const kp_tunable_desc blas_gemv_tunables[BLAS_N_GEMV_ALL_TUNABLES] = {
    TUNABLE("Xgemv", "WGS1", 32, 64, 128, 256),
    TUNABLE("Xgemv", "WPT1", 1, 2, 4),
    TUNABLE("XgemvFast", "VW2", 1, 2, 4, 8),
    TUNABLE("XgemvFast", "WGS2", 16, 32, 64, 128, 256),
    TUNABLE("XgemvFast", "WPT2", 1, 2, 4),
    TUNABLE("XgemvFastRot", "VW3", 1, 2, 4, 8),
    TUNABLE("XgemvFastRot", "WGS3", 16, 32, 64, 128),
    TUNABLE("XgemvFastRot", "WPT3", 1, 2, 4, 8, 16, 32),
    {
        .name = "route",
        .default_value = BLAS_ROUTE_AUTO,
        .min = 0,
        .max = 3,
        .choices = blas_routes,
        .flags = KP_TUNABLE_NO_DEFINE | KP_TUNABLE_NO_SEARCH,
        .doc = "auto (host-blas on CPU devices when OpenBLAS was found at build time, else "
               "clblast), clblast, host-blas (OpenBLAS on the buffers' host memory as a native "
               "kernel in the queue; f32 only) or host-blas-mapped (the same between blocking "
               "maps, for devices without native kernels)",
    },
};

#define NAMES(...) ((const char *const[]){__VA_ARGS__})
#define KERNEL(kname, table, first, ...)                                                           \
    {                                                                                              \
        .name = kname, .params = NAMES(__VA_ARGS__), .tunables = table,                            \
        .n_params = (uint32_t)(sizeof NAMES(__VA_ARGS__) / sizeof(const char *)),                  \
        .first_tunable = first, .prefix = "clblast",                                               \
    }

#define GEMM blas_gemm_tunables
#define GEMV blas_gemv_tunables
const blas_clkernel blas_gemm_clkernels[] = {
    KERNEL("Xgemm", GEMM, 0, XGEMM_TUNABLES(XGEMM_NAME, XGEMM_NAME)),
    KERNEL("XgemmDirect", GEMM, 16, "KWID", "MDIMAD", "MDIMCD", "NDIMBD", "NDIMCD", "PADA", "PADB",
           "VWMD", "VWND", "WGD"),
    KERNEL("Copy", GEMM, 26, "COPY_DIMX", "COPY_DIMY", "COPY_VW", "COPY_WPT"),
    KERNEL("Pad", GEMM, 30, "PAD_DIMX", "PAD_DIMY", "PAD_WPTX", "PAD_WPTY"),
    KERNEL("Transpose", GEMM, 34, "TRA_DIM", "TRA_PAD", "TRA_SHUFFLE", "TRA_WPT"),
    KERNEL("Padtranspose", GEMM, 38, "PADTRA_PAD", "PADTRA_TILE", "PADTRA_WPT"),
    KERNEL("GemmRoutine", GEMM, 41, "XGEMM_MIN_INDIRECT_SIZE"),
};
const uint32_t blas_n_gemm_clkernels = sizeof blas_gemm_clkernels / sizeof blas_gemm_clkernels[0];
const blas_clkernel blas_narrow_xgemm = {
    .name = "Xgemm",
    .params = NAMES(XGEMM_TUNABLES(XGEMM_NAME, XGEMM_NAME)),
    .tunables = GEMM,
    .n_params = (uint32_t)(sizeof NAMES(XGEMM_TUNABLES(XGEMM_NAME, XGEMM_NAME)) / sizeof(char *)),
    .first_tunable = BLAS_NARROW_FIRST,
    .prefix = "narrow",
};

const blas_clkernel blas_gemv_clkernels[] = {
    KERNEL("Xgemv", GEMV, 0, "WGS1", "WPT1"),
    KERNEL("XgemvFast", GEMV, 2, "VW2", "WGS2", "WPT2"),
    KERNEL("XgemvFastRot", GEMV, 5, "VW3", "WGS3", "WPT3"),
};
const uint32_t blas_n_gemv_clkernels = sizeof blas_gemv_clkernels / sizeof blas_gemv_clkernels[0];

/* ---- constraints ------------------------------------------------------------------------- */

/*
 * CLBlast's constraints, read from its tuner (SetConstraints and ComputeLocalMemSize of each
 * src/tuning/kernels/<kernel>.hpp) and its kernels' launch shapes. The tuner adds some constraints
 * only "to limit the set of options" (MDIMC == MDIMA for GEMMK 1, ...); those are not requirements
 * of the kernels and are left out. `when` limits a rule to GEMMK's value (-1: always).
 */
typedef enum rule_kind {
    MULTIPLE,     /* a % (b * c) == 0 (c may be NULL) */
    MULTIPLE_DIV, /* b * c must split into d (KDIMA = (MDIMC*NDIMC)/MDIMA) and a % that == 0 */
    AT_LEAST,     /* a >= b */
    IS_ONE,       /* a == 1 (a parameter the kernel variant does not take) */
    NOT_BOTH,     /* a and b are not both 1 */
    WORKGROUP,    /* a * b work-items (b may be NULL) fit the device */
} rule_kind;

typedef struct rule {
    const char *kernel;
    rule_kind kind;
    const char *a, *b, *c, *d;
    int64_t when_gemmk;
} rule;

static const rule rules[] = {
    {"Xgemm", MULTIPLE, "KWG", "KWI", NULL, NULL, -1},
    {"Xgemm", MULTIPLE, "MWG", "MDIMC", "VWM", NULL, -1},
    {"Xgemm", MULTIPLE, "NWG", "NDIMC", "VWN", NULL, -1},
    {"Xgemm", MULTIPLE, "MWG", "MDIMA", "VWM", NULL, -1},
    {"Xgemm", MULTIPLE, "NWG", "NDIMB", "VWN", NULL, -1},
    {"Xgemm", MULTIPLE_DIV, "KWG", "MDIMC", "NDIMC", "MDIMA", 0},
    {"Xgemm", MULTIPLE_DIV, "KWG", "MDIMC", "NDIMC", "NDIMB", 0},
    {"Xgemm", MULTIPLE, "KREG", "VWN", NULL, NULL, 1},
    /* CLBlast 1.5.3's GEMMK 1 kernel with both operands in local memory does not compile ("use
     * of undeclared identifier 'idk'"); on NVIDIA the failed build then broke the context. */
    {"Xgemm", NOT_BOTH, "SA", "SB", NULL, NULL, 1},
    /* The GEMMK 0 kernel has no register tiling in K; another KREG makes it fault on NVIDIA. */
    {"Xgemm", IS_ONE, "KREG", NULL, NULL, NULL, 0},
    {"Xgemm", WORKGROUP, "MDIMC", "NDIMC", NULL, NULL, -1},
    {"XgemmDirect", MULTIPLE, "WGD", "KWID", NULL, NULL, -1},
    {"XgemmDirect", MULTIPLE, "WGD", "MDIMCD", "VWMD", NULL, -1},
    {"XgemmDirect", MULTIPLE, "WGD", "NDIMCD", "VWND", NULL, -1},
    {"XgemmDirect", MULTIPLE, "WGD", "MDIMAD", "VWMD", NULL, -1},
    {"XgemmDirect", MULTIPLE, "WGD", "NDIMBD", "VWND", NULL, -1},
    {"XgemmDirect", MULTIPLE_DIV, "WGD", "MDIMCD", "NDIMCD", "MDIMAD", -1},
    {"XgemmDirect", MULTIPLE_DIV, "WGD", "MDIMCD", "NDIMCD", "NDIMBD", -1},
    {"XgemmDirect", WORKGROUP, "MDIMCD", "NDIMCD", NULL, NULL, -1},
    {"Copy", WORKGROUP, "COPY_DIMX", "COPY_DIMY", NULL, NULL, -1},
    {"Pad", WORKGROUP, "PAD_DIMX", "PAD_DIMY", NULL, NULL, -1},
    {"Transpose", WORKGROUP, "TRA_DIM", "TRA_DIM", NULL, NULL, -1},
    {"Padtranspose", WORKGROUP, "PADTRA_TILE", "PADTRA_TILE", NULL, NULL, -1},
    {"Xgemv", WORKGROUP, "WGS1", NULL, NULL, NULL, -1},
    {"XgemvFast", MULTIPLE, "WPT2", "VW2", NULL, NULL, -1},
    {"XgemvFast", WORKGROUP, "WGS2", NULL, NULL, NULL, -1},
    {"XgemvFastRot", MULTIPLE, "WPT3", "VW3", NULL, NULL, -1},
    {"XgemvFastRot", AT_LEAST, "WGS3", "WPT3", NULL, NULL, -1},
    {"XgemvFastRot", WORKGROUP, "WGS3", NULL, NULL, NULL, -1},
};

typedef struct set {
    const blas_clkernel *k;
    const size_t *v;
    uint32_t from_tuning;
} set;

static int index_of(const set *s, const char *name)
{
    for (uint32_t i = 0; name && i < s->k->n_params; i++)
        if (strcmp(s->k->params[i], name) == 0)
            return (int)i;
    return -1;
}

static size_t get(const set *s, const char *name)
{
    int i = index_of(s, name);
    return i < 0 ? 1 : s->v[i];
}

/* "(set by the manifest: MWG, MDIMC; CLBlast's own: VWM)" for the parameters a rule reads. */
static void origins(const set *s, const char *const *names, size_t n, char *out, size_t size)
{
    char mine[128] = "", theirs[128] = "";
    for (size_t i = 0; i < n; i++) {
        int p = index_of(s, names[i]);
        if (p < 0 || (i && strcmp(names[i], names[i - 1]) == 0))
            continue;
        char *dst = (s->from_tuning >> p) & 1 ? mine : theirs;
        size_t used = strlen(dst);
        snprintf(dst + used, 128 - used, "%s%s", used ? ", " : "", names[i]);
    }
    snprintf(out, size, " (%s%s%s%s%s)", *mine ? "set by the manifest: " : "", mine,
             *mine && *theirs ? "; " : "", *theirs ? "CLBlast's own: " : "", theirs);
}

static int check_rule(const set *s, const rule *r, const kp_device_info *dev, char *why,
                      size_t size)
{
    size_t a = get(s, r->a), b = r->b ? get(s, r->b) : 1, c = r->c ? get(s, r->c) : 1;
    const char *names[] = {r->a, r->b, r->c, r->d};
    char from[300];
    origins(s, names, r->d ? 4 : r->c ? 3 : r->b ? 2 : 1, from, sizeof from);
    switch (r->kind) {
    case MULTIPLE:
        if (b * c != 0 && a % (b * c) == 0)
            return 1;
        if (r->c)
            snprintf(why, size, "%s=%zu is not a multiple of %s*%s = %zu%s", r->a, a, r->b, r->c,
                     b * c, from);
        else
            snprintf(why, size, "%s=%zu is not a multiple of %s = %zu%s", r->a, a, r->b, b, from);
        return 0;
    case MULTIPLE_DIV: {
        size_t d = get(s, r->d), kdim = d ? (b * c) / d : 0;
        if (!d || (b * c) % d != 0 || kdim == 0) {
            snprintf(why, size, "%s*%s = %zu is not a multiple of %s = %zu%s", r->b, r->c, b * c,
                     r->d, d, from);
            return 0;
        }
        if (a % kdim == 0)
            return 1;
        snprintf(why, size, "%s=%zu is not a multiple of (%s*%s)/%s = %zu%s", r->a, a, r->b, r->c,
                 r->d, kdim, from);
        return 0;
    }
    case IS_ONE:
        if (a == 1)
            return 1;
        snprintf(why, size, "%s=%zu must be 1 with this kernel variant (GEMMK = 0)%s", r->a, a,
                 from);
        return 0;
    case NOT_BOTH:
        if (a != 1 || b != 1)
            return 1;
        snprintf(why, size,
                 "%s=1 with %s=1 does not compile in CLBlast 1.5.3's GEMMK = 1 kernel (its "
                 "source uses an undeclared 'idk')%s",
                 r->a, r->b, from);
        return 0;
    case AT_LEAST:
        if (a >= b)
            return 1;
        snprintf(why, size, "%s=%zu is smaller than %s = %zu%s", r->a, a, r->b, b, from);
        return 0;
    case WORKGROUP: {
        size_t max = dev && dev->max_workgroup ? dev->max_workgroup : (size_t)-1;
        size_t dim0 = dev && dev->max_work_item[0] ? dev->max_work_item[0] : (size_t)-1;
        size_t dim1 = dev && dev->max_work_item[1] ? dev->max_work_item[1] : (size_t)-1;
        if (a * b <= max && a <= dim0 && (!r->b || b <= dim1))
            return 1;
        if (r->b)
            snprintf(why, size,
                     "the workgroup %s x %s = %zu x %zu exceeds the device's limits (%zu "
                     "work-items, %zu x %zu)%s",
                     r->a, r->b, a, b, max, dim0, dim1, from);
        else
            snprintf(why, size,
                     "the workgroup %s = %zu exceeds the device's limit of %zu work-items%s", r->a,
                     a, max < dim0 ? max : dim0, from);
        return 0;
    }
    }
    return 1;
}

/* Local memory of one workgroup, from the tuner's ComputeLocalMemSize, in elements. */
static size_t local_elements(const set *s, const char **formula, const char *const **names,
                             size_t *n_names)
{
    const char *k = s->k->name;
    static const char *const xgemm[] = {"SA", "KWG", "MWG", "SB", "NWG"};
    static const char *const direct[] = {"WGD", "PADA", "PADB"};
    static const char *const tra[] = {"TRA_DIM", "TRA_WPT", "TRA_PAD"};
    static const char *const padtra[] = {"PADTRA_TILE", "PADTRA_WPT", "PADTRA_PAD"};
    static const char *const wgs1[] = {"WGS1"}, *const wgs2[] = {"WGS2"};
    static const char *const wgs3[] = {"WGS3", "WPT3"};
#define USE(list, text) (*formula = text, *names = list, *n_names = sizeof list / sizeof list[0])
    if (strcmp(k, "Xgemm") == 0) {
        USE(xgemm, "SA*KWG*MWG + SB*KWG*NWG");
        return get(s, "SA") * get(s, "KWG") * get(s, "MWG") +
               get(s, "SB") * get(s, "KWG") * get(s, "NWG");
    }
    if (strcmp(k, "XgemmDirect") == 0) {
        USE(direct, "WGD*(WGD+PADA) + WGD*(WGD+PADB)");
        size_t wgd = get(s, "WGD");
        return wgd * (wgd + get(s, "PADA")) + wgd * (wgd + get(s, "PADB"));
    }
    if (strcmp(k, "Transpose") == 0) {
        USE(tra, "TRA_WPT*(TRA_WPT*TRA_DIM)*(TRA_DIM+TRA_PAD)");
        size_t dim = get(s, "TRA_DIM"), wpt = get(s, "TRA_WPT");
        return wpt * (wpt * dim) * (dim + get(s, "TRA_PAD"));
    }
    if (strcmp(k, "Padtranspose") == 0) {
        USE(padtra, "(PADTRA_WPT*PADTRA_TILE)*(PADTRA_WPT*PADTRA_TILE+PADTRA_PAD)");
        size_t t = get(s, "PADTRA_WPT") * get(s, "PADTRA_TILE");
        return t * (t + get(s, "PADTRA_PAD"));
    }
    if (strcmp(k, "Xgemv") == 0) {
        USE(wgs1, "WGS1");
        return get(s, "WGS1");
    }
    if (strcmp(k, "XgemvFast") == 0) {
        USE(wgs2, "WGS2");
        return get(s, "WGS2");
    }
    if (strcmp(k, "XgemvFastRot") == 0) {
        USE(wgs3, "WGS3 + WPT3*WGS3");
        return get(s, "WGS3") + get(s, "WPT3") * get(s, "WGS3");
    }
#undef USE
    *n_names = 0;
    return 0;
}

int blas_params_valid(const blas_clkernel *k, const size_t *values, uint32_t from_tuning,
                      size_t elem_size, const kp_device_info *dev, char *why, size_t why_size)
{
    set s = {.k = k, .v = values, .from_tuning = from_tuning};
    size_t gemmk = index_of(&s, "GEMMK") >= 0 ? get(&s, "GEMMK") : 0;
    for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++) {
        const rule *r = &rules[i];
        if (strcmp(r->kernel, k->name) != 0 ||
            (r->when_gemmk >= 0 && (size_t)r->when_gemmk != gemmk))
            continue;
        if (!check_rule(&s, r, dev, why, why_size))
            return 0;
    }
    const char *formula = NULL;
    const char *const *names = NULL;
    size_t n_names = 0, elements = local_elements(&s, &formula, &names, &n_names);
    size_t bytes = elements * elem_size;
    if (dev && dev->local_mem && n_names && bytes > dev->local_mem) {
        char from[300];
        origins(&s, names, n_names, from, sizeof from);
        snprintf(why, why_size,
                 "local memory %s = %zu elements (%zu bytes) exceeds the device's %llu bytes%s",
                 formula, elements, bytes, (unsigned long long)dev->local_mem, from);
        return 0;
    }
    return 1;
}
