/* SPDX-License-Identifier: Apache-2.0 */
/* Graphs: launches and transfers captured between kp_graph_begin and kp_graph_end, each launch a
 * prepared launch recorded once, replayed in order with nothing checked again. Runs of launches
 * that no parameter touches are replayed as one block: one command buffer where the device has
 * cl_khr_command_buffer, else their commands back to back. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "runtime.h"
#include "struct-size.h"

enum { NODE_LAUNCH, NODE_COPY, NODE_FILL };
#define NO_SEGMENT SIZE_MAX

typedef struct graph_node {
    int kind;
    kp_prepared *p; /* NODE_LAUNCH */
    const kp_buffer *src;
    kp_buffer *dst; /* copies and fills */
    size_t src_offset, dst_offset, bytes, pattern_size;
    unsigned char pattern[128];
    int stale;      /* a transfer's buffer was destroyed */
    int bound;      /* a parameter sets one of its arguments */
    size_t segment; /* the block it replays in, or NO_SEGMENT */
} graph_node;

typedef struct graph_binding {
    size_t node;
    const char *arg; /* the descriptor's parameter name */
} graph_binding;

typedef struct graph_param {
    char *name;
    int kind; /* kp_arg_kind */
    graph_binding *bindings;
    size_t n_bindings;
} graph_param;

typedef struct graph_segment {
    size_t first, last; /* nodes */
    kp__command *cmds;  /* copies of the nodes' recorded commands, in order */
    size_t n_cmds;
    void *cmdbuf; /* the backend's command buffer of cmds, or NULL */
} graph_segment;

struct kp_graph {
    kp_runtime *rt;
    uint32_t flags;
    int recording;
    graph_node *nodes;
    size_t n_nodes;
    graph_param *params;
    size_t n_params;
    graph_segment *segments;
    size_t n_segments;
    int segments_valid;
    struct kp_graph *prev, *next;    /* the runtime's list */
    struct kp_graph *next_recording; /* this thread's other recordings */
};

/* The graphs this thread records into, one per runtime at most (a thread may record on several
 * runtimes at once, one per device): launches check this without a lock or any shared state. */
static _Thread_local kp_graph *recording;

kp_graph *kp__graph_recording(const kp_runtime *rt)
{
    for (kp_graph *g = recording; g; g = g->next_recording)
        if (g->rt == rt)
            return g;
    return NULL;
}

static void stop_recording(kp_graph *g)
{
    for (kp_graph **p = &recording; *p; p = &(*p)->next_recording)
        if (*p == g) {
            *p = g->next_recording;
            break;
        }
    g->next_recording = NULL;
    g->recording = 0;
}

static kp_status grow(kp_runtime *rt, void **array, size_t n, size_t size)
{
    void *g = realloc(*array, (n + 1) * size);
    if (!g)
        return kp__fail(rt, KP_ERR_OUT_OF_MEMORY, "out of host memory");
    *array = g;
    return KP_OK;
}

/* ---- recording ------------------------------------------------------------------------------ */

kp_status kp_graph_begin(kp_runtime *rt, uint32_t flags)
{
    if (!rt)
        return kp__fail(NULL, KP_ERR_INVALID_ARG, "kp_graph_begin: NULL runtime");
    if (kp__graph_recording(rt))
        return kp__fail(rt, KP_ERR_INVALID_ARG,
                        "kp_graph_begin: this thread is already recording a graph on this runtime "
                        "(end it with kp_graph_end first)");
    const uint32_t known = KP_GRAPH_NO_COMMAND_BUFFER | KP_GRAPH_COMMAND_BUFFER;
    if ((flags & ~known) || (flags & known) == known)
        return kp__fail(rt, KP_ERR_INVALID_ARG,
                        "kp_graph_begin: flags 0x%x: unknown bits, or both command-buffer flags",
                        (unsigned)flags);
    kp_graph *g = calloc(1, sizeof *g);
    if (!g)
        return kp__fail(rt, KP_ERR_OUT_OF_MEMORY, "kp_graph_begin: out of host memory");
    g->rt = rt;
    g->flags = flags;
    g->recording = 1;
    pthread_mutex_lock(&rt->lock);
    g->next = rt->graphs;
    if (rt->graphs)
        rt->graphs->prev = g;
    rt->graphs = g;
    pthread_mutex_unlock(&rt->lock);
    g->next_recording = recording;
    recording = g;
    return KP_OK;
}

