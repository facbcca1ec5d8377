/* SPDX-License-Identifier: Apache-2.0 */
/* The logic-ca example's tasks (ca-tasks.h). */
#include "ca-tasks.h"

#include <stdlib.h>
#include <string.h>

#include "kernelport/ops/random.h"

static void set_update(kp_logic_ca_config *c, const int32_t *w, int n)
{
    c->n_update = n;
    memcpy(c->update, w, (size_t)n * sizeof *w);
}

int ca_task_find(const char *name, int async, uint64_t seed, ca_task *out)
{
    kp_ca_options o = kp_ca_options_default();
    o.seed = seed;
    kp_logic_ca_config net = {.struct_size = sizeof net,
                              .seed = seed,
                              .n_perceive = 3,
                              .perceive = {8, 4, 2},
                              .kernels = 16};
    int64_t train_steps;
    ca_task_kind kind;
    if (strcmp(name, "checkerboard") == 0) {
        /* 8 channels, zero boundary, random states each step, the loss after the last step. */
        static const int32_t sync[] = {256, 256, 256, 256, 256, 256, 256, 256,
                                       256, 256, 128, 64,  32,  16,  8,   8};
        static const int32_t asyn[] = {256, 256, 256, 256, 256, 256, 256, 256, 256, 256,
                                       256, 256, 256, 256, 128, 64,  32,  16,  8,   8};
        kind = TASK_CHECKERBOARD;
        net.channels = 8;
        if (async)
            set_update(&net, asyn, 20);
        else
            set_update(&net, sync, 16);
        o.height = o.width = async ? 14 : 16;
        o.batch = async ? 1 : 2;
        o.steps = async ? 50 : 20;
        o.fire_rate = async ? 0.6 : 1;
        o.boundary = 1;
        o.random_init = 1;
        train_steps = async ? 800 : 500;
    } else if (!async && (strcmp(name, "gol") == 0 || strcmp(name, "xor") == 0)) {
        /* One channel, periodic 3 x 3 boards of every configuration, one step. */
        /* 17 -> 128 x 16 -> 64 -> ... -> 1: 23 layers, as the notebook's GoL update reads. */
        static const int32_t gol[] = {128, 128, 128, 128, 128, 128, 128, 128, 128, 128, 128, 128,
                                      128, 128, 128, 128, 64,  32,  16,  8,   4,   2,   1};
        static const int32_t xr[] = {8, 4, 2, 1};
        kind = strcmp(name, "gol") == 0 ? TASK_GOL : TASK_XOR;
        net.channels = 1;
        net.n_perceive = 4;
        net.perceive[3] = 1;
        if (kind == TASK_GOL) {
            set_update(&net, gol, 23);
        } else {
            net.kernels = 4;
            set_update(&net, xr, 4);
        }
        o.height = o.width = 3;
        o.batch = 512;
        o.steps = 1;
        train_steps = kind == TASK_GOL ? 3000 : 300;
    } else {
        return 0;
    }
    *out =
        (ca_task){.name = name, .kind = kind, .net = net, .options = o, .train_steps = train_steps};
    out->options.net = &out->net;
    return 1;
}

/* Life's rule, or the xor task's (west XOR east), for a cell of value `c` whose 3 x 3 patch
 * (row-major, the cell at 4) is `p`. */
static int rule(ca_task_kind kind, const int p[9])
{
    if (kind == TASK_XOR)
        return p[3] ^ p[5];
    int live = 0;
    for (int k = 0; k < 9; k++)
        live += k != 4 && p[k];
    return live == 3 || (p[4] && live == 2);
}

/* One periodic step of the rule on an h x w board. */
static void rule_step(ca_task_kind kind, const float *in, float *out, int h, int w)
{
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            int p[9];
            for (int k = 0; k < 9; k++)
                p[k] = in[((y + k / 3 - 1 + h) % h) * w + (x + k % 3 - 1 + w) % w] > 0.5f;
            out[y * w + x] = (float)rule(kind, p);
        }
}

