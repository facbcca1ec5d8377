/* SPDX-License-Identifier: Apache-2.0 */
/* tc.gemm: C = alpha op(A) op(B) + beta C on NVIDIA tensor cores, through inline PTX mma.sync. */

/*
 * Row-major f32 operands. A work-group computes a BM x BN tile of C with (BM/WM) x (BN/WN) warps;
 * a warp owns a WM x WN sub-tile, (WM/16) x (WN/8) mma tiles of 16 x 8 whose accumulators stay in
 * registers for the whole K loop.
 *
 * K advances BK at a time through two local-memory buffers: while the warps multiply out of one,
 * each work-item's global loads of the next BK slice are in flight into registers, then land in
 * the other buffer; one barrier per slice. A tile is stored in local memory along the dimension it
 * is contiguous along in global memory ("k-contiguous": [BM][BK + 4]; otherwise [BK][BM + 8]),
 * so the float4 loads land as float4 stores, and the pads put the fragment reads of a warp's 32
 * lanes on 32 different banks.
 *
 * STAGES (tunable; 0 for calls without VEC): 0 is the register-staged double buffering above;
 * 2 to 4 is a ring of that many slices filled by cp.async, which copies global to local memory
 * without passing through registers: slice s + STAGES - 1 is in flight while the warps multiply
 * slice s, still one barrier per slice. tf32 then rounds at each fragment read instead of once
 * at the store.
 *
 * LDSM and BT (tunables, below and at B_SKC): fragments of k-contiguous tiles through ldmatrix
 * (one instruction per 16 x 8 of A, or per two 8 x 8 tiles of B) rather than one 32-bit read
 * per value; tf32 and tf32x3.
 *
 * TC_PROBE (bench/probes/tc-ceilings only, never set by the plugin): 1 skips the copies into local memory
 * (the products alone), 2 skips the products (the copies alone), to time each side's ceiling;
 * 3 skips tc_gemm_wg's rounding of A's tile, 4 its proxy fence (wrong results; timing only).
 *
 * Compiled in by the host (not tunables): TC_PTX (set only where tc_supported passes: other
 * compilers must never see the PTX, which PoCL's LLVM aborts on), TA, TB (transposes), PREC
 * (0 tf32, 1 tf32x3, 2 f16, 3 bf16), VEC (1 when every operand's offset and row pitch are
 * multiples of 4 floats, so whole float4 groups may be loaded as one).
 *
 * Arguments: M, N, K (the product's, after the plugin's swap for a column-major C), alpha, beta,
 * then A, B and C, each its buffer and its kp_view2 (the prelude's): the operand as this kernel
 * reads it, row-major, with strides {row pitch, 1}. Only the offset and the row pitch are read,
 * once, at the top of the kernel.
 *
 * mma fragments (PTX ISA, "Matrix fragments for mma.m16n8k8" / "m16n8k16"), lane = 4 g + t:
 *   tf32 m16n8k8:  a0 (g, t) a1 (g+8, t) a2 (g, t+4) a3 (g+8, t+4); b0 (k t, n g) b1 (k t+4, n g)
 *   16-bit m16n8k16: each register a pair along k: a0 (g, 2t..2t+1) a1 (g+8, 2t..) a2 (g, 2t+8..)
 *                    a3 (g+8, 2t+8..); b0 (k 2t..2t+1, n g) b1 (k 2t+8..2t+9, n g)
 *   accumulators:  c0 (g, 2t) c1 (g, 2t+1) c2 (g+8, 2t) c3 (g+8, 2t+1)
 */
#ifndef TC_PTX
#error "tc.cl is built only for NVIDIA GPUs of compute capability 8.0 or newer (inline PTX)"
#endif

#ifndef BM
#define BM 128
#endif
#ifndef BN
#define BN 128
#endif
#ifndef BK
#define BK 16
#endif
#ifndef WM
#define WM 64
#endif
#ifndef WN
#define WN 32
#endif
#ifndef TA
#define TA 0
#endif
#ifndef TB
#define TB 0
#endif
#ifndef PREC
#define PREC 0
#endif
#ifndef VEC
#define VEC 0
#endif
#ifndef LDSM
#define LDSM 0
#endif
#ifndef BT
#define BT 0
#endif
#ifndef STAGES
#define STAGES 0
#endif
#ifndef TC_PROBE
#define TC_PROBE 0
#endif
#ifndef HALF
#define HALF 0
#endif
/* C's dtype (HALF only): 0 f32, 1 f16, 2 bf16. */
#ifndef COUT
#define COUT 0
#endif
#if COUT && !HALF
#error "a 16-bit C comes only with 16-bit tensors (HALF)"
#endif
#if STAGES && !VEC && !HALF
#error "cp.async's ring (STAGES) copies whole float4 groups: it needs VEC"
#endif

#ifndef WGMMA
#define WGMMA 0
#endif
#ifndef LAG
#define LAG 0
#endif

/* Slices a cp.async ring (STAGES >= 2) has in flight ahead of the one multiplied; tc_gemm_wg's
 * LAG slices of wgmma still reading hold their buffers. */
#define AHEAD (STAGES - 1 - LAG)

#define WARPS_M (BM / WM)
#if WGMMA
/* One warpgroup (four warps) per 64 columns of C (see tc_gemm_wg). */
#define WG (BN / 64 * 128)
#else
#define WG (WARPS_M * (BN / WN) * 32)
#endif
#define MI (WM / 16)
#define NI (WN / 8)
#define KSTEP (PREC >= 2 ? 16 : 8)

/* Whether a tile's rows run along k in global memory: A [M, K] and B^T stored [N, K]. */
#define A_KC (!TA)
#define B_KC (TB)
/* BT: B^T's tile (B as stored, [K, N]) is transposed on its way into local memory, so that B's
 * fragments, too, are k-contiguous there and LDSM applies. */