static kp_status add_node(kp_graph *g, const graph_node *n)
{
    kp_status st = grow(g->rt, (void **)&g->nodes, g->n_nodes, sizeof *g->nodes);
    if (st == KP_OK) {
        g->nodes[g->n_nodes] = *n;
        g->nodes[g->n_nodes].segment = NO_SEGMENT;
        g->n_nodes++;
        g->segments_valid = 0;
    }
    return st;
}

kp_status kp__graph_capture_launch(kp_graph *g, kp_kernel *k, const kp_arg *args, size_t n_args,
                                   int wants_event)
{
    kp_runtime *rt = g->rt;
    if (wants_event)
        return kp__fail(rt, KP_ERR_INVALID_ARG,
                        "kernel %s: a launch recorded into a graph cannot return an event (time "
                        "the replay instead)",
                        k->desc->name);
    kp_prepared *p = NULL;
    kp_status st = kp_prepared_create(rt, k, args, n_args, &p);
    if (st != KP_OK)
        return st;
    /* Recording it now runs the kernel's own check: a bad launch fails at its call. */
    int recorded_now;
    pthread_mutex_lock(&rt->lock);
    st = kp__prepared_ready(p, &recorded_now);
    pthread_mutex_unlock(&rt->lock);
    graph_node node = {.kind = NODE_LAUNCH, .p = p};
    if (st == KP_OK)
        st = add_node(g, &node);
    if (st != KP_OK)
        kp_prepared_destroy(p);
    return st;
}

kp_status kp__graph_capture_copy(kp_graph *g, const kp_buffer *src, size_t src_offset,
                                 kp_buffer *dst, size_t dst_offset, size_t bytes)
{
    graph_node node = {.kind = NODE_COPY,
                       .src = src,
                       .dst = dst,
                       .src_offset = src_offset,
                       .dst_offset = dst_offset,
                       .bytes = bytes};
    return add_node(g, &node);
}

kp_status kp__graph_capture_fill(kp_graph *g, kp_buffer *buf, size_t offset, size_t bytes,
                                 const void *pattern, size_t pattern_size)
{
    graph_node node = {.kind = NODE_FILL,
                       .dst = buf,
                       .dst_offset = offset,
                       .bytes = bytes,
                       .pattern_size = pattern_size};
    memcpy(node.pattern, pattern, pattern_size);
    return add_node(g, &node);
}

static graph_param *find_param(const kp_graph *g, const char *name)
{
    for (size_t i = 0; i < g->n_params; i++)
        if (strcmp(g->params[i].name, name) == 0)
            return &g->params[i];
    return NULL;
}

/* The descriptor's parameter named `name` of a launch node, or NULL. */
static const kp_param_desc *launch_param(const graph_node *n, const char *name)
{
    const kp_kernel_desc *d = kp__prepared_kernel(n->p)->desc;
    for (uint32_t i = 0; i < d->n_params; i++)
        if (strcmp(d->params[i].name, name) == 0)
            return &d->params[i];
    return NULL;
}

