/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench/probes/tc-ceilings: Hopper's wgmma from local memory, tf32 m64n128k8, two warpgroups per
 * work-group, operands resident (no copies in the loop). NVIDIA's OpenCL compiler targets sm_90,
 * whose assembler refuses wgmma, so the sm_90a instructions are written behind "//KP:" and
 * tc-ceilings re-targets the compiled PTX to sm_90a and removes the markers before loading it as
 * a binary. Operands in local memory use the canonical K-major layout without swizzling: 8 x 4
 * "core matrices" of 128 contiguous bytes, 128 bytes apart along k and 256 apart along rows.
 * Every accumulator register is named in the asm, hence the long operand list.
 */
inline ulong desc(__local const float *p)
{
    /* Start address / 16, then the k-direction and row-direction strides / 16 (128, 256). */
    return (ulong)((uint)(size_t)p & 0x3FFFF) >> 4 | (ulong)(128 >> 4) << 16 |
           (ulong)(256 >> 4) << 32;
}

__kernel __attribute__((reqd_work_group_size(256, 1, 1)))
void wgmma_peak(__global const float *in, __global float *out, const int iters)
{
    /* 128 rows of A and 128 of B, each 16 deep: two k-steps of 8. */
    __local float sa[128 * 16] __attribute__((aligned(128)));
    __local float sb[128 * 16] __attribute__((aligned(128)));
    const int l = get_local_id(0), wg = l / 128;
    for (int i = l; i < 128 * 16; i += 256) {
        sa[i] = in[i % 64];
        sb[i] = in[(i + 7) % 64];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    /* Stores by work-items reach wgmma (the async proxy) only after this fence. */
    __asm__ volatile("//KP:fence.proxy.async.shared::cta;" ::: "memory");
    float d[64];
    for (int i = 0; i < 64; i++)
        d[i] = 0.0f;
    __asm__ volatile("//KP:wgmma.fence.sync.aligned;" ::: "memory");
    for (int s = 0; s < iters; s++) {
        for (int k = 0; k < 2; k++) {
            const ulong da = desc(sa + wg * 64 * 16 + k * 8 * 64), db = desc(sb + k * 8 * 128);
            __asm__ volatile("{\n//KP:wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 {"
                             "%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,"
                             "%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,"
                             "%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,"
                             "%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63}, %64, %65, 1, 1, 1;\n}"
                             : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]),
                               "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]),
                               "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]),
                               "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]),
                               "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]),
                               "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]),
                               "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]),
                               "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
                               "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]),
                               "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]),
                               "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]),
                               "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]),
                               "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
                             : "l"(da), "l"(db)
                             : "memory");
        }
        __asm__ volatile("//KP:wgmma.commit_group.sync.aligned;" ::: "memory");
        __asm__ volatile("//KP:wgmma.wait_group.sync.aligned 1;" ::: "memory");
    }
    __asm__ volatile("//KP:wgmma.wait_group.sync.aligned 0;" ::: "memory");
    float sum = 0.0f;
    for (int i = 0; i < 64; i++)
        sum += d[i];
    out[get_global_id(0)] = sum; /* keeps the products from being optimised away */
}