static kp_status write_f32(kp_runtime *rt, kp_tensor t, const float *src)
{
    return kp_buffer_write(rt, t.buffer, (size_t)t.offset * sizeof(float),
                           (size_t)kp_tensor_numel(&t) * sizeof(float), src);
}

static kp_status read_f32(kp_runtime *rt, kp_tensor t, float *dst)
{
    return kp_buffer_read(rt, t.buffer, (size_t)t.offset * sizeof(float),
                          (size_t)kp_tensor_numel(&t) * sizeof(float), dst);
}

kp_status ca_task_prepare(const ca_task *task, kp_runtime *rt, kp_ca *ca)
{
    const kp_ca_options *o = &task->options;
    const int64_t N = kp_ca_cells(ca), hw = (int64_t)o->height * o->width;
    float *target = malloc((size_t)N * sizeof *target), *boards = malloc((size_t)N * 4);
    kp_status st = target && boards ? KP_OK : KP_ERR_OUT_OF_MEMORY;
    for (int64_t n = 0; st == KP_OK && n < N; n++) {
        const int64_t b = n / hw, y = n % hw / o->width, x = n % o->width;
        target[n] = (float)((y / 2 + x / 2) & 1);
        boards[n] = (float)(b >> (3 * y + x) & 1); /* board b's cell 3y + x is bit 3y + x of b */
    }
    if (st == KP_OK && task->kind != TASK_CHECKERBOARD) {
        for (int64_t b = 0; b < o->batch; b++)
            rule_step(task->kind, boards + b * hw, target + b * hw, o->height, o->width);
        st = write_f32(rt, kp_ca_state(ca, 0, 0), boards);
    }
    if (st == KP_OK)
        st = write_f32(rt, kp_ca_target(ca), target);
    free(boards), free(target);
    return st;
}

/* Checks on the training boards of gol and xor: board b's centre saw configuration b. */
static int check_neighbourhoods(const ca_task *task, kp_runtime *rt, kp_ca *ca)
{
    const int64_t N = kp_ca_cells(ca);
    float *got = malloc((size_t)N * sizeof *got), *want = malloc((size_t)N * sizeof *want);
    kp_status st = got && want ? kp_ca_rollout(ca, 1) : KP_ERR_OUT_OF_MEMORY;
    if (st == KP_OK)
        st = read_f32(rt, kp_tensor_narrow(kp_ca_state(ca, 1, 1), 0, 0, 1), got);
    if (st == KP_OK)
        st = read_f32(rt, kp_ca_target(ca), want);
    int right = 0;
    for (int64_t b = 0; st == KP_OK && b < 512; b++)
        right += got[9 * b + 4] == want[9 * b + 4];
    free(got), free(want);
    if (st != KP_OK) {
        fprintf(stderr, "logic-ca: checking the neighbourhoods: %s: %s\n", kp_status_name(st),
                kp_last_error(rt));
        return -1;
    }
    printf("hard circuit: %d/512 neighbourhoods follow the %s rule\n", right,
           task->kind == TASK_GOL ? "Life" : "xor");
    return right == 512;
}

/* A CA for evaluation: the trained one's networks and logits on `batch` grids of 64 x 64 for
 * `steps` steps, no training buffers. */
static kp_status eval_ca(const ca_task *task, kp_runtime *rt, kp_ca *trained, int batch, int steps,
                         kp_ca **out)
{
    kp_ca_options o = task->options;
    o.height = o.width = 64;
    o.batch = batch;
    o.steps = steps;
    o.inference_only = 1;
    kp_status st = kp_ca_create(rt, &o, out);
    if (st != KP_OK)
        return st;
    const kp_tensor from = kp_ca_logits(trained), to = kp_ca_logits(*out);
    return kp_buffer_copy(rt, from.buffer, (size_t)from.offset * 4, to.buffer,
                          (size_t)to.offset * 4, (size_t)kp_tensor_numel(&to) * 4);
}