kp_status kp_graph_param(kp_runtime *rt, const char *param, const char *arg)
{
    kp_graph *g = rt ? kp__graph_recording(rt) : NULL;
    if (!g)
        return kp__fail(rt, KP_ERR_INVALID_ARG,
                        "kp_graph_param: this thread is not recording a graph on this runtime");
    if (!param || !*param || !arg)
        return kp__fail(rt, KP_ERR_INVALID_ARG, "kp_graph_param: NULL or empty name");
    graph_node *n = g->n_nodes ? &g->nodes[g->n_nodes - 1] : NULL;
    if (!n || n->kind != NODE_LAUNCH)
        return kp__fail(rt, KP_ERR_INVALID_ARG,
                        "kp_graph_param \"%s\": the last thing recorded is not a kernel launch",
                        param);
    const char *kernel = kp__prepared_kernel(n->p)->desc->name;
    const kp_param_desc *pd = launch_param(n, arg);
    if (!pd)
        return kp__fail(rt, KP_ERR_INVALID_ARG,
                        "kp_graph_param \"%s\": kernel %s has no argument \"%s\"", param, kernel,
                        arg);
    graph_param *gp = find_param(g, param);
    if (gp && gp->kind != (int)pd->kind)
        return kp__fail(rt, KP_ERR_INVALID_ARG,
                        "kp_graph_param \"%s\": kernel %s's argument \"%s\" is %s, but the "
                        "parameter is %s",
                        param, kernel, arg, kp_arg_kind_name((kp_arg_kind)pd->kind),
                        kp_arg_kind_name((kp_arg_kind)gp->kind));
    for (size_t i = 0; gp && i < gp->n_bindings; i++)
        if (gp->bindings[i].node == g->n_nodes - 1 && gp->bindings[i].arg == pd->name)
            return KP_OK;
    if (!gp) {
        char *name = kp__strdup(param);
        kp_status st = name ? grow(rt, (void **)&g->params, g->n_params, sizeof *g->params)
                            : kp__fail(rt, KP_ERR_OUT_OF_MEMORY, "out of host memory");
        if (st != KP_OK) {
            free(name);
            return st;
        }
        gp = &g->params[g->n_params++];
        *gp = (graph_param){.name = name, .kind = (int)pd->kind};
    }
    kp_status st = grow(rt, (void **)&gp->bindings, gp->n_bindings, sizeof *gp->bindings);
    if (st != KP_OK)
        return st;
    gp->bindings[gp->n_bindings++] = (graph_binding){.node = g->n_nodes - 1, .arg = pd->name};
    n->bound = 1;
    g->segments_valid = 0;
    return KP_OK;
}

static kp_status make_ready(kp_graph *g);

kp_status kp_graph_end(kp_runtime *rt, kp_graph **out)
{
    if (out)
        *out = NULL;
    kp_graph *g = rt ? kp__graph_recording(rt) : NULL;
    if (!g || !out)
        return kp__fail(rt, KP_ERR_INVALID_ARG,
                        g ? "kp_graph_end: NULL out"
                          : "kp_graph_end: this thread is not recording a graph on this runtime");
    stop_recording(g);
    /* The blocks are made now, so that kp_graph_get_info tells what a replay will enqueue. */
    pthread_mutex_lock(&rt->lock);
    kp_status st = make_ready(g);
    pthread_mutex_unlock(&rt->lock);
    *out = g;
    return st;
}

/* ---- parameters ------------------------------------------------------------------------------ */

kp_status kp_graph_set(kp_graph *g, const char *param, const kp_arg *value)
{
    if (!g || !param || !value)
        return kp__fail(g ? g->rt : NULL, KP_ERR_INVALID_ARG, "kp_graph_set: NULL argument");
    kp_runtime *rt = g->rt;
    graph_param *gp = find_param(g, param);
    if (!gp)
        return kp__fail(rt, KP_ERR_INVALID_ARG, "kp_graph_set: the graph has no parameter \"%s\"",
                        param);
    if ((int)value->kind != gp->kind)
        return kp__fail(rt, KP_ERR_INVALID_ARG, "kp_graph_set \"%s\": expected %s, got %s", param,
                        kp_arg_kind_name((kp_arg_kind)gp->kind),
                        kp_arg_kind_name((kp_arg_kind)value->kind));
    /* Every launch checks the value before any takes it, so a failure changes nothing. */
    for (size_t i = 0; gp->n_bindings > 1 && i < gp->n_bindings; i++) {
        kp_arg a = *value;
        a.name = gp->bindings[i].arg;
        kp_status st = kp__prepared_check(g->nodes[gp->bindings[i].node].p, &a);
        if (st != KP_OK)
            return kp__fail_prefix(rt, st, "kp_graph_set \"%s\" (launch %zu)", param,
                                   gp->bindings[i].node);
    }
    for (size_t i = 0; i < gp->n_bindings; i++) {
        kp_arg a = *value;
        a.name = gp->bindings[i].arg;
        kp_status st = kp_prepared_set(g->nodes[gp->bindings[i].node].p, &a);
        if (st != KP_OK)
            return kp__fail_prefix(rt, st, "kp_graph_set \"%s\" (launch %zu)", param,
                                   gp->bindings[i].node);
    }
    return KP_OK;
}

