/* SPDX-License-Identifier: Apache-2.0 */
/* bench/probes/tc-ceilings: mma.sync's own throughput, from registers only (no memory in the
 * loop). Each warp runs `iters` rounds of 4 x 8 independent mma tiles, the fragments of a 64 x 64 warp tile.
 * Built after kernels/tc.cl, whose mma() (per PREC) it calls. */
__kernel __attribute__((reqd_work_group_size(128, 1, 1)))
void mma_peak(__global const uint *in, __global float *out, const int iters)
{
    const int lane = get_local_id(0) % 32;
    float acc[4][8][4];
    uint a[4][4], b[8][2];
    for (int i = 0; i < 4; i++)
        for (int e = 0; e < 4; e++)
            a[i][e] = in[(lane + i * 4 + e) % 64];
    for (int j = 0; j < 8; j++)
        for (int e = 0; e < 2; e++)
            b[j][e] = in[(lane + j * 2 + e) % 64];
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 8; j++)
            acc[i][j][0] = acc[i][j][1] = acc[i][j][2] = acc[i][j][3] = 0.0f;
    for (int s = 0; s < iters; s++) {
#pragma unroll
        for (int i = 0; i < 4; i++)
#pragma unroll
            for (int j = 0; j < 8; j++)
                mma(acc[i][j], a[i], b[j][0], b[j][1]);
    }
    float sum = 0.0f;
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 8; j++)
            sum += acc[i][j][0] + acc[i][j][1] + acc[i][j][2] + acc[i][j][3];
    out[get_global_id(0)] = sum; /* keeps the products from being optimised away */
}
