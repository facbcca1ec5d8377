/* SPDX-License-Identifier: Apache-2.0 */
/* Iteration spaces: broadcasting operands to one shape, splitting kept from reduced dimensions,
 * coalescing, and the one launch (or host loop) that runs a map and a combine over them. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "kernelport/ops/random.h"
#include "tensor-kernels.h"
#include "tensor.h"

static const int64_t workgroups[] = {32, 64, 128, 256, 512, 1024};
static const int64_t routes[] = {TR_AUTO, TR_ITEMS, TR_LANES, TR_CHUNKS};
const kp_tunable_desc tensor_tunables[TT_COUNT] = {
    [TT_WG] = {.name = "WG",
               .default_value = 256,
               .allowed = workgroups,
               .n_allowed = sizeof workgroups / sizeof workgroups[0],
               .flags = KP_TUNABLE_WORKGROUP,
               .doc = "work-items per work-group of the one-work-item-per-element kernels (results "
                      "do not depend on it)"},
    [TT_REDUCE] = {.name = "REDUCE",
                   .default_value = TR_AUTO,
                   .allowed = routes,
                   .n_allowed = 4,
                   .flags = KP_TUNABLE_NO_DEFINE,
                   .doc = "how an output element's terms are summed: 1 one work-item each, in "
                          "order; 2 64 lanes each, a fixed tree; 3 in chunks summed into scratch, "
                          "then merged in order; 0 decided per call (on GPUs, from the shape: 3 "
                          "for few outputs of many terms, 2 for contiguous terms, else 1; 1 on "
                          "CPUs). Each gives the same bits on every run"},
};

const char *tensor_shape_str(const kp_tensor *t, char *buf, size_t size)
{
    size_t n = (size_t)snprintf(buf, size, "[");
    for (int32_t d = 0; d < t->rank && n < size; d++)
        n += (size_t)snprintf(buf + n, size - n, "%s%lld", d ? ", " : "", (long long)t->shape[d]);
    if (n < size)
        snprintf(buf + n, size - n, "]");
    return buf;
}

/* Operand t's stride along dimension d of a rank-`rank` space of extents `full`, aligned at the
 * last dimension, into *stride. Returns 0 when t's extent there is neither full[d] nor 1 (strides
 * may be negative, so no stride value could mark that). */
static int aligned_stride(const kp_tensor *t, int rank, const int64_t *full, int d, int64_t *stride)
{
    int od = d - (rank - t->rank);
    *stride = od < 0 || t->shape[od] == 1 ? 0 : t->strides[od];
    return od < 0 || t->shape[od] == 1 || t->shape[od] == full[d];
}

static int mergeable(const tensor_space *s, int outer, int inner)
{
    if (s->out_stride[outer] != s->out_stride[inner] * s->ext[inner])
        return 0;
    for (int i = 0; i < s->n_in; i++)
        if (s->in_stride[i][outer] != s->in_stride[i][inner] * s->ext[inner])
            return 0;
    return 1;
}

/* Appends dimension d of the broadcast layout to the space, merging it into the previous one of
 * its group when every operand steps through the two as through one. */
static void push(tensor_space *s, int reduced, int64_t ext, int64_t out_stride,
                 const int64_t *in_strides)
{
    const int first_of_group = reduced ? s->rank_kept : 0;
    int at = s->rank_kept + s->rank_red;
    s->ext[at] = ext;
    s->out_stride[at] = out_stride;
    for (int i = 0; i < s->n_in; i++)
        s->in_stride[i][at] = in_strides[i];
    if (at > first_of_group && mergeable(s, at - 1, at)) {
        s->ext[at - 1] *= ext;
        s->out_stride[at - 1] = out_stride;
        for (int i = 0; i < s->n_in; i++)
            s->in_stride[i][at - 1] = in_strides[i];
        return;
    }
    if (reduced)
        s->rank_red++;
    else
        s->rank_kept++;
}