#define B_SKC (B_KC || BT)
#define PITCH(kc, mn) ((kc) ? BK + 4 : (mn) + 8)
#define TILE_FLOATS(kc, mn) ((kc) ? (mn) * (BK + 4) : BK * ((mn) + 8))
#define A_FLOATS TILE_FLOATS(A_KC, BM)
#define B_FLOATS TILE_FLOATS(B_SKC, BN)
/* float4 groups of a BK slice that each work-item moves. */
#define A_GROUPS (BM * BK / 4 / WG)
#define B_GROUPS (BN * BK / 4 / WG)
/* Slices of A and B held in local memory at once. */
#define BUFS (STAGES ? STAGES : 2)
/* tf32 rounding of a fragment value: done at the store to local memory by the register-staged
 * path, at the read by cp.async's, which cannot touch what it copies. */
#if PREC == 0 && STAGES
#define FRAG32(x) tf32(x)
#else
#define FRAG32(x) as_uint(x)
#endif

inline uint tf32(const float x)
{
    uint r;
    __asm__("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
    return r;
}

/* Two floats as a pair of 16-bit values, `lo` in the low half (the lower k index). */
inline uint pack16(const float lo, const float hi)
{
    uint r;
#if PREC == 2
    __asm__("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
#else
    __asm__("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
#endif
    return r;
}

inline void mma(float *c, const uint *a, const uint b0, const uint b1)
{
#if PREC <= 1
    __asm__("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
            "{%8,%9}, {%0,%1,%2,%3};"
            : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#elif PREC == 2
    __asm__("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
            "{%8,%9}, {%0,%1,%2,%3};"
            : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#else
    __asm__("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
            "{%8,%9}, {%0,%1,%2,%3};"
            : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#endif
}

/* Element (row r of the tile, k) of a tile in local memory. */
#define AT(s, kc, mn, r, k) (s)[(kc) ? (r) * (BK + 4) + (k) : (k) * ((mn) + 8) + (r)]

/*
 * float4 group v of a BK slice of an operand whose tile has `mn` rows (BM or BN) out of `rows`:
 * k-contiguous groups run along k, the others along the tile's rows. Outside the matrix reads 0.
 * Groups that are stored transposed (`tr`) take k fastest: a warp's 32 groups are then 32 / BK
 * runs of BK rows, and their scalar stores into a [mn][BK + 4] tile fall on few shared banks.
 */
inline int group_row(const int kc, const int tr, const int mn, const int v)
{
    return kc ? v / (BK / 4) : tr ? v / BK * 4 : v % (mn / 4) * 4;
}

inline int group_k(const int kc, const int tr, const int mn, const int v)
{
    return kc ? v % (BK / 4) * 4 : tr ? v % BK : v / (mn / 4);
}

inline float4 load_group(__global const float *p, const int ld, const int kc, const int tr,
                         const int mn, const int rows, const int depth, const int r0, const int k0,
                         const int v, const bool full)
{
    const int r = r0 + group_row(kc, tr, mn, v);
    const int k = k0 + group_k(kc, tr, mn, v);
    __global const float *q = p + (kc ? r * ld + k : k * ld + r);
    if (full && VEC)
        return *(__global const float4 *)q;
    float4 x = (float4)(0.0f);
    if (kc) {
        if (r < rows) {
            x.x = k < depth ? q[0] : 0.0f;
            x.y = k + 1 < depth ? q[1] : 0.0f;
            x.z = k + 2 < depth ? q[2] : 0.0f;
            x.w = k + 3 < depth ? q[3] : 0.0f;
        }
    } else if (k < depth) {
        x.x = r < rows ? q[0] : 0.0f;
        x.y = r + 1 < rows ? q[1] : 0.0f;
        x.z = r + 2 < rows ? q[2] : 0.0f;
        x.w = r + 3 < rows ? q[3] : 0.0f;
    }
    return x;
}

inline void store_group(__local float *s, const int kc, const int tr, const int mn, const int v,
                        float4 x)
{
#if PREC == 0
    /* Rounded once here rather than at every fragment read. */
    x = (float4)(as_float(tf32(x.x)), as_float(tf32(x.y)), as_float(tf32(x.z)),
                 as_float(tf32(x.w)));
#endif
    const int r = group_row(kc, tr, mn, v), k = group_k(kc, tr, mn, v);
    if (!kc && tr) {
        AT(s, 1, mn, r, k) = x.x;
        AT(s, 1, mn, r + 1, k) = x.y;
        AT(s, 1, mn, r + 2, k) = x.z;
        AT(s, 1, mn, r + 3, k) = x.w;
        return;
    }
    *(__local float4 *)&AT(s, kc, mn, r, k) = x;
}

/* A __local pointer's integer value is its shared-window address, which PTX's shared-memory
 * instructions take. */
inline uint shared_addr(__local const float *s)
{
    return (uint)(size_t)s;
}

/* cp.async of 16 (or 4) bytes from q to s, of which the first `valid` are read and the rest
 * zero-filled: valid 0 reads nothing. */
inline void copy16(__local float *s, __global const float *q, const uint valid)
{
    __asm__ volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;"
                     :
                     : "r"(shared_addr(s)), "l"((ulong)q), "r"(valid)
                     : "memory");
}

inline void copy4(__local float *s, __global const float *q, const uint valid)
{
    __asm__ volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;"
                     :
                     : "r"(shared_addr(s)), "l"((ulong)q), "r"(valid)
                     : "memory");
}

/* The float4 group at row gr, depth gk of an operand: its address, and in *along how many of its
 * lanes lie inside the matrix (it runs along k where kc, along the rows otherwise). */
inline __global const float *group_source(__global const float *p, const int ld, const int kc,
                                          const int rows, const int depth, const int gr,
                                          const int gk, int *along)
{
    *along = (kc ? gr < rows : gk < depth) ? min(kc ? depth - gk : rows - gr, 4) : 0;
    return p + (kc ? gr * ld + gk : gk * ld + gr);
}

/* One 16-byte copy of the group at q to d: lanes outside the matrix are zero-filled and read
 * nothing; their source address is p itself, always valid. */
inline void copy_lanes(__local float *d, __global const float *p, __global const float *q,
                       const int along, const bool full)
{
    if (full)
        copy16(d, q, 16);
    else
        copy16(d, along > 0 ? q : p, 4 * max(along, 0));
}

/* float4 group v of a BK slice (load_group's), copied straight into the tile in local memory as
 * one 16-byte copy (four 4-byte ones where BT transposes it). */
inline void copy_group(__local float *s, __global const float *p, const int ld, const int kc,
                       const int tr, const int mn, const int rows, const int depth, const int r0,
                       const int k0, const int v, const bool full)
{
    if (TC_PROBE == 1)
        return;
    const int r = group_row(kc, tr, mn, v), k = group_k(kc, tr, mn, v);
    int along;
    __global const float *q = group_source(p, ld, kc, rows, depth, r0 + r, k0 + k, &along);
    if (!kc && tr) {
#pragma unroll
        for (int e = 0; e < 4; e++)
            copy4(&AT(s, 1, mn, r + e, k), e < along ? q + e : p, e < along ? 4 : 0);
        return;
    }
    copy_lanes(&AT(s, kc, mn, r, k), p, q, along, full);
}

inline void copy_commit(void)
{
    __asm__ volatile("cp.async.commit_group;" ::: "memory");
}

/* Waits until this work-item's copies of the slice AHEAD - 1 commits back (the oldest in flight)
 * have landed; a barrier then makes everyone's visible. */
inline void copy_wait(void)
{
#if AHEAD == 1
    __asm__ volatile("cp.async.wait_group 0;" ::: "memory");
#elif AHEAD == 2
    __asm__ volatile("cp.async.wait_group 1;" ::: "memory");
#elif AHEAD == 3
    __asm__ volatile("cp.async.wait_group 2;" ::: "memory");
#elif AHEAD == 4
    __asm__ volatile("cp.async.wait_group 3;" ::: "memory");
#elif AHEAD == 5
    __asm__ volatile("cp.async.wait_group 4;" ::: "memory");
#elif AHEAD == 6
    __asm__ volatile("cp.async.wait_group 5;" ::: "memory");
#elif AHEAD > 6
#error "the cp.async rings copy at most 6 slices ahead"
#endif
}

/* Elements k and k + 1 of row r as a 16-bit pair; one 8-byte read where the row runs along k. */
inline uint pair16(__local const float *s, const int kc, const int mn, const int r, const int k)
{
    if (kc) {
        const float2 v = *(__local const float2 *)(s + r * (BK + 4) + k);
        return pack16(v.x, v.y);
    }
    return pack16(AT(s, kc, mn, r, k), AT(s, kc, mn, r, k + 1));
}

/*
 * ldmatrix: `count` (2 or 4) 8 x 4 blocks of 32-bit values, each lane passing the address of one
 * block row (lanes 8m..8m+7: block m); lane 4g + t receives (row g, column t) of each block, which
 * is the tf32 fragment layout.
 */
inline void ldsm(uint *d, __local const float *row, const int count)
{
    const uint addr = shared_addr(row);
    if (count == 4)
        __asm__ volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                         : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
                         : "r"(addr));
    else
        __asm__ volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];"
                         : "=r"(d[0]), "=r"(d[1])
                         : "r"(addr));
}

/*
 * acc += the warp's share of one BK slice of the product, from the tiles as and bs in local
 * memory; (wm, wn) is the warp's sub-tile.
 */
inline void slice_product(float acc[MI][NI][4], __local const float *as, __local const float *bs,
                          const int wm, const int wn, const int lane)
{
    if (TC_PROBE == 2)
        return;
    const int g = lane / 4, t = lane % 4;
#if PREC == 1
    /* The tensor cores' FP32 accumulation truncates: chained over all of K its error grows
     * linearly with K (2.6e-4 relative at K = 8192 on an H200, twenty times cuBLAS's FP32).
     * tf32x3 sums each slice from zero and adds it to acc with an ordinary, rounded add. */
    float part[MI][NI][4];
#pragma unroll
    for (int i = 0; i < MI; i++)
#pragma unroll
        for (int j = 0; j < NI; j++)
            part[i][j][0] = part[i][j][1] = part[i][j][2] = part[i][j][3] = 0.0f;
#define SUM part
#else
#define SUM acc
#endif
#pragma unroll
    for (int ks = 0; ks < BK; ks += KSTEP) {
        uint a[MI][4], b[NI][2];
#if PREC == 1
        uint al[MI][4], bl[NI][2];
#endif
#pragma unroll
        for (int i = 0; i < MI; i++) {
            const int r = wm + i * 16 + g;
#if PREC >= 2
            const int k = ks + 2 * t;
            a[i][0] = pair16(as, A_KC, BM, r, k);
            a[i][1] = pair16(as, A_KC, BM, r + 8, k);
            a[i][2] = pair16(as, A_KC, BM, r, k + 8);
            a[i][3] = pair16(as, A_KC, BM, r + 8, k + 8);
#else
            float x[4];
#if LDSM && A_KC
            /* Matrix m of the four: rows + 8 (m & 1), columns + 4 (m >> 1): a0..a3. */
            uint d[4];
            ldsm(d, as + (wm + i * 16 + (lane / 8 & 1) * 8 + lane % 8) * (BK + 4) + ks +
                        lane / 16 * 4,
                 4);
#pragma unroll
            for (int e = 0; e < 4; e++)
                x[e] = as_float(d[e]);
#else
            x[0] = AT(as, A_KC, BM, r, ks + t);
            x[1] = AT(as, A_KC, BM, r + 8, ks + t);
            x[2] = AT(as, A_KC, BM, r, ks + t + 4);
            x[3] = AT(as, A_KC, BM, r + 8, ks + t + 4);
#endif
#pragma unroll
            for (int e = 0; e < 4; e++) {
#if PREC == 1
                a[i][e] = tf32(x[e]);
                al[i][e] = tf32(x[e] - as_float(a[i][e]));
#else
                a[i][e] = FRAG32(x[e]);
#endif
            }
#endif
        }
#if PREC < 2 && LDSM && B_SKC
        /* Two n-tiles per ldmatrix: matrix m is tile j + (m >> 1), columns + 4 (m & 1). */
#pragma unroll
        for (int j = 0; j < NI; j += 2) {
            uint d[4];
            ldsm(d, bs + (wn + (j + lane / 16) * 8 + lane % 8) * (BK + 4) + ks +
                        (lane / 8 & 1) * 4,
                 NI - j >= 2 ? 4 : 2);
#pragma unroll
            for (int e = 0; e < 4 && j + e / 2 < NI; e++) {
#if PREC == 1
                b[j + e / 2][e % 2] = tf32(as_float(d[e]));
                bl[j + e / 2][e % 2] = tf32(as_float(d[e]) - as_float(b[j + e / 2][e % 2]));
#else
                b[j + e / 2][e % 2] = FRAG32(as_float(d[e]));
#endif
            }
        }
#else
#pragma unroll
        for (int j = 0; j < NI; j++) {
            const int c = wn + j * 8 + g;
#if PREC >= 2
            const int k = ks + 2 * t;
            b[j][0] = pair16(bs, B_SKC, BN, c, k);
            b[j][1] = pair16(bs, B_SKC, BN, c, k + 8);
#else
            const float y0 = AT(bs, B_SKC, BN, c, ks + t), y1 = AT(bs, B_SKC, BN, c, ks + t + 4);
#if PREC == 1
            b[j][0] = tf32(y0);
            b[j][1] = tf32(y1);
            bl[j][0] = tf32(y0 - as_float(b[j][0]));
            bl[j][1] = tf32(y1 - as_float(b[j][1]));
#else
            b[j][0] = FRAG32(y0);
            b[j][1] = FRAG32(y1);
#endif
#endif
        }
#endif
#pragma unroll
        for (int i = 0; i < MI; i++)
#pragma unroll
            for (int j = 0; j < NI; j++) {
#if PREC == 1
                /* The small products first: they are the low bits of the sum. */
                mma(SUM[i][j], al[i], b[j][0], b[j][1]);
                mma(SUM[i][j], a[i], bl[j][0], bl[j][1]);
#endif
                mma(SUM[i][j], a[i], b[j][0], b[j][1]);
            }
    }
#if PREC == 1
#pragma unroll
    for (int i = 0; i < MI; i++)
#pragma unroll
        for (int j = 0; j < NI; j++)
#pragma unroll
            for (int e = 0; e < 4; e++)
                acc[i][j][e] += part[i][j][e];
#endif
#undef SUM
}

#if COUT == 0
typedef float ctype;
#define C_LOAD(q) (*(q))
#define C_ROUND(x) (x)
#else
typedef ushort ctype;
/* A 16-bit C: read exactly, written rounded to nearest even once, from the f32 result. */
inline float c_load16(__global const ushort *q)
{
#if COUT == 1
    float x;
    __asm__("cvt.f32.f16 %0, %1;" : "=f"(x) : "h"(*q));
    return x;
#else
    return as_float((uint)*q << 16);
#endif
}

inline ushort c_round16(const float x)
{
    ushort r;
#if COUT == 1
    __asm__("cvt.rn.f16.f32 %0, %1;" : "=h"(r) : "f"(x));
#else
    __asm__("cvt.rn.bf16.f32 %0, %1;" : "=h"(r) : "f"(x));
#endif
    return r;
}
#define C_LOAD(q) c_load16(q)
#define C_ROUND(x) c_round16(x)
#endif

#if !WGMMA
/* C = alpha acc + beta C for a warp's sub-tile, whose first row and column are r0 and c0. */
inline void store_tile(float acc[MI][NI][4], __global ctype *pc, const int ldc, const int M,
                       const int N, const int r0, const int c0, const int lane, const float alpha,
                       const float beta)
{
    const int g = lane / 4, t = lane % 4;
#pragma unroll
    for (int i = 0; i < MI; i++)
#pragma unroll
        for (int j = 0; j < NI; j++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const int r = r0 + i * 16 + g + (e >= 2 ? 8 : 0);
                const int c = c0 + j * 8 + 2 * t + (e & 1);
                if (r < M && c < N) {
                    __global ctype *q = pc + r * ldc + c;
                    const float x = alpha * acc[i][j][e];
                    *q = C_ROUND(beta == 0.0f ? x : x + beta * C_LOAD(q));
                }
            }
}
#endif


#if WGMMA
/*
 * tc_gemm_wg: Hopper's warpgroup MMA (wgmma, sm_90a), tf32. Built with the core's -kp-ptx-sm90a:
 * the sm_90a instructions sit behind "//KP:" in the asm, and the core re-targets the compiled
 * PTX (NVIDIA's OpenCL compiler emits sm_90, whose assembler refuses them).
 *
 * wgmma reads its B operand, and may read A, straight from local memory, but for tf32 only in a
 * K-major layout, and its A may instead come from registers. A row-major B is not K-major, so the
 * kernel computes C^T = op(B)^T op(A)^T: wgmma's A is op(B)^T (64 columns of C per warpgroup,
 * fragments read from local memory into registers), its B is op(A)^T, the A tile, which is
 * K-major where A's rows run along k (TA 0; the host runs other calls on tc_gemm).
 *
 * A work-group is BN / 64 warpgroups and computes a BM x BN tile of C; each warpgroup's wgmmas
 * (m64 n128 k8) cover its 64 columns and BM / 128 blocks of 128 rows, all accumulators in
 * registers. K advances BK at a time through a ring of STAGES slices filled by cp.async, AHEAD
 * slices ahead of the one multiplied; wgmma runs asynchronously, LAG (0 or 1) slices of it may
 * still be in flight when the next slice's fragments are read.
 */
#if PREC != 0 || !VEC || TA || STAGES - 1 - LAG < 1
#error "tc_gemm_wg: tf32, float4 operands, a k-contiguous A, and STAGES - 1 - LAG >= 1 slices ahead"
#endif
#define HALVES (BM / 128)

/* Element (m, k) of A's tile in wgmma's K-major layout without swizzling: 8 x 4 "core matrices"
 * of 128 contiguous bytes, 128 bytes apart along k and 32 BK bytes apart along m. */
#define A_CM(m, k) ((m) / 8 * (8 * BK) + (k) / 4 * 32 + (m) % 8 * 4 + (k) % 4)
/* Element (n, k) of B's tile (rows along k, or along n where TB): XOR-swizzled in float4 steps so
 * that a warp's fragment reads fall on 32 banks without the pads, which would not leave four
 * slices of 256 x 8 and 128 x 8 within 48 KB. */
#if TB
#define B_SW(n, k) ((n) * BK + ((k) ^ (n) / (32 / BK) % (BK / 4) * 4))
#else
#define B_SW(n, k) ((k) * BN + ((n) ^ (k) % 4 * 8))
#endif

/* wgmma's matrix descriptor of K-major data at p: start address, the k-direction (128 bytes)
 * and row-direction (32 BK bytes) strides, each over 16; no swizzling. */
inline ulong wg_desc(__local const float *p)
{
    return (ulong)(shared_addr(p) & 0x3FFFF) >> 4 | (ulong)(128 >> 4) << 16 |
           (ulong)(32 * BK >> 4) << 32;
}

inline void wg_copy_slice(__local float *as, __local float *bs, __global const float *pa,
                          const int lda, __global const float *pb, const int ldb, const int M,
                          const int N, const int K, const int m0, const int n0,
                          const bool full_mn, const int slice, const int slices, const int lid)
{
    if (TC_PROBE == 1)
        return;
    if (slice >= slices)
        return;
    const int k0 = slice * BK;
    const bool full = full_mn && k0 + BK <= K;
    int along;
#pragma unroll
    for (int i = 0; i < A_GROUPS; i++) {
        const int v = lid + i * WG;
        const int r = group_row(1, 0, BM, v), k = group_k(1, 0, BM, v);
        __global const float *q = group_source(pa, lda, 1, M, K, m0 + r, k0 + k, &along);
        copy_lanes(as + A_CM(r, k), pa, q, along, full);
    }
#pragma unroll
    for (int i = 0; i < B_GROUPS; i++) {
        const int v = lid + i * WG;
        const int r = group_row(B_KC, 0, BN, v), k = group_k(B_KC, 0, BN, v);
        __global const float *q = group_source(pb, ldb, B_KC, N, K, n0 + r, k0 + k, &along);
        copy_lanes(bs + B_SW(r, k), pb, q, along, full);
    }
}

/* wgmma reads A's tile unrounded (the tensor cores drop the low bits): each work-item rounds
 * the groups it copied, as tf32 precision asks (cvt.rna). */
inline void wg_round(__local float *as, const int lid)
{
    if (TC_PROBE == 3)
        return;
#pragma unroll
    for (int i = 0; i < A_GROUPS; i++) {
        const int v = lid + i * WG;
        __local float4 *x = (__local float4 *)(as + A_CM(group_row(1, 0, BM, v),
                                                         group_k(1, 0, BM, v)));
        const float4 y = *x;
        *x = (float4)(as_float(tf32(y.x)), as_float(tf32(y.y)), as_float(tf32(y.z)),
                      as_float(tf32(y.w)));
    }
}

/* Issues this warpgroup's wgmmas for one slice: fragments f of op(B)^T (rows n, n + 8 of the
 * tile; columns t and t + 4 of each k-step, the mma.m16n8k8 layout), op(A)^T from as. */
__attribute__((always_inline)) inline void wg_product(float d[HALVES][64], uint f[BK / 8][4],
                                                      __local const float *as)
{
    /* The fragments are computed before the wgmmas start: an instruction that defines one of
     * their inputs among them makes ptxas serialise the wgmmas. */
#pragma unroll
    for (int ks = 0; ks < BK / 8; ks++)
#pragma unroll
        for (int e = 0; e < 4; e++)
            __asm__ volatile("" : "+r"(f[ks][e])::"memory");
    if (TC_PROBE == 2)
        return;
    __asm__ volatile("//KP:wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
    for (int ks = 0; ks < BK / 8; ks++)
#pragma unroll
        for (int h = 0; h < HALVES; h++) {
            const ulong desc = wg_desc(as + A_CM(h * 128, ks * 8));
            float *c = d[h];
            __asm__ volatile("//KP:wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 {"
                             "%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,"
                             "%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,"
                             "%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,"
                             "%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63"
                             "}, {%64,%65,%66,%67}, %68, 1, 1, 1;"
                             : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3]), "+f"(c[4]),
                               "+f"(c[5]), "+f"(c[6]), "+f"(c[7]), "+f"(c[8]), "+f"(c[9]),
                               "+f"(c[10]), "+f"(c[11]), "+f"(c[12]), "+f"(c[13]), "+f"(c[14]),
                               "+f"(c[15]), "+f"(c[16]), "+f"(c[17]), "+f"(c[18]), "+f"(c[19]),
                               "+f"(c[20]), "+f"(c[21]), "+f"(c[22]), "+f"(c[23]), "+f"(c[24]),
                               "+f"(c[25]), "+f"(c[26]), "+f"(c[27]), "+f"(c[28]), "+f"(c[29]),
                               "+f"(c[30]), "+f"(c[31]), "+f"(c[32]), "+f"(c[33]), "+f"(c[34]),
                               "+f"(c[35]), "+f"(c[36]), "+f"(c[37]), "+f"(c[38]), "+f"(c[39]),
                               "+f"(c[40]), "+f"(c[41]), "+f"(c[42]), "+f"(c[43]), "+f"(c[44]),
                               "+f"(c[45]), "+f"(c[46]), "+f"(c[47]), "+f"(c[48]), "+f"(c[49]),
                               "+f"(c[50]), "+f"(c[51]), "+f"(c[52]), "+f"(c[53]), "+f"(c[54]),
                               "+f"(c[55]), "+f"(c[56]), "+f"(c[57]), "+f"(c[58]), "+f"(c[59]),
                               "+f"(c[60]), "+f"(c[61]), "+f"(c[62]), "+f"(c[63])
                             : "r"(f[ks][0]), "r"(f[ks][1]), "r"(f[ks][2]), "r"(f[ks][3]),
                               "l"(desc)
                             : "memory");
        }
    __asm__ volatile("//KP:wgmma.commit_group.sync.aligned;" ::: "memory");
}

