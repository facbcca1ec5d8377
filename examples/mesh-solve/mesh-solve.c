/* SPDX-License-Identifier: Apache-2.0 */
/* mesh-solve: an icosphere's vertices moved by Levenberg-Marquardt so that every edge reaches a
 * target length, with a smoothness term, as one large sparse problem on the device (#27's mesh
 * example; README.md). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "example-cli.h"
#include "kernelport/solve.h"
#include "mesh-problem.h"

static const char *const program = "mesh-solve";
static const char *const usage =
    "usage: mesh-solve [--level N] [--device SPEC] [--precision auto|f64|f32]\n"
    "                  [--max-iterations N] [--smooth W] [--block B] [--jitter J]\n"
    "                  [--max-cg N] [--cg-tolerance T] [--dense-max N] [--host] [--csv FILE]\n"
    "                  [--json FILE]\n"
    "  --level N           subdivisions of the icosahedron, 0..9 (default 4: 2,562 vertices,\n"
    "                      7,680 edges; 7: 163,842 and 491,520; 9: 2.6 million and 7.9 million)\n"
    "  --device SPEC       Kernelport's device (default: the manifest's choice)\n"
    "  --precision P       the kernels' precision (default auto: f64 where the device has it)\n"
    "  --max-iterations N  Jacobian evaluations at most (default 50)\n"
    "  --smooth W          weight of the smoothness residuals (default 0.1)\n"
    "  --block B           the preconditioner: 3 (default) solves each vertex's 3 x 3 block,\n"
    "                      1 is Jacobi (the diagonal)\n"
    "  --jitter J          the start: each vertex moved along its radius by up to J times the\n"
    "                      mesh's mean edge length (default 0.66: about 5% of the radius at\n"
    "                      level 4)\n"
    "  --max-cg N          CG iterations per step at most (default 0: the solver's, 4 sqrt(P):\n"
    "                      351 at level 4, 2,804 at level 7)\n"
    "  --cg-tolerance T    each step's CG stops at a residual of T |J^T r| (default 1e-3; 1e-6\n"
    "                      before #27's fix)\n"
    "  --dense-max N       solve each step by dense Cholesky instead of CG when the mesh has at\n"
    "                      most N parameters, up to 4096 (default 256: levels 0 and 1; 0: CG)\n"
    "  --host              solve it with the host reference too, and compare\n"
    "  --csv FILE          one row per iteration: iteration, cost, CG iterations, damping,\n"
    "                      accepted, seconds, largest gradient, CG's relative residual\n"
    "  --json FILE         the summary\n";

typedef struct progress {
    FILE *csv;
    double start;
} progress;

static void on_progress(void *user, const kp_lm_sparse_progress *p)
{
    progress *pr = user;
    const double t = example_now() - pr->start;
    printf("  iteration %3d  cost %.6e  |g| %.2e  %s %4d to %.1e  damping %.2e  %-8s  %7.2f s\n",
           p->iteration, p->cost, p->gradient_max, p->dense ? "dense" : "CG   ", p->cg_iterations,
           p->cg_residual, p->damping, p->accepted ? "accepted" : "rejected", t);
    fflush(stdout);
    if (pr->csv)
        fprintf(pr->csv, "%d,%.17g,%d,%.6g,%d,%.6f,%.6g,%.6g\n", p->iteration, p->cost,
                p->cg_iterations, p->damping, p->accepted, t, p->gradient_max, p->cg_residual);
}

/* The largest |edge length - target| and the spread of the vertices' radii. */
static void measure(const icosphere *m, const double *x, const double *L, double *edge_err,
                    double *radius_spread)
{
    double worst = 0, lo = INFINITY, hi = 0;
    for (int64_t k = 0; k < m->n_edges; k++) {
        const double *a = x + 3 * (int64_t)m->e[2 * k], *b = x + 3 * (int64_t)m->e[2 * k + 1];
        const double d = sqrt((b[0] - a[0]) * (b[0] - a[0]) + (b[1] - a[1]) * (b[1] - a[1]) +
                              (b[2] - a[2]) * (b[2] - a[2]));
        worst = fmax(worst, fabs(d - L[k]));
    }
    for (int64_t i = 0; i < m->n_vertices; i++) {
        const double *p = x + 3 * i, r = sqrt(p[0] * p[0] + p[1] * p[1] + p[2] * p[2]);
        lo = fmin(lo, r);
        hi = fmax(hi, r);
    }
    *edge_err = worst;
    *radius_spread = hi - lo;
}

