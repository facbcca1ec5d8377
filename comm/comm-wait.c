/* SPDX-License-Identifier: Apache-2.0 */
/* Waiting for MPI requests with a deadline, watching for the other ranks' failure notices, and
 * the check that every rank entered the same collective. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <time.h>

#include "comm-internal.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Lists the ranks of the requests still pending ("0, 2") into buf. */
static void pending_ranks(const MPI_Request *reqs, const int *peers, int n, char *buf, size_t size)
{
    size_t used = 0;
    int last = -1;
    buf[0] = '\0';
    for (int i = 0; i < n && used + 16 < size; i++)
        if (reqs[i] != MPI_REQUEST_NULL && peers[i] != last) {
            used += (size_t)snprintf(buf + used, size - used, "%s%d", used ? ", " : "", peers[i]);
            last = peers[i];
        }
}

/* Gives up the requests of a failed wait: receives are cancelled (so no late message lands in
 * memory the caller frees), sends are left to complete on their own. */
static void abandon(MPI_Request *reqs, int n)
{
    for (int i = 0; i < n; i++)
        if (reqs[i] != MPI_REQUEST_NULL) {
            MPI_Cancel(&reqs[i]);
            MPI_Request_free(&reqs[i]);
        }
}

int comm_peer_failed(kp_comm *c, const char *fn)
{
    int noticed = 0;
    MPI_Status status;
    /* A null request tests as complete: the channel is closed, not a notice. */
    int rc = c->failure_req == MPI_REQUEST_NULL ? MPI_SUCCESS
                                                : MPI_Test(&c->failure_req, &noticed, &status);
    if (rc != MPI_SUCCESS || !noticed)
        return 0;
    c->failure_text[FAILURE_BYTES - 1] = '\0';
    comm_fail(c, KP_ERR_IO, fn, "rank %d failed: %s", status.MPI_SOURCE, c->failure_text);
    /* Already told by the failing rank: the others heard it too. */
    c->broken = strdup(kp_last_error(c->rt));
    return 1;
}

kp_status comm_agree_ok(kp_comm *c, const char *fn, char *no, int *all_ok)
{
    int mine = *no ? c->rank : c->size, first = c->size;
    int rc = MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, c->comm);
    if (rc != MPI_SUCCESS)
        return comm_mpi_fail(c, fn, "MPI_Allreduce", rc);
    *all_ok = first == c->size;
    if (*all_ok)
        return KP_OK;
    char text[FAILURE_BYTES];
    if (first == c->rank)
        snprintf(text, sizeof text, "rank %d: %s", c->rank, no);
    rc = MPI_Bcast(text, FAILURE_BYTES, MPI_CHAR, first, c->comm);
    if (rc != MPI_SUCCESS)
        return comm_mpi_fail(c, fn, "MPI_Bcast", rc);
    text[FAILURE_BYTES - 1] = '\0';
    memcpy(no, text, FAILURE_BYTES);
    return KP_OK;
}

kp_status comm_wait(kp_comm *c, const char *fn, MPI_Request *reqs, const int *peers, int n)
{
    const double start = now(), deadline = start + c->timeout_s;
    /* MPI moves a large message only while it is polled (fragment by fragment over shared
     * memory), so the first seconds poll without pause, yielding the core to any other thread
     * that wants it, as MPI_Wait itself spins. A peer still silent after that is late (compiling
     * its kernels, say): polls then pause, leaving the cores to the device's threads (PoCL runs
     * kernels on the host's cores). */
    const struct timespec pause = {0, 200000};
    for (long spins = 0;; spins++) {
        int done = 0, rc = MPI_Testall(n, reqs, &done, MPI_STATUSES_IGNORE);
        if (rc != MPI_SUCCESS) {
            comm_mpi_fail(c, fn, "MPI_Testall", rc);
            abandon(reqs, n);
            return comm_break(c, KP_ERR_IO);
        }
        if (done)
            return KP_OK;
        if (comm_peer_failed(c, fn)) {
            abandon(reqs, n);
            return KP_ERR_IO;
        }
        const double t = now();
        if (t > deadline) {
            char ranks[256];
            pending_ranks(reqs, peers, n, ranks, sizeof ranks);
            comm_fail(c, KP_ERR_IO, fn,
                      "rank %d timed out after %g s waiting for rank(s) %s (collective %llu; "
                      "KP_COMM_TIMEOUT or kp_comm_options.timeout_s sets the limit)",
                      c->rank, c->timeout_s, ranks, (unsigned long long)c->calls);
            abandon(reqs, n);
            return comm_break(c, KP_ERR_IO);
        }
        if (t - start > 2.0)
            nanosleep(&pause, NULL);
        else
            sched_yield();
    }
}