/* Waits for this work-item's copies of the slice in `as` and rounds them; they reach wgmma (the
 * async proxy) after the fence and the next barrier. */
inline void wg_land(__local float *as, const int lid)
{
    copy_wait();
    wg_round(as, lid);
    if (TC_PROBE != 4)
        __asm__ volatile("//KP:fence.proxy.async.shared::cta;" ::: "memory");
}

/*
 * Slice s, which every work-item has landed: start the copy of slice s + AHEAD into the buffer
 * of slice s - 1 - LAG (whose wgmmas every warpgroup has waited for), issue slice s's wgmmas,
 * and land slice s + 1 while they run. Inlined (as wg_product is) so that the accumulators stay
 * in registers.
 */
__attribute__((always_inline)) inline void
wg_slice(float d[HALVES][64], uint f[BK / 8][4], __local float (*As)[BM * BK],
         __local float (*Bs)[BN * BK], __global const float *pa, const int lda,
         __global const float *pb, const int ldb, const int M, const int N, const int K,
         const int m0, const int n0, const bool full_mn, const int s, const int slices,
         const int lid, const int row, const int t)
{
    const int cur = s % STAGES;
    barrier(CLK_LOCAL_MEM_FENCE);
    wg_copy_slice(As[(s + AHEAD) % STAGES], Bs[(s + AHEAD) % STAGES], pa, lda, pb, ldb, M, N, K,
                  m0, n0, full_mn, s + AHEAD, slices, lid);
    copy_commit();
    __local const float *bs = Bs[cur];
#pragma unroll
    for (int ks = 0; ks < BK / 8; ks++) {
        f[ks][0] = tf32(bs[B_SW(row, ks * 8 + t)]);
        f[ks][1] = tf32(bs[B_SW(row + 8, ks * 8 + t)]);
        f[ks][2] = tf32(bs[B_SW(row, ks * 8 + t + 4)]);
        f[ks][3] = tf32(bs[B_SW(row + 8, ks * 8 + t + 4)]);
    }
    wg_product(d, f, As[cur]);
    if (s + 1 < slices)
        wg_land(As[(s + 1) % STAGES], lid);
#if LAG
    __asm__ volatile("//KP:wgmma.wait_group.sync.aligned 1;" ::: "memory");
#else
    __asm__ volatile("//KP:wgmma.wait_group.sync.aligned 0;" ::: "memory");
#endif
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void tc_gemm_wg(const int M, const int N, const int K, const float alpha, const float beta,
                __global const float *A, const kp_view2 av, __global const float *B,
                const kp_view2 bv, __global float *C, const kp_view2 cv)
{
    const int a_off = kp_offset(av), lda = kp_stride(av, 0), b_off = kp_offset(bv), ldb = kp_stride(bv, 0);
    const int c_off = kp_offset(cv), ldc = kp_stride(cv, 0);
    __local float As[STAGES][BM * BK] __attribute__((aligned(128)));
    __local float Bs[STAGES][BN * BK] __attribute__((aligned(128)));
    const int lid = get_local_id(0), warp = lid / 32, g = lid % 32 / 4, t = lid % 4;
    /* This work-item's first row of op(B)^T in the tile: warpgroup, warp of it, lane group. */
    const int row = warp / 4 * 64 + warp % 4 * 16 + g;
    const int tiles_n = (N + BN - 1) / BN, tile = get_group_id(0);
    const int m0 = tile / tiles_n * BM, n0 = tile % tiles_n * BN;
    __global const float *pa = A + a_off, *pb = B + b_off;
    const bool full_mn = m0 + BM <= M && n0 + BN <= N;

    float d[HALVES][64];
#pragma unroll
    for (int h = 0; h < HALVES; h++)
#pragma unroll
        for (int i = 0; i < 64; i++)
            d[h][i] = 0.0f;

    const int slices = (K + BK - 1) / BK;
    for (int s = 0; s < AHEAD; s++) {
        wg_copy_slice(As[s], Bs[s], pa, lda, pb, ldb, M, N, K, m0, n0, full_mn, s, slices, lid);
        copy_commit();
    }
    wg_land(As[0], lid);
    /* Two sets of fragment registers, since wgmma reads them after it is issued (LAG 1). */
    uint f0[BK / 8][4], f1[BK / 8][4];
    for (int s = 0; s < slices; s += 2) {
        wg_slice(d, f0, As, Bs, pa, lda, pb, ldb, M, N, K, m0, n0, full_mn, s, slices, lid, row,
                 t);
        if (s + 1 < slices)
            wg_slice(d, f1, As, Bs, pa, lda, pb, ldb, M, N, K, m0, n0, full_mn, s + 1, slices,
                     lid, row, t);
    }
    __asm__ volatile("//KP:wgmma.wait_group.sync.aligned 0;" ::: "memory");
    /* No read of the accumulators may move above the wait. */
#pragma unroll
    for (int h = 0; h < HALVES; h++)
#pragma unroll
        for (int i = 0; i < 64; i++)
            __asm__ volatile("" : "+f"(d[h][i])::"memory");

    /* d[h][4j + e] is C^T's (row + 8 (e >= 2), h 128 + 8 j + 2 t + e % 2): C's row m, column n. */
    __global float *pc = C + c_off;
#pragma unroll
    for (int h = 0; h < HALVES; h++)
#pragma unroll
        for (int i = 0; i < 64; i++) {
            const int n = n0 + row + (i % 4 >= 2 ? 8 : 0);
            const int m = m0 + h * 128 + i / 4 * 8 + 2 * t + i % 2;
            if (m < M && n < N) {
                __global float *q = pc + m * ldc + n;
                *q = beta == 0.0f ? alpha * d[h][i] : alpha * d[h][i] + beta * *q;
            }
        }
}
#endif

#if HALF
/*
 * HALF: tc_gemm on 16-bit tensors (PREC 2 f16 or 3 bf16; C f32 or, COUT, 16-bit). The tiles hold
 * the operands' own 16-bit values, so a slice costs half the bytes of the f32 kernel's at the
 * same depth, where the copies into local memory are what bounds tc_gemm. A ring of STAGES slices
 * (at least 2), each tile stored along the dimension it runs along in global memory with a pad
 * of 8 values, which puts the 8 rows of each ldmatrix on distinct banks. Fragments come through
 * ldmatrix, .trans where the tile runs along m or n. VEC here: offsets and row pitches are
 * multiples of 8 values, so a group of 8 is one 16-byte cp.async; otherwise the work-items load
 * the groups value by value and store them themselves (slower, same ring).
 */
#if PREC < 2
#error "16-bit tensors run in f16 or bf16"
#endif
#if STAGES < 2
#error "16-bit tensors run a ring of at least two slices"
#endif
#define H_TILE(kc, mn) ((kc) ? (mn) * (BK + 8) : BK * ((mn) + 8))
#define HT(s, kc, mn, r, k) (s)[(kc) ? (r) * (BK + 8) + (k) : (k) * ((mn) + 8) + (r)]
/* Groups of 8 values of a BK slice that each work-item moves. */
#define HA_GROUPS (BM * BK / 8 / WG)
#define HB_GROUPS (BN * BK / 8 / WG)

inline uint shared_addr16(__local const ushort *s)
{
    return (uint)(size_t)s;
}

/* Group v of a BK slice of an operand (tile rows mn of `rows`, depth `depth`): 8 values along
 * k where kc, along the rows otherwise; zero outside the matrix. */
inline void h_copy_group(__local ushort *s, __global const ushort *p, const int ld, const int kc,
                         const int mn, const int rows, const int depth, const int r0, const int k0,
                         const int v, const bool full)
{
    const int r = kc ? v / (BK / 8) : v % (mn / 8) * 8;
    const int k = kc ? v % (BK / 8) * 8 : v / (mn / 8);
    const int gr = r0 + r, gk = k0 + k;
    __global const ushort *q = p + (kc ? gr * ld + gk : gk * ld + gr);
    __local ushort *d = &HT(s, kc, mn, r, k);
    const int along = (kc ? gr < rows : gk < depth) ? min(kc ? depth - gk : rows - gr, 8) : 0;
#if VEC
    /* Lanes outside the matrix read nothing and are zero-filled; their source is p, valid. */
    __asm__ volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;"
                     :
                     : "r"(shared_addr16(d)), "l"((ulong)(along > 0 ? q : p)),
                       "r"(full ? 16 : 2 * max(along, 0))
                     : "memory");
#else
    uint x[4];
#pragma unroll
    for (int e = 0; e < 4; e++) {
        const uint lo = 2 * e < along ? q[2 * e] : 0, hi = 2 * e + 1 < along ? q[2 * e + 1] : 0;
        x[e] = lo | hi << 16;
    }
    *(__local uint4 *)d = (uint4)(x[0], x[1], x[2], x[3]);
#endif
}