int main(int argc, char **argv)
{
    double level = 4, max_it = 50, smooth = 0.1, block = 3, jitter = 0.66, max_cg = 0;
    double cg_tol = kp_lm_sparse_options_default().cg_tolerance;
    double dense_max = kp_lm_sparse_options_default().dense_max_parameters;
    const char *device = NULL, *precision = "auto", *csv_path = NULL, *json_path = NULL;
    int host = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int ok = 1;
        if (strcmp(a, "--level") == 0)
            ok = example_number(program, usage, argc, argv, &i, 0, 9, &level);
        else if (strcmp(a, "--max-iterations") == 0)
            ok = example_number(program, usage, argc, argv, &i, 1, 100000, &max_it);
        else if (strcmp(a, "--block") == 0)
            ok = example_number(program, usage, argc, argv, &i, 1, 3, &block);
        else if (strcmp(a, "--jitter") == 0)
            ok = example_number(program, usage, argc, argv, &i, 0, 100, &jitter);
        else if (strcmp(a, "--max-cg") == 0)
            ok = example_number(program, usage, argc, argv, &i, 0, 1e6, &max_cg);
        else if (strcmp(a, "--cg-tolerance") == 0)
            ok = example_number(program, usage, argc, argv, &i, 0, 1, &cg_tol);
        else if (strcmp(a, "--dense-max") == 0)
            ok = example_number(program, usage, argc, argv, &i, 0, 4096, &dense_max);
        else if (strcmp(a, "--smooth") == 0)
            ok = example_number(program, usage, argc, argv, &i, 0, 1e6, &smooth);
        else if (strcmp(a, "--host") == 0)
            host = 1;
        else if (i + 1 < argc && strcmp(a, "--device") == 0)
            device = argv[++i];
        else if (i + 1 < argc && strcmp(a, "--precision") == 0)
            precision = argv[++i];
        else if (i + 1 < argc && strcmp(a, "--csv") == 0)
            csv_path = argv[++i];
        else if (i + 1 < argc && strcmp(a, "--json") == 0)
            json_path = argv[++i];
        else {
            fprintf(stderr, "%s", usage);
            return strcmp(a, "--help") == 0 ? 0 : 2;
        }
        if (!ok)
            return 2;
    }
    kp_precision prec = strcmp(precision, "f64") == 0   ? KP_PRECISION_F64
                        : strcmp(precision, "f32") == 0 ? KP_PRECISION_F32
                                                        : KP_PRECISION_AUTO;
    if (prec == KP_PRECISION_AUTO && strcmp(precision, "auto") != 0) {
        fprintf(stderr, "%s: --precision %s: expected auto, f64 or f32\n", program, precision);
        return 2;
    }

    mesh_problem mp;
    if (mesh_problem_make((int)level, smooth, jitter, &mp) != 0) {
        fprintf(stderr, "%s: out of memory for level %d\n", program, (int)level);
        return 1;
    }
    const icosphere m = mp.m;
    const size_t n = mp.n, P = mp.P;
    double *data = mp.data, *x0 = mp.x0, *x = malloc(P * sizeof *x), *L = malloc(n * sizeof *L);
    const int32_t *index = mp.index;
    if (!x || !L) {
        fprintf(stderr, "%s: out of memory for %zu edges\n", program, n);
        return 1;
    }
    for (size_t k = 0; k < n; k++)
        L[k] = data[2 * k];
    memcpy(x, x0, P * sizeof *x);

    kp_runtime_options o = kp_runtime_options_default();
    o.device = device;
    kp_runtime *rt;
    kp_status st = kp_runtime_create(&o, &rt);
    if (st != KP_OK)
        return example_fail(program, NULL, st, "creating the runtime");
    kp_device_info info = {.struct_size = sizeof info};
    kp_runtime_device(rt, &info, NULL);
    kp_expr_graph *g;
    kp_expr_graph_create(&g);
    kp_expr_declare(g, 1, "ax ay az bx by bz");
    kp_expr_declare(g, 0, "L w");
    if (kp_expr_parse(g, MESH_RESIDUAL) != KP_OK) {
        fprintf(stderr, "%s: %s\n", program, kp_expr_graph_error(g));
        return 1;
    }
    kp_lm_sparse *lm;
    if ((st = kp_lm_sparse_create(rt, g, prec, &lm)) != KP_OK) {
        fprintf(stderr, "%s: %s\n", program, kp_last_error(rt));
        return 1;
    }
    printf("%s: level %d: %lld vertices (%zu parameters), %zu edges (%zu residuals) on %s, %s "
           "(the first evaluation includes compiling the kernels)\n",
           program, (int)level, (long long)m.n_vertices, P, n, 2 * n, info.name,
           kp_precision_name(kp_lm_sparse_precision(lm)));
    progress pr = {.start = example_now()};
    if (csv_path) {
        pr.csv = fopen(csv_path, "w");
        if (!pr.csv) {
            fprintf(stderr, "%s: cannot write %s\n", program, csv_path);
            return 1;
        }
        fprintf(pr.csv, "iteration,cost,cg_iterations,damping,accepted,seconds,gradient_max,"
                        "cg_residual\n");
    }
    kp_lm_options lo = kp_lm_options_default();
    lo.max_iterations = (uint32_t)max_it;
    lo.function_tolerance = 1e-10;
    kp_lm_sparse_options so = kp_lm_sparse_options_default();
    so.lm = &lo;
    so.block_size = (uint32_t)block;
    so.max_cg_iterations = (uint32_t)max_cg;
    so.cg_tolerance = cg_tol;
    so.dense_max_parameters = (uint32_t)dense_max;
    so.progress = on_progress;
    so.user = &pr;
    kp_lm_sparse_problem pb = {
        .struct_size = sizeof pb, .n_instances = n, .data = data, .index = index, .n_x = P, .x = x};
    kp_lm_sparse_report rep = {.struct_size = sizeof rep};
    if ((st = kp_lm_sparse_solve(lm, &so, &pb, &rep)) != KP_OK) {
        fprintf(stderr, "%s: %s\n", program, kp_last_error(rt));
        return 1;
    }
    if (pr.csv)
        fclose(pr.csv);
    double edge_err, spread;
    measure(&m, x, L, &edge_err, &spread);
    const double total = rep.seconds[0] + rep.seconds[1] + rep.seconds[2] + rep.seconds[3];
    printf("%s: %s after %d evaluations and %lld CG iterations (%s): cost %.6e -> %.6e in %.3f s "
           "(evaluation %.3f, normal equations %.3f, %s %.3f, other %.3f; %.1f ms per "
           "iteration); largest edge error %.2e, radius spread %.2e\n",
           program, kp_lm_status_name(rep.status), rep.iterations, (long long)rep.cg_iterations,
           rep.dense ? "dense Cholesky" : "CG", rep.initial_cost, rep.cost, total, rep.seconds[0],
           rep.seconds[1], rep.dense ? "Cholesky" : "CG", rep.seconds[2], rep.seconds[3],
           1e3 * total / rep.iterations, edge_err, spread);
    double host_s = 0, host_cost = 0;
    if (host) {
        memcpy(x, x0, P * sizeof *x);
        so.progress = NULL;
        kp_lm_sparse_report hrep = {.struct_size = sizeof hrep};
        const double t0 = example_now();
        if (kp_lm_sparse_solve_host(g, &so, &pb, &hrep) != KP_OK) {
            fprintf(stderr, "%s: %s\n", program, kp_last_error(NULL));
            return 1;
        }
        host_s = example_now() - t0;
        host_cost = hrep.cost;
        printf("%s: host reference (1 thread, double): %s after %d evaluations, %lld CG "
               "iterations, cost %.6e, %.3f s (%.2fx the device's time)\n",
               program, kp_lm_status_name(hrep.status), hrep.iterations,
               (long long)hrep.cg_iterations, hrep.cost, host_s, host_s / total);
    }
    if (json_path) {
        FILE *f = fopen(json_path, "w");
        if (!f) {
            fprintf(stderr, "%s: cannot write %s\n", program, json_path);
            return 1;
        }
        fprintf(f,
                "{\n  \"program\": \"mesh-solve\",\n  \"device\": \"%s\",\n  \"precision\": "
                "\"%s\",\n  \"level\": %d,\n  \"vertices\": %lld,\n  \"edges\": %zu,\n"
                "  \"status\": \"%s\",\n  \"iterations\": %d,\n  \"cg_iterations\": %lld,\n"
                "  \"initial_cost\": %.17g,\n  \"cost\": %.17g,\n  \"seconds\": %.6f,\n"
                "  \"seconds_evaluation\": %.6f,\n  \"seconds_normal\": %.6f,\n"
                "  \"seconds_cg\": %.6f,\n  \"dense\": %d,\n  \"largest_edge_error\": %.6g,\n"
                "  \"host_seconds\": %.6f,\n  \"host_cost\": %.17g\n}\n",
                info.name, kp_precision_name(kp_lm_sparse_precision(lm)), (int)level,
                (long long)m.n_vertices, n, kp_lm_status_name(rep.status), rep.iterations,
                (long long)rep.cg_iterations, rep.initial_cost, rep.cost, total, rep.seconds[0],
                rep.seconds[1], rep.seconds[2], rep.dense, edge_err, host_s, host_cost);
        fclose(f);
    }
    const int converged = KP_LM_CONVERGED(rep.status);
    kp_lm_sparse_destroy(lm);
    kp_expr_graph_destroy(g);
    kp_runtime_destroy(rt);
    mesh_problem_free(&mp);
    free(x), free(L);
    return converged ? 0 : 1;
}
