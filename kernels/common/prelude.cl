/* SPDX-License-Identifier: Apache-2.0 */
/* Kernelport's OpenCL C prelude: the core puts it before every program it builds (a plugin's or a
 * kernel registered at run time), so kernels share one tensor view type, its accessors and the
 * horizontal sums. Names start with kp_ / KP_; the prelude only ever grows. */

/*
 * A tensor reaches a kernel as two parameters, its buffer and its view:
 *     __kernel void f(__global const float *x, const kp_view2 xv, ...)
 * set by the plugin with host->arg_tensor(l, k, index, &tensor, 2) (plugin.h). A view of rank R
 * is an int vector holding the element offset, then the stride of each dimension, zero-padded to
 * the vector's width:
 *     kp_view0 int      offset
 *     kp_view1 int2     offset, s0
 *     kp_view2 int4     offset, s0, s1          kp_view3 int4  offset, s0, s1, s2
 *     kp_view4..7 int8  offset, s0, ..., s6     kp_view8 int16 offset, s0, ..., s7
 * A view locates elements; how many there are (the call's shape, or one output shape that
 * broadcast operands share through stride 0) goes to the kernel as int arguments. An empty tensor
 * (an extent of 0) has offset -1: kp_empty(v) tells a kernel that an optional tensor was left out.
 * Vectors rather than structs because NVIDIA's OpenCL compiles loops that read through struct
 * parameters slower (logic.groupsum: 307 against 233 us on an H100 for the same PTX loop), and
 * narrow ones because wider parameters cost other kernels registers (logic.backward's dx: 6% with
 * shapes in the views). Read views with the accessors below, whose dimension is a literal 0 to 7
 * (a dimension the view does not have is a compile error). A tensor of lower rank than its view
 * has leading strides 0, so a broadcast operand needs no special case. Offsets and strides count
 * elements.
 */
typedef int kp_view0;
typedef int2 kp_view1;
typedef int4 kp_view2;
typedef int4 kp_view3;
typedef int8 kp_view4;
typedef int8 kp_view5;
typedef int8 kp_view6;
typedef int8 kp_view7;
typedef int16 kp_view8;

#define KP_S_0(v) ((v).s1)
#define KP_S_1(v) ((v).s2)
#define KP_S_2(v) ((v).s3)
#define KP_S_3(v) ((v).s4)
#define KP_S_4(v) ((v).s5)
#define KP_S_5(v) ((v).s6)
#define KP_S_6(v) ((v).s7)
#define KP_S_7(v) ((v).s8)

/* The view's offset (-1 for an empty tensor) and the stride of dimension d (a literal 0 to 7).
 * kp_view0 is its offset alone. */
#define kp_offset(v) ((v).s0)
#define kp_stride(v, d) KP_S_##d(v)
#define kp_empty(v) (kp_offset(v) < 0)

/* Element index of (i), (i, j), ... in a view: the offset plus each index times its stride. */
#define kp_at1(v, i) (kp_offset(v) + (i) * kp_stride(v, 0))
#define kp_at2(v, i, j) (kp_offset(v) + (i) * kp_stride(v, 0) + (j) * kp_stride(v, 1))
#define kp_at3(v, i, j, k)                                                                         \
    (kp_offset(v) + (i) * kp_stride(v, 0) + (j) * kp_stride(v, 1) + (k) * kp_stride(v, 2))
#define kp_at4(v, i, j, k, l)                                                                      \
    (kp_offset(v) + (i) * kp_stride(v, 0) + (j) * kp_stride(v, 1) + (k) * kp_stride(v, 2) +        \
     (l) * kp_stride(v, 3))

/* Horizontal sums in one fixed order: halves added lane-wise, then pairs, so results do not
 * depend on the vector width a device's tuning picks beyond that order. */
static inline float kp_hsum2(float2 q)
{
    return q.x + q.y;
}

static inline float kp_hsum4(float4 q)
{
    return (q.x + q.y) + (q.z + q.w);
}

/* The wider sums spell out the same lane-wise halving lane by lane: Oclgrind 21.10's
 * uninitialized-value check loses track of halves of a vector computed from a float16's halves
 * (`float16 v = vload16(0, p); float8 h = v.lo + v.hi; out[0] = h.lo.w;` is reported, with p
 * initialized), and so reported the kernels that used the vector form. */
static inline float kp_hsum8(float8 q)
{
    return ((q.s0 + q.s4) + (q.s1 + q.s5)) + ((q.s2 + q.s6) + (q.s3 + q.s7));
}

static inline float kp_hsum16(float16 q)
{
    const float h0 = q.s0 + q.s8, h1 = q.s1 + q.s9, h2 = q.s2 + q.sa, h3 = q.s3 + q.sb;
    const float h4 = q.s4 + q.sc, h5 = q.s5 + q.sd, h6 = q.s6 + q.se, h7 = q.s7 + q.sf;
    return ((h0 + h4) + (h1 + h5)) + ((h2 + h6) + (h3 + h7));
}