kp_status kp_graph_set_int(kp_graph *g, const char *param, int64_t value)
{
    kp_arg a = kp_arg_int(param, value);
    return kp_graph_set(g, param, &a);
}

kp_status kp_graph_set_float(kp_graph *g, const char *param, double value)
{
    kp_arg a = kp_arg_float(param, value);
    return kp_graph_set(g, param, &a);
}

kp_status kp_graph_set_tensor(kp_graph *g, const char *param, kp_tensor value)
{
    kp_arg a = kp_arg_tensor(param, value);
    return kp_graph_set(g, param, &a);
}

/* ---- replay ---------------------------------------------------------------------------------- */

static void free_segments(kp_graph *g)
{
    kp_runtime *rt = g->rt;
    for (size_t i = 0; i < g->n_segments; i++) {
        if (g->segments[i].cmdbuf)
            rt->ops->cmdbuf_release(rt->backend, g->segments[i].cmdbuf);
        free(g->segments[i].cmds);
    }
    free(g->segments);
    g->segments = NULL;
    g->n_segments = 0;
    for (size_t i = 0; i < g->n_nodes; i++)
        g->nodes[i].segment = NO_SEGMENT;
    g->segments_valid = 0;
}

/* A launch that replays in a block: recorded commands and no parameter. */
static int blockable(const graph_node *n)
{
    const kp__command *cmds;
    return n->kind == NODE_LAUNCH && !n->bound && kp__prepared_commands(n->p, &cmds) > 0;
}

static int use_command_buffers(const kp_graph *g)
{
    const kp_runtime *rt = g->rt;
    return !(g->flags & KP_GRAPH_NO_COMMAND_BUFFER) && rt->ops->cmdbuf_supported &&
           rt->ops->cmdbuf_supported(rt->backend, (g->flags & KP_GRAPH_COMMAND_BUFFER) != 0);
}

static kp_status add_segment(kp_graph *g, size_t first, size_t last)
{
    kp_runtime *rt = g->rt;
    kp_status st = grow(rt, (void **)&g->segments, g->n_segments, sizeof *g->segments);
    if (st != KP_OK)
        return st;
    graph_segment *s = &g->segments[g->n_segments];
    *s = (graph_segment){.first = first, .last = last};
    for (size_t i = first; i <= last; i++) {
        const kp__command *cmds;
        size_t n = kp__prepared_commands(g->nodes[i].p, &cmds);
        kp__command *all = realloc(s->cmds, (s->n_cmds + n) * sizeof *all);
        if (!all) {
            free(s->cmds);
            return kp__fail(rt, KP_ERR_OUT_OF_MEMORY, "out of host memory");
        }
        memcpy(all + s->n_cmds, cmds, n * sizeof *all);
        s->cmds = all;
        s->n_cmds += n;
    }
    if (use_command_buffers(g) &&
        rt->ops->cmdbuf_create(rt->backend, s->cmds, s->n_cmds, &s->cmdbuf) != KP_OK)
        kp__log(rt, KP_LOG_WARN,
                "graph: launches %zu to %zu replay kernel by kernel: their command buffer "
                "failed (%s)",
                first, last, kp_last_error(rt));
    for (size_t i = first; i <= last; i++)
        g->nodes[i].segment = g->n_segments;
    g->n_segments++;
    return KP_OK;
}

static kp_status build_segments(kp_graph *g)
{
    free_segments(g);
    for (size_t i = 0; i < g->n_nodes;) {
        if (!blockable(&g->nodes[i])) {
            i++;
            continue;
        }
        size_t last = i;
        while (last + 1 < g->n_nodes && blockable(&g->nodes[last + 1]))
            last++;
        kp_status st = add_segment(g, i, last);
        if (st != KP_OK) {
            free_segments(g);
            return st;
        }
        i = last + 1;
    }
    g->segments_valid = 1;
    return KP_OK;
}

