/* SPDX-License-Identifier: Apache-2.0 */
/* The tuner's search: full grid when small, else coordinate descent then random points. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime.h"
#include "tune.h"

typedef struct search {
    const kp__tune_space *space;
    kp__tune_eval_fn eval;
    void *user;
    void (*report)(void *, const int64_t *, double, const char *);
    double deadline;  /* 0: none */
    int64_t *visited; /* points already evaluated, n per point */
    size_t n_visited, cap_visited;
    kp_tune_result *r;
    int have_best;
    int fatal;
} search;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int out_of_time(const search *s)
{
    return s->fatal || (s->deadline > 0 && now() > s->deadline);
}

static int seen(search *s, const int64_t *v)
{
    size_t n = s->space->n;
    for (size_t i = 0; i < s->n_visited; i++)
        if (memcmp(&s->visited[i * n], v, n * sizeof *v) == 0)
            return 1;
    if (s->n_visited == s->cap_visited) {
        size_t cap = s->cap_visited ? 2 * s->cap_visited : 64;
        int64_t *grown = realloc(s->visited, cap * n * sizeof *grown);
        if (!grown)
            return 0;
        s->visited = grown;
        s->cap_visited = cap;
    }
    memcpy(&s->visited[s->n_visited++ * n], v, n * sizeof *v);
    return 0;
}

/* Evaluates a point once; returns 1 when it is the new best. */
static int try_point(search *s, const int64_t *v, int *rejected)
{
    if (rejected)
        *rejected = 0;
    if (seen(s, v))
        return 0;
    double t = 0;
    char *why = NULL;
    kp__tune_outcome o = s->eval(s->user, v, &t, &why);
    const char *outcome = "slower";
    int best = 0;
    switch (o) {
    case KP__TUNE_MEASURED:
        s->r->tried++;
        if (!s->have_best || t < s->r->best_s) {
            s->have_best = 1;
            s->r->best_s = t;
            memcpy(s->r->values, v, s->space->n * sizeof *v);
            outcome = "best so far";
            best = 1;
        }
        break;
    case KP__TUNE_SKIPPED:
        s->r->skipped++;
        outcome = why ? why : "skipped";
        break;
    case KP__TUNE_REJECTED:
        s->r->rejected++;
        outcome = "wrong result: rejected";
        if (rejected)
            *rejected = 1;
        break;
    case KP__TUNE_FATAL:
        s->fatal = 1;
        outcome = why ? why : "fatal error";
        break;
    }
    if (s->report)
        s->report(s->user, v, o == KP__TUNE_MEASURED ? t : 0, outcome);
    free(why);
    return best;
}

static void grid(search *s)
{
    const kp__tune_space *sp = s->space;
    size_t idx[KP__TUNE_MAX] = {0};
    int64_t v[KP__TUNE_MAX];
    for (;;) {
        if (out_of_time(s))
            return;
        for (size_t i = 0; i < sp->n; i++)
            v[i] = sp->values[i][idx[i]];
        try_point(s, v, NULL);
        size_t i = 0;
        while (i < sp->n && ++idx[i] == sp->counts[i])
            idx[i++] = 0;
        if (i == sp->n)
            return;
    }
}

static void descent(search *s, int64_t *best)
{
    const kp__tune_space *sp = s->space;
    int improved = 1;
    while (improved && !out_of_time(s)) {
        improved = 0;
        for (size_t i = 0; i < sp->n && !out_of_time(s); i++) {
            int64_t v[KP__TUNE_MAX];
            memcpy(v, best, sp->n * sizeof *v);
            for (size_t c = 0; c < sp->counts[i] && !out_of_time(s); c++) {
                v[i] = sp->values[i][c];
                if (try_point(s, v, NULL)) {
                    memcpy(best, v, sp->n * sizeof *v);
                    improved = 1;
                }
            }
        }
    }
}

static double median3(double *v)
{
    double lo = v[0] < v[1] ? v[0] : v[1], hi = v[0] < v[1] ? v[1] : v[0];
    return v[2] < lo ? lo : v[2] > hi ? hi : v[2];
}

