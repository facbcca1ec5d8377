/* SPDX-License-Identifier: Apache-2.0 */
/* Data-parallel training over MPI (data-parallel.h): libkernelport-comm's buckets, or one rank
 * when the program was built without it (KP_EXAMPLE_MPI undefined) or started without mpirun. */
#include "data-parallel.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef KP_EXAMPLE_MPI
#include "kernelport/comm.h"
#endif

struct dp {
    int rank, size, local_rank;
    kp_runtime *rt;
#ifdef KP_EXAMPLE_MPI
    int mpi;
    kp_comm *comm;
    kp_comm_buckets *buckets;
    int bucket_of_part[CNN_PARTS]; /* the bucket that part's end starts, or -1 */
    kp_comm_range ranges[CNN_PARTS];
    size_t n_buckets;
#endif
};

dp *dp_init(int *argc, char ***argv)
{
    static dp d;
    d.size = 1;
#ifdef KP_EXAMPLE_MPI
    /* Started by a launcher: Open MPI, MPICH's Hydra and PMIx each leave their variables. */
    const char *vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"};
    for (int i = 0; i < 3 && !d.mpi; i++)
        d.mpi = getenv(vars[i]) != NULL;
    if (d.mpi) {
        MPI_Init(argc, argv);
        MPI_Comm_rank(MPI_COMM_WORLD, &d.rank);
        MPI_Comm_size(MPI_COMM_WORLD, &d.size);
        MPI_Comm node;
        MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, d.rank, MPI_INFO_NULL, &node);
        MPI_Comm_rank(node, &d.local_rank);
        MPI_Comm_free(&node);
    }
#endif
    return &d;
}

int dp_rank(const dp *d)
{
    return d->rank;
}

int dp_size(const dp *d)
{
    return d->size;
}

void dp_device(const dp *d, const char *spec, char *out, size_t size)
{
    size_t used = 0;
    for (const char *p = spec; *p && used + 1 < size; p++) {
        if (p[0] == '%' && p[1] == 'r') {
            used += (size_t)snprintf(out + used, size - used, "%d", d->local_rank);
            p++;
        } else {
            out[used++] = *p;
        }
        if (used >= size)
            used = size - 1;
    }
    out[used] = '\0';
}

kp_status dp_attach(dp *d, kp_runtime *rt, cnn *m, size_t bucket_bytes)
{
    d->rt = rt;
#ifdef KP_EXAMPLE_MPI
    if (!d->mpi)
        return KP_OK;
    kp_status st = kp_comm_create(rt, MPI_COMM_WORLD, NULL, &d->comm);
    const char *why = "", *transport = st == KP_OK ? kp_comm_transport(d->comm, &why) : NULL;
    if (transport && d->rank == 0)
        printf("collectives: %s transport (%s)\n", transport, why);
    /* The gradients in memory the communicator all-reduces in place: on the NCCL transport CUDA
     * memory imported into OpenCL, elsewhere an ordinary buffer. */
    kp_buffer *grad = NULL;
    if (st == KP_OK)
        st = kp_comm_buffer_create(d->comm, kp_buffer_size(cnn_grad_arena(m)), &grad);
    if (st == KP_OK)
        st = cnn_use_grad_arena(m, grad);
    kp_buffer *params = cnn_param_arena(m);
    if (st == KP_OK)
        st = kp_comm_broadcast(d->comm, params, 0, kp_buffer_size(params), 0);
    /* Parts in the backward's order, merged until a bucket holds bucket_bytes: each bucket costs
     * its syncs whatever its size, and the last one overlaps nothing. The parts' ranges are
     * adjacent (the arena holds the layers in order), so a merged bucket is one range. */
    kp_comm_range ranges[CNN_PARTS];
    size_t n = 0;
    int open = 0;
    int64_t lo = 0, hi = 0;
    for (int p = 0; p < CNN_PARTS; p++) {
        int64_t offset, count;
        cnn_bucket(m, p, &offset, &count);
        if (!open)
            hi = offset + count;
        lo = offset;
        open = 1;
        d->bucket_of_part[p] = -1;
        if ((size_t)(hi - lo) * sizeof(float) >= bucket_bytes || p == CNN_PARTS - 1) {
            ranges[n] = (kp_comm_range){.offset = (size_t)lo, .count = (size_t)(hi - lo)};
            d->bucket_of_part[p] = (int)n++;
            open = 0;
        }
    }
    if (st == KP_OK)
        st = kp_comm_buckets_create(d->comm, cnn_grad_arena(m), ranges, n, KP_COMM_MEAN,
                                    &d->buckets);
    if (st == KP_OK) {
        memcpy(d->ranges, ranges, n * sizeof *ranges);
        d->n_buckets = n;
    }
    if (st == KP_OK && d->rank == 0)
        printf(bucket_bytes ? "gradient buckets: %zu (layers merged to at least %zu KB)\n"
                            : "gradient buckets: %zu (one a layer)\n",
               n, bucket_bytes / 1024);
    return st;
#else
    (void)m;
    return KP_OK;
#endif
}

