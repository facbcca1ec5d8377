/* SPDX-License-Identifier: Apache-2.0 */
/* tensor.fill, arange, uniform, normal, bernoulli: values that depend only on an element's
 * row-major index; the random ones are Philox4x32-10 counters, the same bits on every device. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "tensor-kernels.h"
#include "tensor.h"

/* One generator: its kind and the names, defaults and docs of its two scalars. */
typedef struct generator {
    const char *name, *summary;
    int kind;
    const char *a, *b;
    double a_default, b_default;
    const char *a_doc, *b_doc;
    int random;
} generator;

static const generator generators[] = {
    {"fill", "y = value (a kernel: faster than clEnqueueFillBuffer on NVIDIA)", TG_FILL, "value",
     NULL, 0, 0, "the value", NULL, 0},
    {"arange", "y = start + step i, i the row-major index", TG_ARANGE, "start", "step", 0, 1,
     "the first value", "the increment per element", 0},
    {"uniform", "y uniform in [low, high)", TG_UNIFORM, "low", "high", 0, 1, "the lower bound",
     "the upper bound (excluded)", 1},
    {"normal", "y normal with mean and std (Box-Muller)", TG_NORMAL, "mean", "std", 0, 1,
     "the mean", "the standard deviation", 1},
    {"bernoulli", "y = value with probability p, else 0 (dropout masks: value = 1 / p)",
     TG_BERNOULLI, "p", "value", 0.5, 1, "the probability of `value`", "the value drawn", 1},
};
#define N_GENERATORS (sizeof generators / sizeof generators[0])

/* Parameters: y, the scalars the generator has, then (random ones) seed and offset. */
enum { GN_Y, GN_A, GN_B, GN_SEED, GN_OFFSET, GN_N };

/* A scalar or an int the generator's parameter list may not have: then its default. */
static double scalar(const kp_call *call, uint32_t index, double fallback)
{
    return index < call->n_args ? call->args[index].f : fallback;
}

static uint64_t integer(const kp_call *call, uint32_t index)
{
    return index < call->n_args ? (uint64_t)call->args[index].i : 0;
}

static const generator *generator_of(kp_launch *l)
{
    return tensor_host->kernel_user(l);
}

static kp_status space(kp_launch *l, const kp_call *call, tensor_space *s)
{
    const kp_tensor *y = &call->args[GN_Y].tensor;
    const generator *g = generator_of(l);
    if (g->kind == TG_BERNOULLI && !(scalar(call, GN_A, 0) >= 0.0 && scalar(call, GN_A, 0) <= 1.0))
        return tensor_host->fail(l, KP_ERR_INVALID_ARG, "p: %g is not a probability",
                                 scalar(call, GN_A, 0));
    if (g->kind == TG_NORMAL && !(scalar(call, GN_B, 0) >= 0.0))
        return tensor_host->fail(l, KP_ERR_INVALID_ARG, "std: %g is not a standard deviation",
                                 scalar(call, GN_B, 0));
    return tensor_space_make(l, y->rank, y->shape, y, "y", NULL, NULL, 0, s);
}

static kp_status check(const kp_call *call, kp_launch *l)
{
    tensor_space s;
    return space(l, call, &s);
}

static kp_status enqueue(const kp_call *call, kp_launch *l)
{
    tensor_space s;
    kp_status st = space(l, call, &s);
    return st == KP_OK
               ? tensor_space_enqueue_generate(
                     l, &s, &call->args[GN_Y].tensor, generator_of(l)->kind, scalar(call, GN_A, 0),
                     scalar(call, GN_B, 0), integer(call, GN_SEED), integer(call, GN_OFFSET))
               : st;
}

static kp_status reference(const kp_call *call, kp_launch *l)
{
    tensor_space s;
    kp_status st = space(l, call, &s);
    if (st == KP_OK)
        tensor_space_reference_generate(&s, call->args[GN_Y].host, generator_of(l)->kind,
                                        scalar(call, GN_A, 0), scalar(call, GN_B, 0),
                                        integer(call, GN_SEED), integer(call, GN_OFFSET));
    return st;
}

/* One element; primes; a strided (transposed) y; an offset into the random stream; y reversed
 * along its rows (a negative stride); 16M. uniform and normal check a 16-bit y too: contiguous
 * bf16 (four elements a store) and a strided f16. */
static const char *const verify_sizes[] = {"one", "prime", "views", "offset", "flipped", NULL};
static const char *const uniform_sizes[] = {"one",     "prime",      "views", "offset",
                                            "flipped", "prime-bf16", NULL};
static const char *const normal_sizes[] = {"one",     "prime",     "views", "offset",
                                           "flipped", "views-f16", NULL};
static const char *const bench_sizes[] = {"16M", NULL};

