/* SPDX-License-Identifier: Apache-2.0 */
/*
 * KP_PROFILE: the device time of every kp_kernel_launch, summed per kernel and written when the
 * runtime is destroyed (docs/profiling.md). Each launch gets an event; events wait in a batch
 * and are read after a kp_finish once the batch is full, so a profiled program waits for the
 * device every PENDING launches and runs a little slower than it would.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime.h"

#define PENDING 1024

typedef struct total {
    const char *kernel; /* the descriptor's name: lives as long as the runtime */
    uint64_t calls;
    double seconds, max_seconds;
} total;

struct kp__profile {
    char *path; /* "stderr", or a file: JSON when it ends in ".json", else a table */
    struct {
        const char *kernel;
        kp_event *ev;
    } pending[PENDING];
    size_t n_pending;
    total *totals;
    size_t n_totals, cap_totals;
    uint64_t unread; /* events whose time the backend could not give */
};

kp_status kp__profile_open(kp_runtime *rt)
{
    const char *path = kp__env(rt, "KP_PROFILE");
    if (!path || !*path)
        return KP_OK;
    kp__profile *p = calloc(1, sizeof *p);
    if (!p || !(p->path = kp__strdup(path))) {
        free(p);
        return kp__fail(rt, KP_ERR_OUT_OF_MEMORY, "KP_PROFILE: out of host memory");
    }
    rt->profile = p;
    return KP_OK;
}

static total *find_total(kp__profile *p, const char *kernel)
{
    for (size_t i = 0; i < p->n_totals; i++)
        if (p->totals[i].kernel == kernel)
            return &p->totals[i];
    if (p->n_totals == p->cap_totals) {
        size_t cap = p->cap_totals ? 2 * p->cap_totals : 32;
        total *t = realloc(p->totals, cap * sizeof *t);
        if (!t)
            return NULL;
        p->totals = t;
        p->cap_totals = cap;
    }
    p->totals[p->n_totals] = (total){.kernel = kernel};
    return &p->totals[p->n_totals++];
}

/* Waits for the device, adds the pending events' times to the totals and frees them. Called
 * with rt->lock held. */
static void harvest(kp_runtime *rt, kp__profile *p)
{
    if (!p->n_pending)
        return;
    rt->ops->finish(rt->backend);
    for (size_t i = 0; i < p->n_pending; i++) {
        double s = 0;
        total *t = find_total(p, p->pending[i].kernel);
        if (t && kp_event_elapsed(rt, p->pending[i].ev, &s) == KP_OK) {
            t->calls++;
            t->seconds += s;
            t->max_seconds = s > t->max_seconds ? s : t->max_seconds;
        } else {
            p->unread++;
        }
        kp_event_destroy(rt, p->pending[i].ev);
    }
    p->n_pending = 0;
}

void kp__profile_add(kp_runtime *rt, const kp_kernel *k, kp_event *ev)
{
    kp__profile *p = rt->profile;
    pthread_mutex_lock(&rt->lock);
    if (p->n_pending == PENDING)
        harvest(rt, p);
    p->pending[p->n_pending].kernel = k->desc->name;
    p->pending[p->n_pending++].ev = ev;
    pthread_mutex_unlock(&rt->lock);
}

static int by_time(const void *a, const void *b)
{
    const total *x = a, *y = b;
    return (x->seconds < y->seconds) - (x->seconds > y->seconds);
}

static void write_table(FILE *f, const kp_runtime *rt, const kp__profile *p, double all)
{
    uint64_t calls = 0;
    for (size_t i = 0; i < p->n_totals; i++)
        calls += p->totals[i].calls;
    fprintf(f,
            "Kernelport profile on %s: %llu launches, %.3f ms of device time (each launch from "
            "its first command's start to its last one's end; nested launches count in their "
            "caller)\n",
            kp__device(rt)->name, (unsigned long long)calls, 1e3 * all);
    fprintf(f, "%-36s %8s %12s %7s %11s %11s\n", "kernel", "calls", "total ms", "%", "mean us",
            "max us");
    for (size_t i = 0; i < p->n_totals; i++) {
        const total *t = &p->totals[i];
        fprintf(f, "%-36s %8llu %12.3f %6.1f%% %11.2f %11.2f\n", t->kernel,
                (unsigned long long)t->calls, 1e3 * t->seconds,
                all > 0 ? 100.0 * t->seconds / all : 0.0,
                t->calls ? 1e6 * t->seconds / (double)t->calls : 0.0, 1e6 * t->max_seconds);
    }
    if (p->unread)
        fprintf(f, "(%llu launches had no device time)\n", (unsigned long long)p->unread);
}

static void write_json(FILE *f, const kp_runtime *rt, const kp__profile *p, double all)
{
    fprintf(f, "{\n  \"device\": \"");
    for (const char *c = kp__device(rt)->name; *c; c++)
        fprintf(f, *c == '"' || *c == '\\' ? "\\%c" : "%c", *c);
    fprintf(f, "\",\n  \"total_seconds\": %.9g,\n  \"unread\": %llu,\n  \"kernels\": [", all,
            (unsigned long long)p->unread);
    for (size_t i = 0; i < p->n_totals; i++) {
        const total *t = &p->totals[i];
        fprintf(f,
                "%s\n    {\"kernel\": \"%s\", \"calls\": %llu, \"seconds\": %.9g, "
                "\"max_seconds\": %.9g}",
                i ? "," : "", t->kernel, (unsigned long long)t->calls, t->seconds, t->max_seconds);
    }
    fprintf(f, "\n  ]\n}\n");
}

void kp__profile_close(kp_runtime *rt)
{
    kp__profile *p = rt->profile;
    if (!p)
        return;
    pthread_mutex_lock(&rt->lock);
    harvest(rt, p);
    pthread_mutex_unlock(&rt->lock);
    /* No launch at all leaves totals NULL, which qsort may not take even for 0 elements. */
    if (p->n_totals)
        qsort(p->totals, p->n_totals, sizeof *p->totals, by_time);
    double all = 0;
    for (size_t i = 0; i < p->n_totals; i++)
        all += p->totals[i].seconds;
    int to_stderr = strcmp(p->path, "stderr") == 0;
    FILE *f = to_stderr ? stderr : fopen(p->path, "w");
    size_t len = strlen(p->path);
    if (!f) {
        kp__log(rt, KP_LOG_ERROR, "KP_PROFILE: cannot write %s", p->path);
    } else {
        if (len > 5 && strcmp(p->path + len - 5, ".json") == 0)
            write_json(f, rt, p, all);
        else
            write_table(f, rt, p, all);
        if (!to_stderr)
            fclose(f);
    }
    free(p->totals);
    free(p->path);
    free(p);
    rt->profile = NULL;
}