static void range_of(const double *v, size_t n, double *lo, double *hi)
{
    *lo = *hi = v[0];
    for (size_t i = 1; i < n; i++) {
        *lo = v[i] < *lo ? v[i] : *lo;
        *hi = v[i] > *hi ? v[i] : *hi;
    }
}

/* The search measured each point once, the start first; the final word is a fair comparison:
 * both timed again, alternating (start-best, best-start, ...) so that drift such as a device
 * warming up or another process favours neither, and a difference counts only beyond the spread
 * of those times. */
static void compare(search *s, const int64_t *start, kp__tune_time_fn time)
{
    kp_tune_result *r = s->r;
    size_t n = s->space->n;
    int moved = memcmp(r->values, start, n * sizeof *start) != 0;
    r->improved = moved;
    /* A start that could not be measured (it exceeds a limit here) loses to anything that runs. */
    if (!moved || !time || r->default_s <= 0)
        return;
    double a[KP__TUNE_ROUNDS], b[KP__TUNE_ROUNDS];
    for (int i = 0; i < KP__TUNE_ROUNDS; i++) {
        int start_first = i % 2 == 0;
        if (time(s->user, start_first ? start : r->values, start_first ? &a[i] : &b[i]) != 0 ||
            time(s->user, start_first ? r->values : start, start_first ? &b[i] : &a[i]) != 0) {
            /* Without a comparison the search's own times stand, and nothing is claimed. */
            r->improved = 0;
            return;
        }
    }
    _Static_assert(KP__TUNE_ROUNDS == 3, "median3");
    double a_lo, a_hi, b_lo, b_hi;
    range_of(a, KP__TUNE_ROUNDS, &a_lo, &a_hi);
    range_of(b, KP__TUNE_ROUNDS, &b_lo, &b_hi);
    r->default_s = median3(a);
    r->best_s = median3(b);
    double na = r->default_s > 0 ? (a_hi - a_lo) / r->default_s : 0,
           nb = r->best_s > 0 ? (b_hi - b_lo) / r->best_s : 0;
    r->noise = na > nb ? na : nb;
    r->improved = b_hi < a_lo;
}

static uint64_t next_random(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

kp_status kp__tune_search(const kp__tune_space *space, kp__tune_eval_fn eval, kp__tune_time_fn time,
                          void *user, double budget_seconds, uint32_t grid_limit, uint64_t seed,
                          void (*report)(void *user, const int64_t *values, double seconds,
                                         const char *outcome),
                          kp_tune_result *result)
{
    memset(result, 0, sizeof *result);
    result->struct_size = sizeof *result;
    result->n_values = space->n;
    search s = {.space = space, .eval = eval, .user = user, .report = report, .r = result};
    if (budget_seconds > 0)
        s.deadline = now() + budget_seconds;
    double points = 1;
    for (size_t i = 0; i < space->n; i++)
        points *= (double)space->counts[i];

    int rejected;
    try_point(&s, space->start, &rejected);
    kp_status st = KP_OK;
    if (rejected) {
        st = KP_ERR_VERIFY;
    } else {
        result->default_s = s.have_best ? result->best_s : 0;
        if (points <= grid_limit) {
            grid(&s);
            result->exhaustive = !out_of_time(&s);
        } else {
            int64_t best[KP__TUNE_MAX];
            memcpy(best, s.have_best ? result->values : space->start, space->n * sizeof *best);
            descent(&s, best);
            uint64_t state = seed;
            /* Random points probe interactions the one-at-a-time descent cannot see. */
            for (size_t k = 0; k < 4 * space->n && !out_of_time(&s); k++) {
                int64_t v[KP__TUNE_MAX];
                for (size_t i = 0; i < space->n; i++)
                    v[i] = space->values[i][next_random(&state) % space->counts[i]];
                try_point(&s, v, NULL);
            }
        }
        if (s.fatal)
            st = KP_ERR_INTERNAL;
        else if (!s.have_best)
            st = KP_ERR_NOT_FOUND;
        else
            compare(&s, space->start, time);
    }
    if (s.have_best && result->best_s > 0 && result->default_s > 0)
        result->speedup = result->default_s / result->best_s;
    free(s.visited);
    return st;
}
