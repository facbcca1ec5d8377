// SPDX-License-Identifier: Apache-2.0
/* What the solve layer's kernels share: the process-wide store of compiled graphs, precision
 * resolution, registration, and the message of a failure: built in a thread-local buffer (the
 * internal calls have no runtime at hand), then recorded by each public call as its runtime's
 * kp_last_error. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "solve-internal.h"

static _Thread_local char message[2048];

const char *kp_solve_last_error(void)
{
    return message;
}

kp_status kp__solve_report(const kp_runtime *rt, kp_status st)
{
    return st == KP_OK ? KP_OK : kp_last_error_set(rt, st, "%s", message);
}

kp_status kp__solve_fail(kp_status st, const char *fmt, ...)
{
    char buf[sizeof message];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap); /* fmt's arguments may point into `message` */
    va_end(ap);
    memcpy(message, buf, sizeof message);
    return st;
}

const char *kp_precision_name(kp_precision p)
{
    return p == KP_PRECISION_F64 ? "f64" : p == KP_PRECISION_F32 ? "f32" : "auto";
}

kp_status kp__solve_precision(kp_runtime *rt, kp_precision precision, kp_precision *out)
{
    kp_device_info info = {.struct_size = sizeof info};
    kp_status st = kp_runtime_device(rt, &info, NULL);
    if (st != KP_OK)
        return kp__solve_fail(st, "%s", kp_last_error(rt));
    if (precision == KP_PRECISION_AUTO)
        precision = info.fp64 ? KP_PRECISION_F64 : KP_PRECISION_F32;
    if (precision != KP_PRECISION_F64 && precision != KP_PRECISION_F32)
        return kp__solve_fail(KP_ERR_INVALID_ARG, "precision %d is not auto, f64 or f32",
                              (int)precision);
    if (precision == KP_PRECISION_F64 && !info.fp64)
        return kp__solve_fail(KP_ERR_UNSUPPORTED,
                              "f64 asked, but device %s has no cl_khr_fp64 (use f32 or auto)",
                              info.name);
    *out = precision;
    return KP_OK;
}

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
/* Compiled graphs live until the process exits: a runtime may call their references until it is
 * destroyed, which the solve layer cannot see. One per distinct graph and precision. */
static kp__compiled *compiled;

static void compiled_free(kp__compiled *c)
{
    kp_expr_graph_destroy(c->graph);
    free(c->source);
    free(c);
}

kp_status kp__compiled_get(const char *name, const kp_expr_graph *g, int f32, kp__make_fn make,
                           kp__compiled **out)
{
    kp__compiled *c = calloc(1, sizeof *c);
    if (!c || !(c->graph = kp__expr_graph_copy(g))) {
        free(c);
        return kp__solve_fail(KP_ERR_OUT_OF_MEMORY, "%s: out of host memory", name);
    }
    snprintf(c->name, sizeof c->name, "%s", name);
    c->f32 = f32;
    kp_status st = make(c);
    if (st != KP_OK) {
        compiled_free(c);
        return st;
    }
    pthread_mutex_lock(&lock);
    kp__compiled *found = compiled;
    while (found && strcmp(found->name, name) != 0)
        found = found->next;
    if (found && strcmp(found->source, c->source) != 0)
        st = kp__solve_fail(KP_ERR_INTERNAL,
                            "%s: two different graphs have the same key (a hash collision); "
                            "change the expression slightly",
                            name);
    if (!found) {
        c->next = compiled;
        compiled = c;
        found = c;
        c = NULL;
    }
    pthread_mutex_unlock(&lock);
    if (c)
        compiled_free(c);
    *out = st == KP_OK ? found : NULL;
    return st;
}

kp_status kp__solve_register(kp_runtime *rt, const kp_kernel_desc *desc, kp_kernel **out)
{
    if (kp_kernel_find(rt, desc->name, out) == KP_OK)
        return KP_OK;
    kp_status st = kp_kernel_register(rt, desc, out);
    return st == KP_OK ? KP_OK : kp__solve_fail(st, "%s", kp_last_error(rt));
}

kp_status kp__solve_supported(kp_launch *l)
{
    const kp__compiled *c = kp_host_api_get()->kernel_user(l);
    const kp_device_info *d = kp_host_api_get()->device(l);
    if (!c->f32 && !d->fp64)
        return kp_host_api_get()->fail(l, KP_ERR_UNSUPPORTED,
                                       "f64 kernel, and device %s has no cl_khr_fp64", d->name);
    return KP_OK;
}