/* ldmatrix of `count` (2 or 4) 8 x 8 matrices of 16-bit values, transposed (tr) or not: lane
 * 4 g + t receives row g, columns 2t and 2t + 1 of each (of its transpose with tr). */
inline void ldsm16(uint *d, __local const ushort *row, const int count, const bool tr)
{
    const uint a = shared_addr16(row);
    if (count == 4 && tr)
        __asm__ volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
                         : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
                         : "r"(a));
    else if (count == 4)
        __asm__ volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                         : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
                         : "r"(a));
    else if (tr)
        __asm__ volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0,%1}, [%2];"
                         : "=r"(d[0]), "=r"(d[1])
                         : "r"(a));
    else
        __asm__ volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];"
                         : "=r"(d[0]), "=r"(d[1])
                         : "r"(a));
}

/*
 * acc += the warp's share of one BK slice. Lane 8 q + i passes row i of matrix q. A's four
 * matrices are a0..a3: rows + 8 (q & 1), k + 8 (q >> 1). B's, per two n-tiles: tile j + (q >> 1),
 * k + 8 (q & 1), so d0 d1 are tile j's b0 b1 and d2 d3 tile j + 1's.
 */
inline void h_slice_product(float acc[MI][NI][4], __local const ushort *as,
                            __local const ushort *bs, const int wm, const int wn, const int lane)
{
    const int q = lane / 8, i8 = lane % 8;
#pragma unroll
    for (int ks = 0; ks < BK; ks += 16) {
        uint a[MI][4], b[NI][2];
#pragma unroll
        for (int i = 0; i < MI; i++) {
            const int r = wm + i * 16 + (q & 1) * 8, k = ks + (q >> 1) * 8;
            ldsm16(a[i], A_KC ? &HT(as, 1, BM, r + i8, k) : &HT(as, 0, BM, r, k + i8), 4, !A_KC);
        }
#pragma unroll
        for (int j = 0; j < NI; j += 2) {
            uint d[4];
            const int c = wn + (j + (q >> 1)) * 8, k = ks + (q & 1) * 8;
            ldsm16(d, B_KC ? &HT(bs, 1, BN, c + i8, k) : &HT(bs, 0, BN, c, k + i8),
                   NI - j >= 2 ? 4 : 2, !B_KC);
#pragma unroll
            for (int e = 0; e < 4 && j + e / 2 < NI; e++)
                b[j + e / 2][e % 2] = d[e];
        }
#pragma unroll
        for (int i = 0; i < MI; i++)
#pragma unroll
            for (int j = 0; j < NI; j++)
                mma(acc[i][j], a[i], b[j][0], b[j][1]);
    }
}