static const char *call_name(int kind)
{
    switch (kind) {
    case CALL_ALLREDUCE_SUM:
        return "all-reduce (sum)";
    case CALL_ALLREDUCE_MEAN:
        return "all-reduce (mean)";
    case CALL_BROADCAST:
        return "broadcast";
    case CALL_BARRIER:
        return "barrier";
    case CALL_NCCL_SUM:
        return "all-reduce (sum) of a kp_comm_buffer_create buffer, through NCCL,";
    case CALL_NCCL_MEAN:
        return "all-reduce (mean) of a kp_comm_buffer_create buffer, through NCCL,";
    case CALL_BUCKETS_SUM:
        return "round of buckets (sum)";
    case CALL_BUCKETS_MEAN:
        return "round of buckets (mean)";
    default:
        return "an unknown collective";
    }
}

static void describe(const int64_t *call, char *buf, size_t size)
{
    if (call[1] == CALL_BARRIER)
        snprintf(buf, size, "barrier");
    else if (call[1] == CALL_BROADCAST)
        snprintf(buf, size, "broadcast of %lld bytes from rank %lld", (long long)call[2],
                 (long long)call[3]);
    else if (call[1] == CALL_BUCKETS_SUM || call[1] == CALL_BUCKETS_MEAN)
        snprintf(buf, size, "%s of %lld floats in %lld buckets", call_name((int)call[1]),
                 (long long)call[2], (long long)call[3]);
    else
        snprintf(buf, size, "%s of %lld floats", call_name((int)call[1]), (long long)call[2]);
}

kp_status comm_exchange(kp_comm *c, const char *fn, int tag, const int64_t *mine, int64_t *theirs,
                        int count)
{
    const int p = c->size;
    int64_t none = 0;
    MPI_Request *reqs = malloc(2 * (size_t)p * sizeof *reqs);
    int *peers = calloc(2 * (size_t)p, sizeof *peers);
    kp_status st =
        reqs && peers ? KP_OK : comm_fail(c, KP_ERR_OUT_OF_MEMORY, fn, "out of host memory");
    int n = 0;
    for (int r = 0; st == KP_OK && r < p; r++) {
        if (r == c->rank)
            continue;
        int rc = MPI_Irecv(count ? theirs + (size_t)count * (size_t)r : &none, count, MPI_INT64_T,
                           r, tag, c->comm, &reqs[n]);
        if (rc == MPI_SUCCESS) {
            peers[n++] = r;
            rc = MPI_Isend(count ? mine : &none, count, MPI_INT64_T, r, tag, c->comm, &reqs[n]);
        }
        if (rc == MPI_SUCCESS)
            peers[n++] = r;
        else
            st = comm_break(c, comm_mpi_fail(c, fn, "MPI_Isend/MPI_Irecv", rc));
    }
    if (st == KP_OK)
        st = comm_wait(c, fn, reqs, peers, n);
    free(reqs);
    free(peers);
    return st;
}

kp_status comm_agree(kp_comm *c, const char *fn, int kind, uint64_t count, int root)
{
    c->calls++;
    const int p = c->size;
    if (p == 1)
        return KP_OK;
    int64_t mine[4] = {(int64_t)c->calls, kind, (int64_t)count, root};
    int64_t *theirs = malloc((size_t)p * sizeof mine);
    kp_status st = theirs ? comm_exchange(c, fn, TAG_CALL, mine, theirs, 4)
                          : comm_fail(c, KP_ERR_OUT_OF_MEMORY, fn, "out of host memory");
    for (int r = 0; st == KP_OK && r < p; r++) {
        const int64_t *t = theirs + 4 * r;
        if (r == c->rank || memcmp(t, mine, sizeof mine) == 0)
            continue;
        char a[128], b[128];
        describe(mine, a, sizeof a);
        describe(t, b, sizeof b);
        st = comm_fail(c, KP_ERR_INVALID_ARG, fn,
                       "the ranks called different collectives: rank %d called %s (its call "
                       "%lld), rank %d called %s (its call %lld)",
                       c->rank, a, (long long)mine[0], r, b, (long long)t[0]);
        /* Every rank sees the difference itself: no notice needed, but the communicator's
         * message streams no longer match. */
        c->broken = strdup(kp_last_error(c->rt));
    }
    free(theirs);
    return st;
}
