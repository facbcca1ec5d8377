/* SPDX-License-Identifier: Apache-2.0 */
/* Device peak measurement: streaming copy and triad at several vector widths, FP32 FMA chains,
 * and an empty kernel for launch latency. Built by the OpenCL backend with -D VEC=n. */

#ifndef VEC
#define VEC 1
#endif

#if VEC == 1
typedef float vec_t;
#define SPLAT(x) (x)
#elif VEC == 2
typedef float2 vec_t;
#define SPLAT(x) ((float2)(x))
#elif VEC == 4
typedef float4 vec_t;
#define SPLAT(x) ((float4)(x))
#elif VEC == 8
typedef float8 vec_t;
#define SPLAT(x) ((float8)(x))
#else
typedef float16 vec_t;
#define SPLAT(x) ((float16)(x))
#endif

/* One vector per work-item: the simplest access pattern every compiler vectorises and
 * coalesces (a grid-stride loop defeats PoCL's work-group vectoriser). */
__kernel void peak_copy(__global const vec_t *src, __global vec_t *dst)
{
    const size_t i = get_global_id(0);
    dst[i] = src[i];
}

__kernel void peak_triad(__global vec_t *a, __global const vec_t *b, __global const vec_t *c,
                         const float s)
{
    const size_t i = get_global_id(0);
    a[i] = b[i] + s * c[i];
}

/* Reads only: each work-item sums PER vectors a grid apart (every step reads one contiguous
 * slice across the work-items) and writes one float, so writes are a 1/(PER*VEC) overhead. */
#define PER 16
__kernel void peak_read(__global const vec_t *src, __global float *dst)
{
    const size_t g = get_global_size(0), i = get_global_id(0);
    vec_t s = src[i];
    for (int j = 1; j < PER; j++)
        s += src[i + j * g];
#if VEC == 1
    dst[i] = s;
#elif VEC == 2
    dst[i] = s.s0 + s.s1;
#elif VEC == 4
    dst[i] = s.s0 + s.s1 + s.s2 + s.s3;
#elif VEC == 8
    dst[i] = s.s0 + s.s1 + s.s2 + s.s3 + s.s4 + s.s5 + s.s6 + s.s7;
#else
    dst[i] = s.s0 + s.s1 + s.s2 + s.s3 + s.s4 + s.s5 + s.s6 + s.s7 + s.s8 + s.s9 + s.sa + s.sb +
             s.sc + s.sd + s.se + s.sf;
#endif
}

/* Eight independent FMA chains per work-item hide the FMA latency; the result is stored so the
 * compiler cannot drop the work. FLOPs = global * iterations * 8 chains * VEC lanes * 2. */
__kernel void peak_fma(__global float *out, const float seed, const int iterations)
{
    const float g = (float)get_global_id(0) * 1e-7f;
    vec_t a0 = SPLAT(seed + g), a1 = SPLAT(seed - g), a2 = SPLAT(g), a3 = SPLAT(-g);
    vec_t a4 = SPLAT(seed * 0.5f + g), a5 = SPLAT(seed * 0.25f), a6 = SPLAT(g * 2.0f),
          a7 = SPLAT(seed + 1.0f);
    const vec_t m = SPLAT(0.999f), c = SPLAT(1e-4f);
    for (int i = 0; i < iterations; i++) {
        a0 = fma(a0, m, c);
        a1 = fma(a1, m, c);
        a2 = fma(a2, m, c);
        a3 = fma(a3, m, c);
        a4 = fma(a4, m, c);
        a5 = fma(a5, m, c);
        a6 = fma(a6, m, c);
        a7 = fma(a7, m, c);
    }
    vec_t s = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7;
#if VEC == 1
    out[get_global_id(0)] = s;
#elif VEC == 2
    out[get_global_id(0)] = s.s0 + s.s1;
#elif VEC == 4
    out[get_global_id(0)] = s.s0 + s.s1 + s.s2 + s.s3;
#elif VEC == 8
    out[get_global_id(0)] = s.s0 + s.s1 + s.s2 + s.s3 + s.s4 + s.s5 + s.s6 + s.s7;
#else
    out[get_global_id(0)] = s.s0 + s.s1 + s.s2 + s.s3 + s.s4 + s.s5 + s.s6 + s.s7 + s.s8 + s.s9 +
                            s.sa + s.sb + s.sc + s.sd + s.se + s.sf;
#endif
}

__kernel void peak_empty(__global float *out)
{
    if (get_global_id(0) == 0x7fffffff)
        out[0] = 0.0f;
}
