/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Thread-block clusters through OpenCL (bench/probes/tc-cluster-probe.c): each work-group records
 * its rank in its cluster, the cluster's size and the cluster's index. Where the cluster has two
 * work-groups, each copies half of a 1 KB block into both work-groups' local memory with one
 * multicast bulk copy (completion counted by an mbarrier), then checks the whole block, and reads
 * its peer's copy through distributed shared memory. Those are what would let tc.gemm's tiles
 * share their copies from L2 (docs/kernels/tc.md).
 */
inline uint local_addr(__local const void *p)
{
    return (uint)(size_t)p;
}

inline void cluster_sync(void)
{
    __asm__ volatile("barrier.cluster.arrive.release.aligned;\n\t"
                     "barrier.cluster.wait.acquire.aligned;" ::
                         : "memory");
}

__kernel __attribute__((reqd_work_group_size(64, 1, 1)))
void probe(__global uint *out, __global const uint *src)
{
    __local uint block[256] __attribute__((aligned(128)));
    __local ulong bar __attribute__((aligned(8)));
    const int lid = get_local_id(0), g = get_group_id(0);
    uint rank, size, id;
    __asm__ volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
    __asm__ volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(size));
    __asm__ volatile("mov.u32 %0, %%clusterid.x;" : "=r"(id));
    __global uint *o = out + g * 4;
    if (lid == 0) {
        o[0] = rank;
        o[1] = size;
        o[2] = id;
    }
    if (size != 2)
        return;
    if (lid == 0) {
        __asm__ volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(local_addr(&bar))
                         : "memory");
        __asm__ volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    cluster_sync();
    const int base = g / 2 * 256;
    if (lid == 0) {
        __asm__ volatile("{ .reg .b64 st; mbarrier.arrive.expect_tx.shared::cta.b64 st, [%0], "
                         "1024; }" ::"r"(local_addr(&bar))
                         : "memory");
        __asm__ volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes."
                         "multicast::cluster [%0], [%1], 512, [%2], %3;" ::"r"(
                             local_addr(block + rank * 128)),
                         "l"(src + base + rank * 128), "r"(local_addr(&bar)), "h"((ushort)3)
                         : "memory");
    }
    uint done = 0;
    while (!done)
        __asm__ volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], 0; "
                         "selp.u32 %0, 1, 0, p; }"
                         : "=r"(done)
                         : "r"(local_addr(&bar))
                         : "memory");
    uint bad = 0, peer_addr, peer;
    for (int i = lid; i < 256; i += 64)
        bad += block[i] != src[base + i];
    __asm__ volatile("mapa.shared::cluster.u32 %0, %1, %2;"
                     : "=r"(peer_addr)
                     : "r"(local_addr(block + lid)), "r"(rank ^ 1));
    __asm__ volatile("ld.shared::cluster.u32 %0, [%1];" : "=r"(peer) : "r"(peer_addr) : "memory");
    bad += peer != src[base + lid];
    atomic_add(&o[3], bad);
    /* A work-group's local memory must outlive its peer's reads of it. */
    cluster_sync();
}