kp_status tensor_space_make(kp_launch *l, int rank, const int64_t *full, const kp_tensor *out,
                            const char *out_name, const kp_tensor *const *in,
                            const char *const *in_names, int n_in, tensor_space *s)
{
    memset(s, 0, sizeof *s);
    s->n_in = n_in;
    char a[160], b[160];
    kp_tensor f = {.rank = rank};
    for (int d = 0; d < rank; d++)
        f.shape[d] = full[d];
    if (out->rank > rank)
        return tensor_host->fail(l, KP_ERR_INVALID_ARG, "%s: rank %d is above the %d of %s",
                                 out_name, out->rank, rank, tensor_shape_str(&f, a, sizeof a));
    for (int i = 0; i < n_in; i++)
        if (in[i]->rank > rank)
            return tensor_host->fail(l, KP_ERR_INVALID_ARG, "%s: rank %d is above the %d of %s",
                                     in_names[i], in[i]->rank, rank,
                                     tensor_shape_str(&f, a, sizeof a));
    /* Kernels index with int. */
    for (int i = -1; i < n_in; i++) {
        const kp_tensor *t = i < 0 ? out : in[i];
        if (kp_tensor_numel(t) > INT32_MAX)
            return tensor_host->fail(l, KP_ERR_UNSUPPORTED,
                                     "%s: %s has more than 2^31 - 1 elements (kernels index with "
                                     "int)",
                                     i < 0 ? out_name : in_names[i],
                                     tensor_shape_str(t, a, sizeof a));
    }
    int64_t os[KP_MAX_RANK], is[TS_MAX_IN][KP_MAX_RANK];
    int reduced[KP_MAX_RANK];
    s->n_out = s->n_red = 1;
    for (int d = 0; d < rank; d++) {
        if (!aligned_stride(out, rank, full, d, &os[d]))
            return tensor_host->fail(l, KP_ERR_INVALID_ARG, "%s: shape %s does not broadcast to %s",
                                     out_name, tensor_shape_str(out, a, sizeof a),
                                     tensor_shape_str(&f, b, sizeof b));
        for (int i = 0; i < n_in; i++) {
            if (!aligned_stride(in[i], rank, full, d, &is[i][d]))
                return tensor_host->fail(
                    l, KP_ERR_INVALID_ARG, "%s: shape %s does not broadcast to %s", in_names[i],
                    tensor_shape_str(in[i], a, sizeof a), tensor_shape_str(&f, b, sizeof b));
        }
        int od = d - (rank - out->rank);
        reduced[d] = full[d] > 1 && (od < 0 || out->shape[od] == 1);
        if (reduced[d])
            s->n_red *= full[d];
        else
            s->n_out *= full[d];
    }
    s->out_offset = out->offset;
    s->out_dtype = out->dtype;
    for (int i = 0; i < n_in; i++) {
        s->in_offset[i] = in[i]->offset;
        s->in_dtype[i] = in[i]->dtype;
    }
    /* Kept dimensions in order, then reduced ones in order: a reduction's index counts the
     * reduced dimensions row-major, as PyTorch's argmax over several dimensions does. */
    for (int group = 0; group < 2; group++) {
        for (int d = 0; d < rank; d++) {
            if (full[d] == 1 || reduced[d] != group)
                continue;
            int64_t strides[TS_MAX_IN];
            for (int i = 0; i < n_in; i++)
                strides[i] = is[i][d];
            push(s, group, full[d], group ? 0 : os[d], strides);
        }
    }
    for (int d = 0; d < rank; d++)
        if (full[d] == 0)
            s->n_out = 0;
    return KP_OK;
}

/* Operand `t`'s view over the space as a rank-8 tensor: kept dimensions at positions
 * 0 .. rank_kept - 1, reduced ones at 8 - rank_red .. 7, as kernels/tensor.cl reads them. */
