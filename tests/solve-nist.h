/* SPDX-License-Identifier: Apache-2.0 */
/* NIST StRD nonlinear regression problems for the solve tests: each model in the text form, and
 * a reader of NIST's .dat files (starting points, certified values, data). */
#ifndef KP_TEST_SOLVE_NIST_H
#define KP_TEST_SOLVE_NIST_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernelport/solve.h"
#include "test-util.h"

typedef struct nist_model {
    const char *name;
    const char *data; /* data slots, in the file's column order */
    const char *params;
    const char *text; /* the residual: model - y */
} nist_model;

static const nist_model nist_models[] = {
    {"Misra1a", "y x", "b1 b2", "b1*(1-exp(-b2*x)) - y"},
    {"Chwirut2", "y x", "b1 b2 b3", "exp(-b1*x)/(b2+b3*x) - y"},
    {"Chwirut1", "y x", "b1 b2 b3", "exp(-b1*x)/(b2+b3*x) - y"},
    {"Lanczos3", "y x", "b1 b2 b3 b4 b5 b6", "b1*exp(-b2*x) + b3*exp(-b4*x) + b5*exp(-b6*x) - y"},
    {"Gauss1", "y x", "b1 b2 b3 b4 b5 b6 b7 b8",
     "b1*exp(-b2*x) + b3*exp(-(x-b4)^2/b5^2) + b6*exp(-(x-b7)^2/b8^2) - y"},
    {"Gauss2", "y x", "b1 b2 b3 b4 b5 b6 b7 b8",
     "b1*exp(-b2*x) + b3*exp(-(x-b4)^2/b5^2) + b6*exp(-(x-b7)^2/b8^2) - y"},
    {"DanWood", "y x", "b1 b2", "b1*x^b2 - y"},
    {"Misra1b", "y x", "b1 b2", "b1*(1-(1+b2*x/2)^(-2)) - y"},
    {"Kirby2", "y x", "b1 b2 b3 b4 b5", "(b1 + b2*x + b3*x^2)/(1 + b4*x + b5*x^2) - y"},
    {"Hahn1", "y x", "b1 b2 b3 b4 b5 b6 b7",
     "(b1 + b2*x + b3*x^2 + b4*x^3)/(1 + b5*x + b6*x^2 + b7*x^3) - y"},
    {"Nelson", "y x1 x2", "b1 b2 b3", "b1 - b2*x1*exp(-b3*x2) - log(y)"},
    {"MGH17", "y x", "b1 b2 b3 b4 b5", "b1 + b2*exp(-x*b4) + b3*exp(-x*b5) - y"},
    {"Lanczos1", "y x", "b1 b2 b3 b4 b5 b6", "b1*exp(-b2*x) + b3*exp(-b4*x) + b5*exp(-b6*x) - y"},
    {"Lanczos2", "y x", "b1 b2 b3 b4 b5 b6", "b1*exp(-b2*x) + b3*exp(-b4*x) + b5*exp(-b6*x) - y"},
};
enum { NIST_MODELS = sizeof nist_models / sizeof *nist_models, NIST_MAX_OBS = 300 };

typedef struct nist_problem {
    int n_params, n_cols, n_obs;
    double start[2][8], certified[8];
    double rows[NIST_MAX_OBS * 3];
} nist_problem;

/* Reads tests/fixtures/nist/<name>.dat; 0 on success. */
static inline int nist_load(const char *name, nist_problem *p)
{
    char rel[128], line[512];
    snprintf(rel, sizeof rel, "nist/%s.dat", name);
    FILE *f = fopen(test_fixture_path(rel), "r");
    if (!f)
        return -1;
    memset(p, 0, sizeof *p);
    int in_data = 0;
    char word[8];
    while (fgets(line, sizeof line, f)) {
        int b;
        double s1, s2, c;
        if (!in_data && sscanf(line, " b%d = %lf %lf %lf", &b, &s1, &s2, &c) == 4 && b >= 1 &&
            b <= 8) {
            p->start[0][b - 1] = s1;
            p->start[1][b - 1] = s2;
            p->certified[b - 1] = c;
            p->n_params = b > p->n_params ? b : p->n_params;
        } else if (!in_data && sscanf(line, "Data: %7s", word) == 1 && strcmp(word, "y") == 0) {
            in_data = 1;
            p->n_cols = strstr(line, "x2") ? 3 : 2;
        } else if (in_data && p->n_obs < NIST_MAX_OBS) {
            double v[3];
            int n = sscanf(line, "%lf %lf %lf", &v[0], &v[1], &v[2]);
            if (n == p->n_cols) {
                memcpy(p->rows + p->n_obs * p->n_cols, v, (size_t)n * sizeof *v);
                p->n_obs++;
            }
        }
    }
    fclose(f);
    return p->n_obs > 0 && p->n_params > 0 ? 0 : -1;
}