static kp_status sample(kp_sample *smp, const char *size)
{
    const generator *g = tensor_host->sample_kernel_user(smp);
    int64_t shape[2] = {37, 53};
    int rank = 2;
    char base[32];
    int32_t dtype;
    tensor_size_dtypes(size, base, sizeof base, &dtype, 1);
    if (strcmp(base, "one") == 0)
        rank = 1, shape[0] = 1;
    else if (strcmp(base, "16M") == 0)
        rank = 1, shape[0] = 1 << 24;
    else if (strcmp(base, "prime") != 0 && strcmp(base, "views") != 0 &&
             strcmp(base, "offset") != 0 && strcmp(base, "flipped") != 0)
        return KP_ERR_NOT_FOUND;
    kp_status st = tensor_host->sample_tensor(smp, "y", dtype, rank, shape, 0.0, 0.0, NULL);
    if (st == KP_OK && strcmp(base, "views") == 0)
        st = tensor_host->sample_view(smp, "y", 2, shape, 0, (const int64_t[]){1, shape[0]});
    if (st == KP_OK && strcmp(size, "flipped") == 0)
        st = tensor_sample_flip(smp, "y", rank, shape, 2);
    if (st == KP_OK && g->a)
        st = tensor_host->sample_float(smp, g->a, g->kind == TG_BERNOULLI ? 0.3 : -1.5);
    if (st == KP_OK && g->b)
        st = tensor_host->sample_float(smp, g->b, g->kind == TG_BERNOULLI ? 1.0 / 0.3 : 2.5);
    if (st == KP_OK && g->random)
        st = tensor_host->sample_int(smp, "seed", 0x1234567890abcdefLL);
    if (st == KP_OK && g->random && strcmp(base, "offset") == 0)
        st = tensor_host->sample_int(smp, "offset", (1LL << 32) - 5);
    return st;
}

static void cost(const kp_call *call, kp_cost *out)
{
    out->flops = (double)kp_tensor_numel(&call->args[GN_Y].tensor);
    out->bytes = tensor_dtype_bytes(call);
}

/* Uniform and bernoulli come out exact in f32; normal's log and cos are the device's. */
static void tolerance(const kp_call *call, double *atol, double *rtol)
{
    *atol = 1e-5;
    *rtol = 1e-5;
    tensor_dtype_tolerance(call, atol, rtol);
}

static char names[N_GENERATORS][32];
static kp_param_desc params[N_GENERATORS][GN_N];
static kp_kernel_desc descs[N_GENERATORS];
static pthread_once_t once = PTHREAD_ONCE_INIT;

/* Fills the descriptors once: a runtime created earlier reads them while a later runtime's
 * init runs. */
static void build(void)
{
    for (size_t i = 0; i < N_GENERATORS; i++) {
        const generator *g = &generators[i];
        snprintf(names[i], sizeof names[i], "tensor.%s", g->name);
        kp_param_desc *p = params[i];
        p[GN_Y] = (kp_param_desc){.name = "y",
                                  .kind = KP_ARG_KIND_TENSOR,
                                  .flags = KP_PARAM_NEGATIVE_STRIDES,
                                  .access = KP_ACCESS_OUT,
                                  .dtypes = TENSOR_FLOATS,
                                  .doc = "any shape, any strides; element i of its row-major order "
                                         "gets value i"};
        p[GN_A] = (kp_param_desc){.name = g->a,
                                  .kind = KP_ARG_KIND_FLOAT,
                                  .access = KP_ACCESS_IN,
                                  .flags = KP_PARAM_OPTIONAL,
                                  .float_default = g->a_default,
                                  .doc = g->a_doc};
        p[GN_B] = (kp_param_desc){.name = g->b,
                                  .kind = KP_ARG_KIND_FLOAT,
                                  .access = KP_ACCESS_IN,
                                  .flags = KP_PARAM_OPTIONAL,
                                  .float_default = g->b_default,
                                  .doc = g->b_doc};
        p[GN_SEED] = (kp_param_desc){.name = "seed",
                                     .kind = KP_ARG_KIND_INT,
                                     .access = KP_ACCESS_IN,
                                     .flags = KP_PARAM_OPTIONAL,
                                     .doc = "the stream's key (any 64-bit value)"};
        p[GN_OFFSET] = (kp_param_desc){.name = "offset",
                                       .kind = KP_ARG_KIND_INT,
                                       .access = KP_ACCESS_IN,
                                       .flags = KP_PARAM_OPTIONAL,
                                       .doc = "added to each element's index: where in the "
                                              "stream this call starts"};
        descs[i] = (kp_kernel_desc){
            .struct_size = sizeof(kp_kernel_desc),
            .name = names[i],
            .summary = g->summary,
            .params = p,
            .n_params = g->random ? GN_N
                        : g->b    ? GN_B + 1
                                  : GN_A + 1,
            .n_tunables = 1,
            .tunables = tensor_tunables,
            .source = kp_kernel_tensor_cl,
            .source_name = "tensor.cl",
            .entry = "tensor_generate",
            .check = check,
            .enqueue = enqueue,
            .reference = reference,
            .sample = sample,
            .cost = cost,
            .verify_sizes = g->kind == TG_UNIFORM  ? uniform_sizes
                            : g->kind == TG_NORMAL ? normal_sizes
                                                   : verify_sizes,
            .bench_sizes = bench_sizes,
            .tolerance = tolerance,
            .user = (void *)g,
        };
    }
}

kp_status tensor_register_generators(const kp_host_api *api, kp_registrar *reg)
{
    pthread_once(&once, build);
    for (size_t i = 0; i < N_GENERATORS; i++) {
        kp_status st = api->register_kernel(reg, &descs[i]);
        if (st != KP_OK)
            return st;
    }
    return KP_OK;
}