/* Philox4x32-10 (Salmon et al., SC'11; the generator of cuRAND and PyTorch): four random words
 * of counter c under key k, from 32-bit integer operations only, so every device and the host
 * (kp_philox4x32_10 in kernelport/ops/random.h) compute the same bits. */
static inline uint4 kp_philox4x32_10(uint4 c, uint2 k)
{
    for (int round = 0; round < 10; round++) {
        if (round) {
            k.x += 0x9E3779B9u;
            k.y += 0xBB67AE85u;
        }
        const uint hi0 = mul_hi(0xD2511F53u, c.x), lo0 = 0xD2511F53u * c.x;
        const uint hi1 = mul_hi(0xCD9E8D57u, c.z), lo1 = 0xCD9E8D57u * c.z;
        c = (uint4)(hi1 ^ c.y ^ k.x, lo1, hi0 ^ c.w ^ k.y, lo0);
    }
    return c;
}

/*
 * Storage dtypes, as kp_dtype numbers them (1 f32, 2 f16, 3 i32, 6 bf16), for kernels that read
 * and write other dtypes than f32 and compute in f32 (docs/kernels/tensor.md, "Dtypes"). d is a
 * literal or a macro that expands to one (a build option): KP_T(d) is dtype d's element type,
 * KP_LOAD(d, p, i) reads element i as a float and KP_STORE(d, p, i, v) writes one, KP_LOAD4 and
 * KP_STORE4 the four contiguous ones of vector index o (aligned as a vector of four elements).
 * f16 goes through vload_half and vstore_half_rte (core OpenCL, no cl_khr_fp16: `half` is only a
 * pointer type here); bf16 is the upper half of a float, rounded to nearest even, a NaN kept a NaN
 * (kp_bf16_rne*, the host's kp_bf16_from_float); i32 reads exactly up to 2^24 and is written
 * truncated toward zero, saturated, NaN as 0 (convert_int_sat_rtz). With d 1 they expand to the
 * plain float code, and a program that names none of them compiles as without them.
 */
#define KP_CAT_(a, b) a##b
#define KP_CAT(a, b) KP_CAT_(a, b)

#define KP_T_1 float
#define KP_T_2 half
#define KP_T_3 int
#define KP_T_6 ushort
#define KP_T(d) KP_CAT(KP_T_, d)

static inline ushort kp_bf16_rne(float f)
{
    const uint x = as_uint(f);
    return isnan(f) ? (ushort)((x >> 16) | 0x40) : (ushort)((x + 0x7fff + ((x >> 16) & 1)) >> 16);
}

/* kp_bf16_rne4, 8 and 16: the same on each component. */
#define KP_BF16_RNE_N(n)                                                                           \
    static inline ushort##n kp_bf16_rne##n(float##n f)                                             \
    {                                                                                              \
        const uint##n x = as_uint##n(f);                                                           \
        const ushort##n r = convert_ushort##n((x + 0x7fff + ((x >> 16) & 1)) >> 16);               \
        return select(r, convert_ushort##n(x >> 16) | (ushort##n)(0x40),                           \
                      convert_short##n(isnan(f)));                                                 \
    }
KP_BF16_RNE_N(4)
KP_BF16_RNE_N(8)
KP_BF16_RNE_N(16)
#undef KP_BF16_RNE_N

#define KP_LOAD_1(p, i) (p)[i]
#define KP_LOAD_2(p, i) vload_half(i, p)
#define KP_LOAD_3(p, i) convert_float((p)[i])
#define KP_LOAD_6(p, i) as_float((uint)(p)[i] << 16)
#define KP_LOAD(d, p, i) KP_CAT(KP_LOAD_, d)(p, i)

#define KP_STORE_1(p, i, v) ((p)[i] = (v))
#define KP_STORE_2(p, i, v) vstore_half_rte(v, i, p)
#define KP_STORE_3(p, i, v) ((p)[i] = convert_int_sat_rtz(v))
#define KP_STORE_6(p, i, v) ((p)[i] = kp_bf16_rne(v))
#define KP_STORE(d, p, i, v) KP_CAT(KP_STORE_, d)(p, i, v)

#define KP_LOAD4_1(p, o) ((__global const float4 *)(p))[o]
#define KP_LOAD4_2(p, o) vload_half4(o, p)
#define KP_LOAD4_3(p, o) convert_float4(((__global const int4 *)(p))[o])
#define KP_LOAD4_6(p, o) as_float4(convert_uint4(((__global const ushort4 *)(p))[o]) << 16)
#define KP_LOAD4(d, p, o) KP_CAT(KP_LOAD4_, d)(p, o)

#define KP_STORE4_1(p, o, v) (((__global float4 *)(p))[o] = (v))
#define KP_STORE4_2(p, o, v) vstore_half4_rte(v, o, p)
#define KP_STORE4_3(p, o, v) (((__global int4 *)(p))[o] = convert_int4_sat_rtz(v))
#define KP_STORE4_6(p, o, v) (((__global ushort4 *)(p))[o] = kp_bf16_rne4(v))
#define KP_STORE4(d, p, o, v) KP_CAT(KP_STORE4_, d)(p, o, v)