kp_status dp_part_done(dp *d, int part)
{
#ifdef KP_EXAMPLE_MPI
    if (d->buckets && d->bucket_of_part[part] >= 0)
        return kp_comm_buckets_start(d->buckets, (size_t)d->bucket_of_part[part]);
#endif
    (void)d;
    (void)part;
    return KP_OK;
}

size_t dp_buckets(const dp *d, int64_t *offset, int64_t *count)
{
#ifdef KP_EXAMPLE_MPI
    for (size_t k = 0; d->buckets && k < d->n_buckets; k++) {
        offset[k] = (int64_t)d->ranges[k].offset;
        count[k] = (int64_t)d->ranges[k].count;
    }
    return d->buckets ? d->n_buckets : 0;
#else
    (void)d;
    (void)offset;
    (void)count;
    return 0;
#endif
}

kp_status dp_bucket_ready(dp *d, size_t k)
{
#ifdef KP_EXAMPLE_MPI
    if (d->buckets)
        return kp_comm_buckets_wait(d->buckets, k);
#endif
    (void)d;
    (void)k;
    return KP_OK;
}

kp_status dp_gradients_ready(dp *d)
{
#ifdef KP_EXAMPLE_MPI
    if (d->buckets)
        return kp_comm_buckets_finish(d->buckets);
#endif
    (void)d;
    return KP_OK;
}

kp_status dp_mean(dp *d, double *v)
{
#ifdef KP_EXAMPLE_MPI
    if (d->comm) {
        float f = (float)*v;
        kp_status st = kp_comm_allreduce_host(d->comm, &f, 1, KP_COMM_MEAN);
        *v = f;
        return st;
    }
#endif
    (void)d;
    (void)v;
    return KP_OK;
}

kp_status dp_check_replicas(dp *d, cnn *m, char *err, size_t err_size)
{
#ifdef KP_EXAMPLE_MPI
    if (!d->comm)
        return KP_OK;
    kp_buffer *params = cnn_param_arena(m);
    const size_t bytes = kp_buffer_size(params);
    unsigned char *host = malloc(bytes);
    if (!host)
        return KP_ERR_OUT_OF_MEMORY;
    kp_status st = kp_buffer_read(d->rt, params, 0, bytes, host);
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < bytes; i++)
        h = (h ^ host[i]) * 0x100000001b3ull;
    free(host);
    uint64_t *all = calloc((size_t)d->size, sizeof *all);
    if (st == KP_OK && !all)
        st = KP_ERR_OUT_OF_MEMORY;
    if (st == KP_OK)
        MPI_Allgather(&h, 1, MPI_UINT64_T, all, 1, MPI_UINT64_T, MPI_COMM_WORLD);
    for (int r = 1; st == KP_OK && r < d->size; r++)
        if (all[r] != all[0]) {
            snprintf(err, err_size,
                     "the replicas differ: rank 0's parameters hash to %016llx, rank %d's to "
                     "%016llx",
                     (unsigned long long)all[0], r, (unsigned long long)all[r]);
            st = KP_ERR_VERIFY;
        }
    free(all);
    return st;
#else
    (void)d;
    (void)m;
    (void)err;
    (void)err_size;
    return KP_OK;
#endif
}

int dp_fail(dp *d, const char *message)
{
    if (d->size > 1)
        fprintf(stderr, "fashion-mnist: rank %d: %s\n", d->rank, message);
    else
        fprintf(stderr, "fashion-mnist: %s\n", message);
#ifdef KP_EXAMPLE_MPI
    if (d->mpi && d->size > 1) {
        if (d->comm)
            kp_comm_fail(d->comm, message);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
#endif
    return 1;
}

void dp_finish(dp *d)
{
#ifdef KP_EXAMPLE_MPI
    kp_comm_buckets_destroy(d->buckets);
    kp_comm_destroy(d->comm);
    d->buckets = NULL;
    d->comm = NULL;
    if (d->mpi)
        MPI_Finalize();
#else
    (void)d;
#endif
}