/* The model's graph: declared data and parameters, then the residual parsed. */
static inline kp_expr_graph *nist_graph(const nist_model *m)
{
    kp_expr_graph *g = NULL;
    if (kp_expr_graph_create(&g) != KP_OK)
        return NULL;
    if (kp_expr_declare(g, 0, m->data) != KP_OK || kp_expr_declare(g, 1, m->params) != KP_OK ||
        kp_expr_parse(g, m->text) != KP_OK) {
        fprintf(stderr, "%s: %s\n", m->name, kp_expr_graph_error(g));
        kp_expr_graph_destroy(g);
        return NULL;
    }
    return g;
}

/* Log relative error: the number of matching significant digits of x against c, at most 15. */
static inline double nist_digits(double x, double c)
{
    double e = fabs(x - c) / fabs(c);
    return e == 0 ? 15 : fmin(15, -log10(e));
}

/* Tolerances tight enough for NIST's digits. */
static inline kp_lm_options nist_options(void)
{
    kp_lm_options o = kp_lm_options_default();
    o.max_iterations = 1000;
    o.gradient_tolerance = 0;
    o.step_tolerance = 1e-15;
    o.function_tolerance = 1e-15;
    return o;
}

/* The fewest matching digits of p's parameters x against the certified values. */
static inline double nist_min_digits(const nist_problem *p, const double *x)
{
    double digits = 15;
    for (int j = 0; j < p->n_params; j++)
        digits = fmin(digits, nist_digits(x[j], p->certified[j]));
    return digits;
}

/* The fewest digits mode 2 reaches on every problem from both starts, by CG and by the dense path,
 * on the host reference and the device: 8.5 to 11.2 on the host and on PoCL (docs/solve.md),
 * less half a digit for other devices' rounding. Before mode 2 took mode 1's step 7, Lanczos3
 * from NIST's first start stopped at 6.7 on PoCL by both paths, MGH17 from the second at 7.7 by
 * CG on both, and the host's dense path at 7.3 on Nelson. */
#define NIST_MODE2_DIGITS 8.0

/* Problem p as one large sparse problem (mode 2): every observation an instance of all the
 * model's parameters. The index (index[i, s] = s) is malloc'ed for the caller to free. */
static inline int32_t *nist_sparse_index(const nist_problem *p)
{
    int32_t *index = malloc((size_t)p->n_obs * p->n_params * sizeof *index);
    for (int i = 0; index && i < p->n_obs * p->n_params; i++)
        index[i] = i % p->n_params;
    return index;
}

/* Mode 2 on p from start s into x (8 doubles), with its index (nist_sparse_index). */
static inline kp_lm_sparse_problem nist_sparse_problem(const nist_problem *p, const int32_t *index,
                                                       int s, double *x)
{
    memcpy(x, p->start[s], 8 * sizeof *x);
    return (kp_lm_sparse_problem){.struct_size = sizeof(kp_lm_sparse_problem),
                                  .n_instances = (size_t)p->n_obs,
                                  .data = p->rows,
                                  .index = index,
                                  .n_x = (size_t)p->n_params,
                                  .x = x};
}

/* Mode 2's options for NIST: NIST's tolerances (*lo, nist_options(), read during the solve), CG
 * to 1e-14, the dense path (every model has at most 8 parameters) or CG alone. */
static inline kp_lm_sparse_options nist_sparse_options(const kp_lm_options *lo, int dense)
{
    kp_lm_sparse_options o = kp_lm_sparse_options_default();
    o.lm = lo;
    o.cg_tolerance = 1e-14;
    if (!dense)
        o.dense_max_parameters = 0;
    return o;
}

#endif