/* Random 0/1 states for the grids of `ca`, from Philox key `seed`. */
static kp_status random_states(kp_runtime *rt, kp_ca *ca, uint64_t seed, uint64_t offset)
{
    const kp_tensor s0 = kp_ca_state(ca, 0, 0);
    const size_t n = (size_t)kp_ca_net(ca)->channels * (size_t)kp_ca_cells(ca);
    float *v = malloc(n * sizeof *v);
    if (!v)
        return KP_ERR_OUT_OF_MEMORY;
    for (size_t i = 0; i < n; i++)
        v[i] = (float)(kp_random_uniform(seed, offset, (uint64_t)i) < 0.5f);
    kp_status st = write_f32(rt, s0, v);
    free(v);
    return st;
}

/* gol and xor on random periodic 64 x 64 boards for 100 steps, 8 boards a rollout, each step
 * against the host's rule. */
static int check_boards(const ca_task *task, kp_runtime *rt, kp_ca *trained, int boards,
                        float *final)
{
    const int per = boards < 8 ? boards : 8, steps = 100, hw = 64 * 64;
    kp_ca *ca = NULL;
    kp_status st = boards > 0 ? eval_ca(task, rt, trained, per, steps, &ca) : KP_OK;
    float *got = malloc((size_t)per * hw * sizeof *got), *want = malloc((size_t)per * hw * 4);
    float *next = malloc((size_t)hw * sizeof *next);
    if (!got || !want || !next)
        st = KP_ERR_OUT_OF_MEMORY;
    int64_t wrong = 0;
    for (int done = 0; st == KP_OK && done < boards; done += per) {
        st = random_states(rt, ca, 99, (uint64_t)done * hw);
        if (st == KP_OK)
            st = read_f32(rt, kp_ca_state(ca, 0, 0), want);
        if (st == KP_OK)
            st = kp_ca_rollout(ca, 1);
        for (int t = 1; st == KP_OK && t <= steps; t++) {
            st = read_f32(rt, kp_ca_state(ca, t, 1), got);
            for (int b = 0; b < per; b++) {
                rule_step(task->kind, want + b * hw, next, 64, 64);
                memcpy(want + b * hw, next, (size_t)hw * sizeof *next);
            }
            for (int64_t i = 0; st == KP_OK && i < (int64_t)per * hw; i++)
                wrong += got[i] != want[i];
        }
    }
    if (st == KP_OK && boards > 0)
        memcpy(final, got, (size_t)hw * sizeof *got);
    free(got), free(want), free(next);
    kp_ca_destroy(ca);
    if (st != KP_OK) {
        fprintf(stderr, "logic-ca: checking the boards: %s: %s\n", kp_status_name(st),
                kp_last_error(rt));
        return -1;
    }
    const int64_t rounds = (boards + per - 1) / (per ? per : 1);
    printf("hard circuit on %lld random 64 x 64 boards, %d steps: %lld cells of %lld wrong\n",
           (long long)(rounds * per), steps, (long long)wrong,
           (long long)rounds * per * hw * steps);
    return wrong == 0;
}

/* checkerboard: 80 steps on a 64 x 64 grid from random states, channel 0 against the pattern. */
static int check_checkerboard(const ca_task *task, kp_runtime *rt, kp_ca *trained, float *final)
{
    kp_ca *ca = NULL;
    kp_status st = eval_ca(task, rt, trained, 1, 80, &ca);
    if (st == KP_OK)
        st = random_states(rt, ca, 77, 0);
    if (st == KP_OK)
        st = kp_ca_rollout(ca, 1);
    if (st == KP_OK)
        st = read_f32(rt, kp_tensor_narrow(kp_ca_state(ca, 80, 1), 0, 0, 1), final);
    kp_ca_destroy(ca);
    if (st != KP_OK) {
        fprintf(stderr, "logic-ca: the 64 x 64 grid: %s: %s\n", kp_status_name(st),
                kp_last_error(rt));
        return -1;
    }
    int right = 0;
    for (int i = 0; i < 64 * 64; i++)
        right += final[i] == (float)((i / 64 / 2 + i % 64 / 2) & 1);
    printf("hard rule on 64 x 64, 80 steps from random states: %d/4096 cells of the "
           "checkerboard\n",
           right);
    return right == 64 * 64;
}

