/* SPDX-License-Identifier: Apache-2.0 */
/* bench-allreduce (issue #29): kp_comm_allreduce of device buffers from 1 MB to 256 MB under
 * mpirun, on each transport (host staging; the node-shared segment and NCCL, on a buffer of
 * kp_comm_buffer_create, where they can be set up),
 * against the host-staging limit measured in the same run (each rank's device-to-host read and
 * host-to-device write of the buffer into pinned memory, the two copies every staged all-reduce
 * makes) and the MPI exchange alone (kp_comm_allreduce_host). Bus bandwidth as NCCL's tests define
 * it: size / time x 2 (P - 1) / P. The transports alternate repetition by repetition. Rank 0 prints
 * a table and writes JSON.
 *   mpirun -np 2 build/bin/bench-allreduce --device 'gpu:%r' --json allreduce.json
 *   [--transport staged|shared|nccl|both (staged and shared)|all (default)]
 * With --buckets N it times instead a round of N gradient buckets of each size (kp_comm_buckets):
 * before each bucket's start, simulated producers (a fill of --work-mb MB, 16 by default, on the
 * runtime's queue, the backward's part that writes the bucket), the round's finish, and the
 * device's work to its end; against the producers alone and, on the shared transport, the same
 * buckets each all-reduced blocking after its producers (kp_comm_allreduce: what the shared
 * transport's buckets did before they were pipelined). "hidden" is the share of the blocking
 * all-reduces' time the round hides behind the producers: (blocking - round) / (blocking -
 * producers). */
#include <CL/cl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernelport/comm.h"

static int rank, size;

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void die(kp_runtime *rt, const char *what, kp_status st)
{
    fprintf(stderr, "bench-allreduce: rank %d: %s: %s: %s\n", rank, what, kp_status_name(st),
            kp_last_error(rt));
    MPI_Abort(MPI_COMM_WORLD, 1);
}