static kp_status run_transfer(kp_graph *g, size_t i)
{
    const graph_node *n = &g->nodes[i];
    if (n->stale)
        return kp__fail(g->rt, KP_ERR_INVALID_ARG, "graph %s %zu: a buffer it uses was destroyed",
                        n->kind == NODE_COPY ? "copy" : "fill", i);
    return n->kind == NODE_COPY
               ? kp__buffer_copy_run(g->rt, n->src, n->src_offset, n->dst, n->dst_offset, n->bytes)
               : kp__buffer_fill_run(g->rt, n->dst, n->dst_offset, n->bytes, n->pattern,
                                     n->pattern_size);
}

/* Records what needs it; the caller holds rt->lock. */
static kp_status make_ready(kp_graph *g)
{
    for (size_t i = 0; i < g->n_nodes; i++) {
        graph_node *n = &g->nodes[i];
        if (n->kind != NODE_LAUNCH)
            continue;
        int recorded_now = 0;
        kp_status st = kp__prepared_ready(n->p, &recorded_now);
        if (st != KP_OK)
            return kp__fail_prefix(g->rt, st, "graph launch %zu", i);
        if (recorded_now == 2)
            kp__log(g->rt, KP_LOG_INFO,
                    "graph launch %zu (%s): recorded again, its kernel's tuning changed", i,
                    kp__prepared_kernel(n->p)->desc->name);
        if (recorded_now && (n->segment != NO_SEGMENT || !n->bound))
            g->segments_valid = 0;
    }
    return g->segments_valid ? KP_OK : build_segments(g);
}

static kp_status replay_locked(kp_graph *g, kp_event *ev)
{
    kp_runtime *rt = g->rt;
    kp_status st = make_ready(g);
    for (size_t i = 0; st == KP_OK && i < g->n_nodes;) {
        const graph_node *n = &g->nodes[i];
        if (n->segment != NO_SEGMENT) {
            const graph_segment *s = &g->segments[n->segment];
            kp__event_record *rec = ev ? &ev->record : NULL;
            st = s->cmdbuf ? rt->ops->cmdbuf_enqueue(rt->backend, s->cmdbuf, rec)
                           : rt->ops->replay(rt->backend, s->cmds, s->n_cmds, rec);
            i = s->last + 1;
            continue;
        }
        if (n->kind == NODE_LAUNCH) {
            st = kp__prepared_run(n->p, ev);
            if (st != KP_OK)
                st = kp__fail_prefix(rt, st, "graph launch %zu", i);
        } else {
            st = run_transfer(g, i);
        }
        i++;
    }
    return st;
}

kp_status kp_graph_replay(kp_graph *g, kp_event **event)
{
    if (event)
        *event = NULL;
    if (!g)
        return kp__fail(NULL, KP_ERR_INVALID_ARG, "kp_graph_replay: NULL graph");
    kp_runtime *rt = g->rt;
    if (g->recording || kp__graph_recording(rt))
        return kp__fail(rt, KP_ERR_INVALID_ARG,
                        g->recording ? "kp_graph_replay: the graph is still recording (call "
                                       "kp_graph_end first)"
                                     : "kp_graph_replay: this thread is recording a graph on "
                                       "the graph's runtime");
    kp_event *ev = NULL;
    if (event && !(ev = calloc(1, sizeof *ev)))
        return kp__fail(rt, KP_ERR_OUT_OF_MEMORY, "out of host memory");
    pthread_mutex_lock(&rt->lock);
    kp_status st = replay_locked(g, ev);
    pthread_mutex_unlock(&rt->lock);
    if (st != KP_OK) {
        kp_event_destroy(rt, ev);
        return st;
    }
    if (event)
        *event = ev;
    return KP_OK;
}

/* ---- inspection ------------------------------------------------------------------------------ */