static kp_tensor view8(const tensor_space *s, const kp_tensor *t, const int64_t *strides,
                       int64_t offset, int with_reduced)
{
    kp_tensor v = *t;
    v.rank = KP_MAX_RANK;
    v.offset = offset;
    for (int d = 0; d < KP_MAX_RANK; d++) {
        v.shape[d] = 1;
        v.strides[d] = 0;
    }
    for (int k = 0; k < s->rank_kept; k++) {
        v.shape[k] = s->ext[k];
        v.strides[k] = strides[k];
    }
    for (int r = 0; with_reduced && r < s->rank_red; r++) {
        int p = KP_MAX_RANK - s->rank_red + r;
        v.shape[p] = s->ext[s->rank_kept + r];
        v.strides[p] = strides[s->rank_kept + r];
    }
    return v;
}

/* How the space's output elements are summed (REDUCE, tensor_tunables): on GPUs, few outputs
 * of very many terms, or terms no lanes can read together, in chunks; rows of contiguous terms
 * by 64 lanes; otherwise, and on CPUs, one work-item per output. */
static int route(kp_launch *l, const tensor_space *s)
{
    if (s->rank_red == 0)
        return TR_ITEMS;
    const int64_t forced = tensor_host->tunable(l, "REDUCE");
    if (forced != TR_AUTO)
        return (int)forced;
    const kp_device_info *d = tensor_host->device(l);
    if (!d || d->type != KP_DEVICE_GPU || s->n_red < 256)
        return TR_ITEMS;
    /* A reversed row (stride -1) is read as coalesced as a forward one. */
    const int64_t step = s->in_stride[0][s->rank_kept + s->rank_red - 1];
    const int contiguous = step == 1 || step == -1;
    if (s->n_red >= 4096 && s->n_out < 1024)
        return TR_CHUNKS;
    if (contiguous)
        return TR_LANES;
    return s->n_out < 32768 ? TR_CHUNKS : TR_ITEMS;
}

/* Whether an operand of stride `stride` from element `offset` reads blocks of four elements as
 * 16-byte accesses: contiguous from a multiple of four elements, or reversed (stride -1) from 3
 * more, so that each block's lowest element is on 16 bytes. */
static int aligned4(int64_t stride, int64_t offset)
{
    return (stride == 1 && offset % 4 == 0) || (stride == -1 && offset % 4 == 3);
}

/* Whether a work-item takes one item rather than striding over the grid (ONE_PASS in
 * kernels/tensor.cl): on CPUs, where PoCL vectorises a work-group across its work-items only when
 * a work-item's body holds no loop over items. Elementwise ops, and reductions whose terms are
 * strided (the group then steps through them together, neighbouring outputs in one vector);
 * terms contiguous in memory (forward or reversed) stay one work-item's loop, which reads them in
 * order. */
static int one_pass(kp_launch *l, const tensor_space *s)
{
    const kp_device_info *d = tensor_host->device(l);
    if (!d || d->type != KP_DEVICE_CPU)
        return 0;
    const int64_t last = s->rank_red ? s->in_stride[0][s->rank_kept + s->rank_red - 1] : 0;
    return s->rank_red == 0 || (last != 1 && last != -1);
}

/* Whether an elementwise space can go four elements to a 16-byte access (VEC4 in
 * kernels/tensor.cl): one kept dimension, along which the output and every input are contiguous
 * or reversed (an input may be a broadcast scalar), each at an offset aligned4 accepts (buffers
 * start aligned to far more: CL_DEVICE_MEM_BASE_ADDR_ALIGN). A copy that moves bits (`raw`)
 * goes forward only. */
static int vectorizable(const tensor_space *s, int comb, int raw)
{
    if (s->rank_red != 0 || s->rank_kept != 1 || comb >= TC_ARGMAX ||
        !aligned4(s->out_stride[0], s->out_offset) || (raw && s->out_stride[0] < 0))
        return 0;
    for (int i = 0; i < s->n_in; i++)
        if ((s->in_stride[i][0] != 0 && !aligned4(s->in_stride[i][0], s->in_offset[i])) ||
            (raw && s->in_stride[i][0] < 0))
            return 0;
    return 1;
}