int ca_task_check(const ca_task *task, kp_runtime *rt, kp_ca *trained, int boards, float *final)
{
    if (task->kind == TASK_CHECKERBOARD)
        return check_checkerboard(task, rt, trained, final);
    const int rule_ok = check_neighbourhoods(task, rt, trained);
    if (rule_ok < 0)
        return -1;
    const int boards_ok = check_boards(task, rt, trained, boards, final);
    return boards_ok < 0 ? -1 : rule_ok && boards_ok;
}

static int save_logits(const char *path, const float *w, int64_t n)
{
    FILE *f = fopen(path, "wb");
    int ok = f && fwrite(w, sizeof *w, (size_t)n, f) == (size_t)n;
    if (f && fclose(f) != 0)
        ok = 0;
    return ok;
}

static int save_circuit(const char *path, const ca_task *task, kp_ca *ca, const int32_t *ops)
{
    const kp_logic_ca_net *net = kp_ca_net(ca);
    const int64_t C = net->channels;
    FILE *f = fopen(path, "w");
    if (!f)
        return 0;
    fprintf(f,
            "# logic-ca hard circuit: task %s, %lld channels, %d perception kernels, wiring seed "
            "%llu\n# rows 0..%lld: the 3 x 3 patch (row 9 c + 3 dy + dx: channel c at offset "
            "(dy - 1, dx - 1)); row %lld + g: gate g's output\n# the last %lld gates are the new "
            "state's channels; active parameters (not wires, feeding an output): %lld\n"
            "gate layer a b op param\n",
            task->name, (long long)C, net->kernels, (unsigned long long)task->net.seed,
            (long long)(9 * C - 1), (long long)(9 * C), (long long)C,
            (long long)kp_ca_active_params(ca, ops));
    for (int32_t l = 0; l < net->n_layers; l++)
        for (int32_t g = net->layers[l]; g < net->layers[l + 1]; g++)
            fprintf(f, "%d %d %d %d %s %d\n", g, l, net->a_idx[g], net->b_idx[g],
                    kp_logic_op_name(ops[net->param[g]]), net->param[g]);
    return fclose(f) == 0;
}

int ca_task_save(const ca_task *task, kp_runtime *rt, kp_ca *ca, const char *prefix)
{
    const int64_t P = kp_ca_net(ca)->n_params;
    float *w = malloc((size_t)P * 16 * sizeof *w);
    int32_t *ops = malloc((size_t)P * sizeof *ops);
    char path[4096];
    kp_status st = w && ops ? read_f32(rt, kp_ca_logits(ca), w) : KP_ERR_OUT_OF_MEMORY;
    if (st == KP_OK)
        st = kp_ca_read_ops(ca, ops);
    int ok = st == KP_OK;
    if (!ok)
        fprintf(stderr, "logic-ca: reading the circuit: %s: %s\n", kp_status_name(st),
                kp_last_error(rt));
    snprintf(path, sizeof path, "%s.logits.f32", prefix);
    if (ok && !(ok = save_logits(path, w, 16 * P)))
        fprintf(stderr, "logic-ca: cannot write %s\n", path);
    snprintf(path, sizeof path, "%s.circuit.txt", prefix);
    if (ok && !(ok = save_circuit(path, task, ca, ops)))
        fprintf(stderr, "logic-ca: cannot write %s\n", path);
    free(w), free(ops);
    return ok;
}