kp_status kp_graph_get_info(const kp_graph *g, kp_graph_info *out)
{
    if (!g)
        return kp__fail(NULL, KP_ERR_INVALID_ARG, "kp_graph_get_info: NULL argument");
    kp_status st = KP__OUT_CHECK(g->rt, "kp_graph_get_info", kp_graph_info, out);
    if (st != KP_OK)
        return st;
    kp_graph_info info = {.struct_size = sizeof info, .n_params = g->n_params};
    for (size_t i = 0; i < g->n_nodes; i++) {
        const graph_node *n = &g->nodes[i];
        if (n->kind != NODE_LAUNCH) {
            info.n_transfers++;
            continue;
        }
        info.n_launches++;
        const kp__command *cmds;
        info.n_commands += kp__prepared_commands(n->p, &cmds);
        info.n_direct += kp__prepared_direct(n->p) != NULL;
    }
    for (size_t i = 0; g->segments_valid && i < g->n_segments; i++)
        info.n_command_buffers += g->segments[i].cmdbuf != NULL;
    KP__OUT_WRITE(kp_graph_info, out, &info);
    return KP_OK;
}

kp_status kp_graph_describe(const kp_graph *g, char *out, size_t size)
{
    if (!g || !out || !size)
        return kp__fail(g ? g->rt : NULL, KP_ERR_INVALID_ARG, "kp_graph_describe: NULL argument");
    size_t used = 0;
    out[0] = '\0';
#define PUT(...)                                                                                   \
    do {                                                                                           \
        if (used < size) {                                                                         \
            int w = snprintf(out + used, size - used, __VA_ARGS__);                                \
            used += w > 0 ? (size_t)w : 0;                                                         \
        }                                                                                          \
    } while (0)
    for (size_t i = 0; i < g->n_nodes; i++) {
        const graph_node *n = &g->nodes[i];
        if (n->kind == NODE_COPY) {
            PUT("%zu copy: %zu bytes\n", i, n->bytes);
            continue;
        }
        if (n->kind == NODE_FILL) {
            PUT("%zu fill: %zu bytes\n", i, n->bytes);
            continue;
        }
        const kp__command *cmds;
        size_t nc = kp__prepared_commands(n->p, &cmds);
        const char *direct = kp__prepared_direct(n->p);
        const char *name = kp__prepared_kernel(n->p)->desc->name;
        if (direct)
            PUT("%zu %s: direct (%s)\n", i, name, direct);
        else
            PUT("%zu %s: recorded, %zu command%s%s%s\n", i, name, nc, nc == 1 ? "" : "s",
                n->bound ? ", has parameters" : "",
                n->segment != NO_SEGMENT && g->segments[n->segment].cmdbuf ? ", command buffer"
                                                                           : "");
    }
    for (size_t i = 0; i < g->n_params; i++) {
        const graph_param *p = &g->params[i];
        PUT("parameter %s (%s):", p->name, kp_arg_kind_name((kp_arg_kind)p->kind));
        for (size_t j = 0; j < p->n_bindings; j++)
            PUT(" %zu.%s", p->bindings[j].node, p->bindings[j].arg);
        PUT("\n");
    }
#undef PUT
    return KP_OK;
}

/* ---- lifetime -------------------------------------------------------------------------------- */

void kp_graph_destroy(kp_graph *g)
{
    if (!g)
        return;
    kp_runtime *rt = g->rt;
    if (g->recording)
        stop_recording(g);
    pthread_mutex_lock(&rt->lock);
    if (g->prev)
        g->prev->next = g->next;
    else if (rt->graphs == g)
        rt->graphs = g->next;
    if (g->next)
        g->next->prev = g->prev;
    free_segments(g);
    pthread_mutex_unlock(&rt->lock);
    for (size_t i = 0; i < g->n_nodes; i++)
        kp_prepared_destroy(g->nodes[i].p);
    for (size_t i = 0; i < g->n_params; i++) {
        free(g->params[i].name);
        free(g->params[i].bindings);
    }
    free(g->params);
    free(g->nodes);
    free(g);
}

void kp__graph_buffer_gone(kp_runtime *rt, const kp_buffer *buf)
{
    for (kp_graph *g = rt->graphs; g; g = g->next)
        for (size_t i = 0; i < g->n_nodes; i++)
            if (g->nodes[i].kind != NODE_LAUNCH &&
                (g->nodes[i].src == buf || g->nodes[i].dst == buf))
                g->nodes[i].stale = 1;
}

void kp__graph_free_all(kp_runtime *rt)
{
    while (rt->graphs)
        kp_graph_destroy(rt->graphs);
}