/* Whether the space is a copy between tensors of one dtype other than f32, which moves bits
 * rather than values (RAW in kernels/tensor.cl): i32 past 2^24 and NaN payloads come through. */
static int raw_copy(const tensor_space *s, int map, int comb, double post)
{
    return map == TM_COPY && comb == TC_SUM && post == 1.0 && s->rank_red == 0 && s->n_in == 1 &&
           s->in_dtype[0] == s->out_dtype && s->out_dtype != KP_F32;
}

/* The arguments every map-reduce kernel starts with (MAP_REDUCE_PARAMS in kernels/tensor.cl). */
static void common_args(kp_clargs *a, const tensor_space *s, const kp_tensor *out,
                        const kp_tensor *const *in, int map, int comb, double alpha, double post)
{
    int32_t ext[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    for (int k = 0; k < s->rank_kept; k++)
        ext[k] = (int32_t)s->ext[k];
    for (int r = 0; r < s->rank_red; r++)
        ext[KP_MAX_RANK - s->rank_red + r] = (int32_t)s->ext[s->rank_kept + r];
    kp_clargs_int(a, (int32_t)s->n_out);
    kp_clargs_int(a, (int32_t)s->n_red);
    kp_clargs_int(a, map);
    kp_clargs_int(a, comb);
    kp_clargs_float(a, (float)alpha);
    kp_clargs_float(a, (float)post);
    kp_clargs_value(a, sizeof ext, ext);
    for (int i = 0; i < TS_MAX_IN; i++) {
        /* An input the map does not read still needs a buffer: the first one stands in. */
        int j = i < s->n_in ? i : 0;
        kp_tensor v = view8(s, in[j], s->in_stride[j], s->in_offset[j], 1);
        kp_clargs_tensor(a, &v, KP_MAX_RANK);
    }
    /* The output goes to y (values) or yi (indices): both slots get its buffer, and the kernel
     * writes through the one its combine calls for. */
    kp_tensor vy = view8(s, out, s->out_stride, s->out_offset, 0);
    kp_clargs_buffer(a, out->buffer);
    kp_clargs_tensor(a, &vy, KP_MAX_RANK);
}

/* Work-groups of wg work-items for `items` items, per_group to a group: enough to fill any
 * device, each work-item then striding over what is left. */
static size_t global_size(size_t items, size_t per_group, size_t wg)
{
    size_t groups = (items + per_group - 1) / per_group;
    return (groups > 65536 ? 65536 : groups) * wg;
}

/* The chunked route: chunks of the terms (a size from the shape alone) summed into scratch, then
 * merged in order. */
static kp_status enqueue_chunks(kp_launch *l, const tensor_space *s, const char *options,
                                const kp_tensor *out, const kp_tensor *const *in, int map, int comb,
                                double alpha, double post)
{
    int64_t target = 262144 / s->n_out;
    target = target < 1 ? 1 : target > 1024 ? 1024 : target;
    const int64_t chunk = (s->n_red + target - 1) / target;
    const int64_t n_chunks = (s->n_red + chunk - 1) / chunk, parts = n_chunks * s->n_out;
    if (parts > INT32_MAX)
        return tensor_host->fail(l, KP_ERR_UNSUPPORTED, "%lld partial sums: past 2^31 - 1",
                                 (long long)parts);
    kp_buffer *pv = NULL, *pa = NULL, *ps = NULL;
    kp_status st = tensor_host->scratch(l, 0, (size_t)parts * sizeof(float), &pv);
    if (st == KP_OK)
        st = tensor_host->scratch(l, 1, (size_t)parts * sizeof(int32_t), &pa);
    /* The combines with a second value (var, std, logsumexp) keep it in ps. */
    if (st == KP_OK && comb >= TC_VAR)
        st = tensor_host->scratch(l, 2, (size_t)parts * sizeof(float), &ps);
    if (st != KP_OK)
        return st;
    const char *const entries[2] = {"tensor_map_reduce_chunks", "tensor_map_reduce_merge"};
    size_t wg = (size_t)tensor_host->tunable_index(l, TT_WG);
    for (int stage = 0; stage < 2 && st == KP_OK; stage++) {
        kp_clargs a = kp_clargs_begin(tensor_host, l, entries[stage], options);
        common_args(&a, s, out, in, map, comb, alpha, post);
        kp_clargs_int(&a, (int32_t)chunk);
        kp_clargs_int(&a, (int32_t)n_chunks);
        kp_clargs_buffer(&a, pv);
        kp_clargs_buffer(&a, pa);
        kp_clargs_buffer(&a, ps ? ps : pv);
        size_t global = global_size(stage ? (size_t)s->n_out : (size_t)parts, wg, wg);
        st = kp_clargs_enqueue(&a, 1, &global, &wg);
    }
    return st;
}

kp_status tensor_space_enqueue(kp_launch *l, const tensor_space *s, const kp_tensor *out,
                               const kp_tensor *const *in, int map, int comb, double alpha,
                               double post)
{
    if (s->n_out == 0)
        return KP_OK;
    if (s->n_out > INT32_MAX || s->n_red > INT32_MAX)
        return tensor_host->fail(l, KP_ERR_UNSUPPORTED,
                                 "%lld outputs of %lld terms each: past 2^31 - 1 (kernels index "
                                 "with int)",
                                 (long long)s->n_out, (long long)s->n_red);
    char options[192], dtypes[64];
    int n = snprintf(options, sizeof options, "-D RO=%d -D RR=%d -D OP=%d -D COMB=%d", s->rank_kept,
                     s->rank_red, map, comb);
    const int raw = raw_copy(s, map, comb, post);
    /* The dtypes before the chunked route returns: its two kernels read and write them too. */
    tensor_dtype_options(s, comb, raw, dtypes, sizeof dtypes);
    n += snprintf(options + n, sizeof options - (size_t)n, "%s", dtypes);
    const int how = route(l, s);
    if (how == TR_CHUNKS)
        return enqueue_chunks(l, s, options, out, in, map, comb, alpha, post);
    const int lanes = how == TR_LANES, single = !lanes && one_pass(l, s);
    const int vec4 = vectorizable(s, comb, raw);
    if (vec4)
        n += snprintf(
            options + n, sizeof options - (size_t)n, " -D VEC4 -D S0=%d -D S1=%d -D S2=%d -D SY=%d",
            s->n_in > 0 ? (int)s->in_stride[0][0] : 0, s->n_in > 1 ? (int)s->in_stride[1][0] : 0,
            s->n_in > 2 ? (int)s->in_stride[2][0] : 0, (int)s->out_stride[0]);
    if (single)
        snprintf(options + n, sizeof options - (size_t)n, " -D ONE_PASS");
    size_t wg = lanes ? 64 : (size_t)tensor_host->tunable_index(l, TT_WG);
    /* An elementwise work-item takes UNROLL elements (kernels/tensor.cl), four as one vector
     * with VEC4, one with ONE_PASS; lanes share one. */
    size_t per_group = lanes ? 1 : s->rank_red ? wg : vec4 ? wg * 4 : single ? wg : wg * UNROLL;
    size_t global = single ? ((size_t)s->n_out + per_group - 1) / per_group * wg
                           : global_size((size_t)s->n_out, per_group, wg);
    kp_clargs a = kp_clargs_begin(tensor_host, l,
                                  lanes ? "tensor_map_reduce_lanes" : "tensor_map_reduce", options);
    common_args(&a, s, out, in, map, comb, alpha, post);
    return kp_clargs_enqueue(&a, 1, &global, &wg);
}

/* Offsets of output element o's kept coordinates, or of reduced term r's, for each operand. */
static void locate(const tensor_space *s, int64_t idx, int from, int count, int64_t *out_off,
                   int64_t *in_off)
{
    for (int d = from + count - 1; d >= from; d--) {
        int64_t c = idx % s->ext[d];
        idx /= s->ext[d];
        if (out_off)
            *out_off += c * s->out_stride[d];
        for (int i = 0; i < s->n_in; i++)
            in_off[i] += c * s->in_stride[i][d];
    }
}

void tensor_space_reference(const tensor_space *s, void *out, int32_t out_dtype,
                            const void *const *in, int map, int comb, double alpha, double post)
{
    const int raw = raw_copy(s, map, comb, post);
    const size_t size = kp_dtype_size((kp_dtype)out_dtype);
    for (int64_t o = 0; o < s->n_out; o++) {
        int64_t oy = s->out_offset, base[TS_MAX_IN];
        for (int i = 0; i < s->n_in; i++)
            base[i] = s->in_offset[i];
        locate(s, o, 0, s->rank_kept, &oy, base);
        if (raw) {
            memcpy((char *)out + oy * (int64_t)size, (const char *)in[0] + base[0] * (int64_t)size,
                   size);
            continue;
        }
        double acc = comb == TC_PROD                       ? 1.0
                     : comb == TC_MAX || comb == TC_ARGMAX ? -INFINITY
                     : comb == TC_MIN || comb == TC_ARGMIN ? INFINITY
                                                           : 0.0;
        int64_t arg = 0;
        int seen_nan = 0;
        /* Welford's (var, std): acc the mean, m2 the squared deviations; logsumexp: acc the
         * running max, m2 the sum of exp(x - acc). */
        double m2 = 0.0;
        if (comb == TC_VAR || comb == TC_STD)
            acc = 0.0;
        else if (comb == TC_LSE)
            acc = -INFINITY;
        for (int64_t r = 0; r < s->n_red; r++) {
            int64_t off[TS_MAX_IN];
            memcpy(off, base, sizeof off);
            locate(s, r, s->rank_kept, s->rank_red, NULL, off);
            double x[TS_MAX_IN] = {0, 0, 0};
            for (int i = 0; i < s->n_in; i++)
                x[i] = kp_dtype_load(in[i], (kp_dtype)s->in_dtype[i], off[i]);
            double v = tensor_map_host(map, x[0], x[1], x[2], alpha);
            if (comb == TC_SUM) {
                acc += v;
            } else if (comb == TC_PROD) {
                acc *= v;
            } else if (comb == TC_VAR || comb == TC_STD) {
                const double d = v - acc;
                acc += d / (double)(r + 1);
                m2 += d * (v - acc);
            } else if (comb == TC_LSE) {
                if (isnan(v))
                    seen_nan = 1;
                else if (v > acc)
                    m2 = m2 * exp(acc - v) + 1.0, acc = v;
                else if (v != -INFINITY)
                    m2 += exp(v - acc);
            } else if (!seen_nan) {
                int better = comb == TC_MAX || comb == TC_ARGMAX ? v > acc : v < acc;
                if (isnan(v) || better) {
                    acc = v;
                    arg = r;
                    seen_nan = isnan(v);
                }
            }
        }
        /* post: var's and std's divisor, as kernels/tensor.cl's store reads it. */
        double y = acc * post;
        if (comb == TC_VAR || comb == TC_STD)
            y = comb == TC_STD ? sqrt(m2 / post) : m2 / post;
        else if (comb == TC_LSE)
            y = seen_nan ? NAN : isinf(acc) ? acc : acc + log(m2);
        if (comb == TC_ARGMAX || comb == TC_ARGMIN)
            ((int32_t *)out)[oy] = (int32_t)arg;
        else
            kp_dtype_store(out, (kp_dtype)out_dtype, oy, (float)y);
    }
}

kp_status tensor_space_enqueue_generate(kp_launch *l, const tensor_space *s, const kp_tensor *y,
                                        int kind, double a, double b, uint64_t seed,
                                        uint64_t offset)
{
    if (s->n_out == 0)
        return KP_OK;
    if (s->n_out > INT32_MAX)
        return tensor_host->fail(l, KP_ERR_UNSUPPORTED,
                                 "%lld elements: past 2^31 - 1 (kernels index with int)",
                                 (long long)s->n_out);
    /* Contiguous y from a multiple of four elements, the stream too: 16-byte stores (GVEC4). */
    const int vec4 =
        s->rank_kept == 1 && s->out_stride[0] == 1 && s->out_offset % 4 == 0 && offset % 4 == 0;
    char options[64], dtypes[32];
    tensor_dtype_options(s, TC_SUM, 0, dtypes, sizeof dtypes);
    snprintf(options, sizeof options, "-D RO=%d%s%s", s->rank_kept, vec4 ? " -D GVEC4" : "",
             dtypes);
    size_t wg = (size_t)tensor_host->tunable_index(l, TT_WG);
    /* A work-item per counter of four elements (one more where offset is not a multiple of 4). */
    size_t global = global_size((size_t)s->n_out / 4 + 2, wg, wg);
    int32_t ext[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    for (int k = 0; k < s->rank_kept; k++)
        ext[k] = (int32_t)s->ext[k];
    const uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
    const uint32_t off[2] = {(uint32_t)offset, (uint32_t)(offset >> 32)};
    kp_tensor vy = view8(s, y, s->out_stride, s->out_offset, 0);
    kp_clargs c = kp_clargs_begin(tensor_host, l, "tensor_generate", options);
    kp_clargs_int(&c, (int32_t)s->n_out);
    kp_clargs_int(&c, kind);
    kp_clargs_float(&c, (float)a);
    kp_clargs_float(&c, (float)b);
    kp_clargs_value(&c, sizeof key, key);
    kp_clargs_value(&c, sizeof off, off);
    kp_clargs_value(&c, sizeof ext, ext);
    kp_clargs_tensor(&c, &vy, KP_MAX_RANK);
    return kp_clargs_enqueue(&c, 1, &global, &wg);
}

void tensor_space_reference_generate(const tensor_space *s, void *y, int kind, double a, double b,
                                     uint64_t seed, uint64_t offset)
{
    const uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
    for (int64_t o = 0; o < s->n_out; o++) {
        int64_t oy = s->out_offset;
        locate(s, o, 0, s->rank_kept, &oy, NULL);
        const uint64_t n = (uint64_t)o + offset, g = n / 4;
        const uint32_t counter[4] = {(uint32_t)g, (uint32_t)(g >> 32), 0, 0};
        uint32_t w[4];
        kp_philox4x32_10(counter, key, w);
        const unsigned k = (unsigned)(n % 4);
        const double u = (double)(w[k] >> 8) * 0x1p-24;
        double v = a;
        if (kind == TG_ARANGE)
            v = a + b * (double)o;
        else if (kind == TG_UNIFORM)
            v = a + (b - a) * u;
        else if (kind == TG_BERNOULLI)
            v = u < (double)(float)a ? b : 0.0;
        else if (kind == TG_NORMAL) {
            const unsigned p = k & 2;
            const double r = sqrt(-2.0 * log((double)((w[p] >> 8) + 1) * 0x1p-24));
            const double theta = 2.0 * M_PI * (double)(w[p + 1] >> 8) * 0x1p-24;
            v = a + b * r * ((k & 1) ? sin(theta) : cos(theta));
        }
        kp_dtype_store(y, (kp_dtype)s->out_dtype, oy, (float)v);
    }
}