/* The slowest rank's time of each repetition (every rank times the same collective), median. */
static double median_of_slowest(double *t, int reps)
{
    MPI_Allreduce(MPI_IN_PLACE, t, reps, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    qsort(t, (size_t)reps, sizeof *t, cmp);
    return t[reps / 2];
}

/* One round over buckets `ranges` of buf with producers of `work` (a fill of work_bytes) before
 * each: through b (kp_comm_buckets), or through kp_comm_allreduce of each bucket on c (b NULL), or
 * without any collective (both NULL). Returns the time to the device's end. */
static double bucket_round(kp_runtime *rt, kp_comm *c, kp_comm_buckets *b, kp_buffer *buf,
                           const kp_comm_range *ranges, size_t n, kp_buffer *work,
                           size_t work_bytes)
{
    const float zero = 0;
    kp_finish(rt);
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = now();
    kp_status st = KP_OK;
    for (size_t k = 0; st == KP_OK && k < n; k++) {
        st = kp_buffer_fill(rt, work, 0, work_bytes, &zero, sizeof zero);
        if (st == KP_OK && b)
            st = kp_comm_buckets_start(b, k);
        else if (st == KP_OK && c)
            st = kp_comm_allreduce(c, buf, ranges[k].offset, ranges[k].count, KP_COMM_MEAN);
    }
    if (st == KP_OK && b)
        st = kp_comm_buckets_finish(b);
    if (st == KP_OK)
        st = kp_finish(rt);
    if (st != KP_OK)
        die(rt, "a round of buckets", st);
    return now() - t0;
}

/* --buckets: a round of n buckets of each size on each transport, against the producers alone
 * and the blocking all-reduce of each bucket. */
static void bench_buckets(kp_runtime *rt, kp_comm *const comms[3], const int want[3],
                          kp_buffer *const bufs[3], size_t n, double min_mb, double max_mb,
                          double work_mb, int reps, FILE *json)
{
    static const char *names[3] = {"staged", "shared", "nccl"};
    const size_t work_bytes = (size_t)(work_mb * 1048576.0) / 4 * 4;
    kp_buffer *work = NULL;
    kp_status st = kp_buffer_create(rt, work_bytes ? work_bytes : 4, &work);
    kp_comm_range *ranges = malloc(n * sizeof *ranges);
    double *t = malloc(3 * (size_t)reps * sizeof *t);
    if (st != KP_OK || !ranges || !t)
        die(rt, "bucket buffers", st != KP_OK ? st : KP_ERR_OUT_OF_MEMORY);
    if (rank == 0)
        printf("%10s %8s %10s %12s %12s %12s %12s %8s\n", "MB", "buckets", "transport", "round",
               "producers", "blocking", "exposed", "hidden");
    int first = 1;
    for (double mb = min_mb; mb <= max_mb * 1.0001; mb *= 2) {
        const size_t count = (size_t)(mb * 1048576.0) / 4;
        for (size_t k = 0; k < n; k++) {
            const size_t b = count * k / n, e = count * (k + 1) / n;
            /* Last bucket first, as a backward produces them. */
            ranges[k] = (kp_comm_range){.offset = count - e, .count = e - b};
        }
        for (int k = 0; k < 3; k++) {
            if (!comms[k] || !want[k])
                continue;
            kp_comm_buckets *b = NULL;
            if ((st = kp_comm_buckets_create(comms[k], bufs[k], ranges, n, KP_COMM_MEAN, &b)) !=
                KP_OK)
                die(rt, "kp_comm_buckets_create", st);
            /* Untimed: the staging and the segments grow. */
            bucket_round(rt, comms[k], b, bufs[k], ranges, n, work, work_bytes);
            bucket_round(rt, comms[k], NULL, bufs[k], ranges, n, work, work_bytes);
            for (int r = 0; r < reps; r++) {
                t[r] = bucket_round(rt, comms[k], b, bufs[k], ranges, n, work, work_bytes);
                t[reps + r] = bucket_round(rt, NULL, NULL, bufs[k], ranges, n, work, work_bytes);
                t[2 * reps + r] =
                    bucket_round(rt, comms[k], NULL, bufs[k], ranges, n, work, work_bytes);
            }
            kp_comm_buckets_destroy(b);
            const double round = median_of_slowest(t, reps),
                         alone = median_of_slowest(t + reps, reps),
                         blocking = median_of_slowest(t + 2 * reps, reps),
                         hidden = blocking > alone ? (blocking - round) / (blocking - alone) : 0;
            if (rank == 0)
                printf("%10.2f %8zu %10s %9.3f ms %9.3f ms %9.3f ms %9.3f ms %7.1f%%\n", mb, n,
                       names[k], 1e3 * round, 1e3 * alone, 1e3 * blocking, 1e3 * (round - alone),
                       100 * hidden);
            if (json)
                fprintf(json,
                        "%s\n  {\"bytes\": %zu, \"buckets\": %zu, \"transport\": \"%s\", "
                        "\"work_bytes\": %zu, \"round_s\": %.9g, \"producers_s\": %.9g, "
                        "\"blocking_s\": %.9g}",
                        first ? "" : ",", count * 4, n, names[k], work_bytes, round, alone,
                        blocking);
            first = 0;
        }
    }
    free(t);
    free(ranges);
    kp_buffer_destroy(rt, work);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *device = NULL, *json_path = NULL;
    double min_mb = 1, max_mb = 256;
    int reps = 10, buckets = 0;
    double work_mb = 16;
    const char *transport = "all";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--device") && i + 1 < argc)
            device = argv[++i];
        else if (!strcmp(argv[i], "--json") && i + 1 < argc)
            json_path = argv[++i];
        else if (!strcmp(argv[i], "--min-mb") && i + 1 < argc)
            min_mb = atof(argv[++i]);
        else if (!strcmp(argv[i], "--max-mb") && i + 1 < argc)
            max_mb = atof(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--transport") && i + 1 < argc)
            transport = argv[++i];
        else if (!strcmp(argv[i], "--buckets") && i + 1 < argc)
            buckets = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--work-mb") && i + 1 < argc)
            work_mb = atof(argv[++i]);
        else {
            if (rank == 0)
                fprintf(stderr,
                        "usage: mpirun -np N bench-allreduce [--device SPEC (%%r: the "
                        "rank on its node)] [--min-mb 1] [--max-mb 256] [--reps 10] "
                        "[--transport staged|shared|nccl|both|all] [--buckets N [--work-mb 16]] "
                        "[--json FILE]\n");
            MPI_Finalize();
            return 2;
        }
    }
    const char *names[3] = {"staged", "shared", "nccl"};
    const int all = !strcmp(transport, "all"), both = !strcmp(transport, "both");
    int want[3], wanted = 0;
    for (int k = 0; k < 3; k++)
        wanted += want[k] = all || (both && k < 2) || !strcmp(transport, names[k]);
    if (reps < 1 || min_mb <= 0 || max_mb < min_mb || !wanted || buckets < 0 || work_mb < 0) {
        MPI_Finalize();
        return 2;
    }
    MPI_Comm node;
    int local = 0;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &local);
    MPI_Comm_free(&node);
    char spec[256] = "";
    for (size_t i = 0, o = 0; device && device[i] && o + 8 < sizeof spec; i++) {
        if (device[i] == '%' && device[i + 1] == 'r')
            o += (size_t)snprintf(spec + o, sizeof spec - o, "%d", local), i++;
        else
            spec[o++] = device[i];
    }
    kp_runtime_options opt = kp_runtime_options_default();
    opt.device = device ? spec : NULL;
    kp_runtime *rt = NULL;
    kp_status st = kp_runtime_create(&opt, &rt);
    if (st != KP_OK)
        die(NULL, "kp_runtime_create", st);
    kp_device_info dev = {.struct_size = sizeof dev};
    kp_runtime_device(rt, &dev, NULL);
    /* comms[0]: host staging (also the MPI-alone row's); comms[1]: the shared segment; comms[2]:
     * NCCL; each where it can be set up (kp_comm_create fails on every rank, with the reason,
     * where not). */
    kp_comm *comms[3] = {NULL, NULL, NULL};
    char no[3][512] = {"", "not asked for", "not asked for"};
    const uint32_t flags[3] = {KP_COMM_STAGED, KP_COMM_SHARED, KP_COMM_NCCL};
    kp_comm_options co = kp_comm_options_default();
    for (int k = 0; k < 3; k++) {
        co.flags = flags[k];
        if ((k == 0 || want[k]) &&
            (st = kp_comm_create(rt, MPI_COMM_WORLD, &co, &comms[k])) != KP_OK) {
            if (k == 0)
                die(rt, "kp_comm_create", st);
            snprintf(no[k], sizeof no[k], "%s", kp_last_error(rt));
        }
    }
    kp_comm *c = comms[0];
    void *ctx = NULL, *queue = NULL;
    const int cl = kp_runtime_opencl(rt, &ctx, &queue, NULL) == KP_OK;
    const size_t most = (size_t)(max_mb * 1048576.0);
    /* NCCL reduces only memory of kp_comm_buffer_create: its own buffer. */
    kp_buffer *buf = NULL, *bufs[3];
    if ((st = kp_buffer_create(rt, most, &buf)) != KP_OK)
        die(rt, "kp_buffer_create", st);
    bufs[0] = bufs[1] = bufs[2] = buf;
    if (comms[2] && (st = kp_comm_buffer_create(comms[2], most, &bufs[2])) != KP_OK)
        die(rt, "kp_comm_buffer_create", st);
    /* Pinned host memory, as the comm library stages through. */
    cl_mem pinned = NULL;
    float *host = NULL;
    cl_int err = CL_SUCCESS;
    if (cl && (pinned = clCreateBuffer(ctx, CL_MEM_ALLOC_HOST_PTR, most, NULL, &err)))
        host = clEnqueueMapBuffer(queue, pinned, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, most, 0,
                                  NULL, NULL, &err);
    const int is_pinned = host != NULL;
    if (!host && !(host = malloc(most)))
        die(rt, "host memory", KP_ERR_OUT_OF_MEMORY);
    for (size_t i = 0; i < most / 4; i++)
        host[i] = (float)(i % 1000) * 1e-3f;
    for (int k = 0; k < 3; k++)
        if ((k == 0 || bufs[k] != buf) &&
            (st = kp_buffer_write(rt, bufs[k], 0, most, host)) != KP_OK)
            die(rt, "kp_buffer_write", st);
    FILE *json = rank == 0 && json_path ? fopen(json_path, "w") : NULL;
    const double bus = 2.0 * (size - 1) / size;
    if (rank == 0) {
        printf("bench-allreduce: %d ranks, device %s, staging %s, median of %d (slowest rank)\n",
               size, dev.name, is_pinned ? "pinned" : "pageable", reps);
        printf("shared transport: %s\n", comms[1] ? "yes" : no[1]);
        printf("nccl transport: %s\n", comms[2] ? "yes" : no[2]);
        if (!buckets)
            printf("%10s %10s %12s %10s %12s %12s %12s %10s %12s\n", "MB", "transport",
                   "all-reduce", "bus GB/s", "read GB/s", "write GB/s", "limit GB/s", "of limit",
                   "MPI alone");
    }
    if (json)
        fprintf(json,
                "{\"benchmark\": \"bench-allreduce\", \"ranks\": %d, \"device\": \"%s\", "
                "\"pinned\": %d, \"shared\": %d, \"nccl\": %d, \"sizes\": [",
                size, dev.name, is_pinned, comms[1] != NULL, comms[2] != NULL);
    if (buckets) {
        if (rank == 0)
            printf("buckets: %d a round, producers: a fill of %g MB before each\n", buckets,
                   work_mb);
        bench_buckets(rt, comms, want, bufs, (size_t)buckets, min_mb, max_mb, work_mb, reps, json);
    }
    double *t = malloc(4 * (size_t)reps * sizeof *t),
           *tk[3] = {t + reps, t + 2 * (size_t)reps, t + 3 * (size_t)reps};
    int first = 1;
    for (double mb = min_mb; !buckets && mb <= max_mb * 1.0001; mb *= 2) {
        const size_t bytes = (size_t)(mb * 1048576.0) / 4 * 4, count = bytes / 4;
        /* One untimed round on each transport: the staging and the segment grow to this size. */
        for (int k = 0; k < 3; k++)
            if (comms[k] && want[k] &&
                (st = kp_comm_allreduce(comms[k], bufs[k], 0, count, KP_COMM_MEAN)) != KP_OK)
                die(rt, "kp_comm_allreduce", st);
        for (int r = 0; r < reps; r++)
            for (int k = 0; k < 3; k++) {
                if (!comms[k] || !want[k])
                    continue;
                MPI_Barrier(MPI_COMM_WORLD);
                const double t0 = now();
                if ((st = kp_comm_allreduce(comms[k], bufs[k], 0, count, KP_COMM_MEAN)) != KP_OK)
                    die(rt, "kp_comm_allreduce", st);
                tk[k][r] = now() - t0;
            }
        double tr[2];
        for (int which = 0; which < 2; which++) {
            for (int r = 0; r < reps; r++) {
                kp_finish(rt);
                const double t0 = now();
                st = which ? kp_buffer_write(rt, buf, 0, bytes, host)
                           : kp_buffer_read(rt, buf, 0, bytes, host);
                if (st != KP_OK)
                    die(rt, which ? "kp_buffer_write" : "kp_buffer_read", st);
                if (which)
                    kp_finish(rt);
                t[r] = now() - t0;
            }
            tr[which] = median_of_slowest(t, reps);
        }
        for (int r = 0; r < reps; r++) {
            MPI_Barrier(MPI_COMM_WORLD);
            const double t0 = now();
            if ((st = kp_comm_allreduce_host(c, host, count, KP_COMM_MEAN)) != KP_OK)
                die(rt, "kp_comm_allreduce_host", st);
            t[r] = now() - t0;
        }
        const double t_mpi = median_of_slowest(t, reps),
                     limit = bus * (double)bytes / (tr[0] + tr[1]) / 1e9;
        for (int k = 0; k < 3; k++) {
            if (!comms[k] || !want[k])
                continue;
            const double t_all = median_of_slowest(tk[k], reps),
                         busbw = bus * (double)bytes / t_all / 1e9;
            if (rank == 0)
                printf("%10.0f %10s %10.3f ms %10.2f %12.2f %12.2f %12.2f %9.1f%% %9.3f ms\n", mb,
                       names[k], 1e3 * t_all, busbw, (double)bytes / tr[0] / 1e9,
                       (double)bytes / tr[1] / 1e9, limit, 100 * busbw / limit, 1e3 * t_mpi);
            if (json)
                fprintf(json,
                        "%s\n  {\"bytes\": %zu, \"transport\": \"%s\", \"allreduce_s\": %.9g, "
                        "\"bus_gbs\": %.6g, \"read_s\": %.9g, \"write_s\": %.9g, "
                        "\"staging_limit_bus_gbs\": %.6g, \"mpi_host_s\": %.9g}",
                        first ? "" : ",", bytes, names[k], t_all, busbw, tr[0], tr[1], limit,
                        t_mpi);
            first = 0;
        }
    }
    if (json) {
        fprintf(json, "\n]}\n");
        fclose(json);
    }
    free(t);
    if (pinned) {
        clEnqueueUnmapMemObject(queue, pinned, host, 0, NULL, NULL);
        clFinish(queue);
        clReleaseMemObject(pinned);
    } else {
        free(host);
    }
    if (bufs[2] != buf)
        kp_buffer_destroy(rt, bufs[2]);
    kp_buffer_destroy(rt, buf);
    kp_comm_destroy(comms[2]);
    kp_comm_destroy(comms[1]);
    kp_comm_destroy(comms[0]);
    kp_runtime_destroy(rt);
    MPI_Finalize();
    return 0;
}