#endif

#if !WGMMA
/* The tiles' element type and how slices reach them and the tensor cores: tc_gemm's f32 path, or
 * HALF's 16-bit one (above). */
#if HALF
typedef ushort elem;
#define A_TILE H_TILE(A_KC, BM)
#define B_TILE H_TILE(B_KC, BN)
#define SLICE_A_GROUPS HA_GROUPS
#define SLICE_B_GROUPS HB_GROUPS
/* 16-bit tiles are never transposed on the way in (no BT). */
#define COPY_GROUP(s, p, ld, kc, tr, mn, rows, depth, r0, k0, v, full)                            \
    h_copy_group(s, p, ld, kc, mn, rows, depth, r0, k0, v, full)
#define SLICE_PRODUCT h_slice_product
#else
typedef float elem;
#define A_TILE A_FLOATS
#define B_TILE B_FLOATS
#define SLICE_A_GROUPS A_GROUPS
#define SLICE_B_GROUPS B_GROUPS
#define COPY_GROUP copy_group
#define SLICE_PRODUCT slice_product
#endif

#if STAGES
/* Slice `slice` of A and B into the tiles as and bs; nothing past the last of `slices`. */
inline void copy_slice(__local elem *as, __local elem *bs, __global const elem *pa, const int lda,
                       __global const elem *pb, const int ldb, const int M, const int N,
                       const int K, const int m0, const int n0, const bool full_mn,
                       const int slice, const int slices, const int lid)
{
    if (slice >= slices)
        return;
    const int k0 = slice * BK;
    const bool full = full_mn && k0 + BK <= K;
#pragma unroll
    for (int i = 0; i < SLICE_A_GROUPS; i++)
        COPY_GROUP(as, pa, lda, A_KC, 0, BM, M, K, m0, k0, lid + i * WG, full);
#pragma unroll
    for (int i = 0; i < SLICE_B_GROUPS; i++)
        COPY_GROUP(bs, pb, ldb, B_KC, BT, BN, N, K, n0, k0, lid + i * WG, full);
}
#endif

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void tc_gemm(const int M, const int N, const int K, const float alpha, const float beta,
             __global const elem *A, const kp_view2 av, __global const elem *B, const kp_view2 bv,
             __global ctype *C, const kp_view2 cv)
{
    const int a_off = kp_offset(av), lda = kp_stride(av, 0), b_off = kp_offset(bv), ldb = kp_stride(bv, 0);
    const int c_off = kp_offset(cv), ldc = kp_stride(cv, 0);
    /* Aligned for the 16-byte stores and copies (each tile's size is a multiple of 16 bytes). */
    __local elem As[BUFS][A_TILE] __attribute__((aligned(16)));
    __local elem Bs[BUFS][B_TILE] __attribute__((aligned(16)));
    const int lid = get_local_id(0), lane = lid % 32, warp = lid / 32;
    const int wm = warp % WARPS_M * WM, wn = warp / WARPS_M * WN;
    /* A 1-D range (NVIDIA caps a range's second dimension at 65535 work-groups). */
    const int tiles_n = (N + BN - 1) / BN, tile = get_group_id(0);
    const int m0 = tile / tiles_n * BM, n0 = tile % tiles_n * BN;
    __global const elem *pa = A + a_off, *pb = B + b_off;
    const bool full_mn = m0 + BM <= M && n0 + BN <= N;

    float acc[MI][NI][4];
#pragma unroll
    for (int i = 0; i < MI; i++)
#pragma unroll
        for (int j = 0; j < NI; j++)
            acc[i][j][0] = acc[i][j][1] = acc[i][j][2] = acc[i][j][3] = 0.0f;

    const int slices = (K + BK - 1) / BK;
#if STAGES
    /* Slices 0 .. STAGES - 2 in flight; a commit per slice, empty or not, keeps copy_wait's
     * count of groups right. HALF without VEC stores its groups itself, into the buffer that the
     * barrier has just freed; the next barrier publishes them. */
    for (int s = 0; s < STAGES - 1; s++) {
        copy_slice(As[s], Bs[s], pa, lda, pb, ldb, M, N, K, m0, n0, full_mn, s, slices, lid);
        copy_commit();
    }
    int cur = 0, next = STAGES - 1;
    for (int s = 0; s < slices; s++) {
        copy_wait();
        /* After it, slice s is everyone's, and no warp still reads the buffer that slice
         * s + STAGES - 1 goes into (slice s - 1's). */
        barrier(CLK_LOCAL_MEM_FENCE);
        copy_slice(As[next], Bs[next], pa, lda, pb, ldb, M, N, K, m0, n0, full_mn,
                   s + STAGES - 1, slices, lid);
        copy_commit();
        SLICE_PRODUCT(acc, As[cur], Bs[cur], wm, wn, lane);
        cur = cur + 1 == STAGES ? 0 : cur + 1;
        next = next + 1 == STAGES ? 0 : next + 1;
    }
#else
    float4 ra[A_GROUPS], rb[B_GROUPS];
    if (slices > 0) {
        const bool full = full_mn && BK <= K;
#pragma unroll
        for (int i = 0; i < A_GROUPS; i++)
            ra[i] = load_group(pa, lda, A_KC, 0, BM, M, K, m0, 0, lid + i * WG, full);
#pragma unroll
        for (int i = 0; i < B_GROUPS; i++)
            rb[i] = load_group(pb, ldb, B_KC, BT, BN, N, K, n0, 0, lid + i * WG, full);
#pragma unroll
        for (int i = 0; i < A_GROUPS; i++)
            store_group(As[0], A_KC, 0, BM, lid + i * WG, ra[i]);
#pragma unroll
        for (int i = 0; i < B_GROUPS; i++)
            store_group(Bs[0], B_KC, BT, BN, lid + i * WG, rb[i]);
    }
    barrier(CLK_LOCAL_MEM_FENCE);

    for (int s = 0; s < slices; s++) {
        const int cur = s & 1;
        const bool more = s + 1 < slices;
        if (more) {
            const int k0 = (s + 1) * BK;
            const bool full = full_mn && k0 + BK <= K;
#pragma unroll
            for (int i = 0; i < A_GROUPS; i++)
                ra[i] = load_group(pa, lda, A_KC, 0, BM, M, K, m0, k0, lid + i * WG, full);
#pragma unroll
            for (int i = 0; i < B_GROUPS; i++)
                rb[i] = load_group(pb, ldb, B_KC, BT, BN, N, K, n0, k0, lid + i * WG, full);
        }
        slice_product(acc, As[cur], Bs[cur], wm, wn, lane);
        if (more) {
#pragma unroll
            for (int i = 0; i < A_GROUPS; i++)
                store_group(As[cur ^ 1], A_KC, 0, BM, lid + i * WG, ra[i]);
#pragma unroll
            for (int i = 0; i < B_GROUPS; i++)
                store_group(Bs[cur ^ 1], B_KC, BT, BN, lid + i * WG, rb[i]);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
#endif

    store_tile(acc, C + c_off, ldc, M, N, m0 + wm, n0 + wn, lane, alpha, beta);
}
#endif
