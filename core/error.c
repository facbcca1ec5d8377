/* SPDX-License-Identifier: Apache-2.0 */
/* Last-error messages, kept per runtime and per thread. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime.h"

/* Calls that have no runtime (kp_runtime_create) report here. */
static _Thread_local char *no_runtime_message;

/* Failures recorded by this thread, so a caller can tell whether a callee set a message without
 * clearing the last one first (which would cost an allocation on every launch). */
static _Thread_local uint64_t failures;

uint64_t kp__fail_count(void)
{
    return failures;
}

/* Slots of threads that have gone away are reused; beyond this many the oldest is dropped. */
#define MAX_SLOTS 64

static kp__error_slot *slot_for(kp_runtime *rt, int create)
{
    pthread_t self = pthread_self();
    size_t count = 0;
    kp__error_slot *prev = NULL;
    for (kp__error_slot *s = rt->errors; s; prev = s, s = s->next, count++)
        if (pthread_equal(s->thread, self))
            return s;
    if (!create)
        return NULL;
    if (count >= MAX_SLOTS && prev) {
        /* Drop the last slot (the least recently added). */
        kp__error_slot **pp = &rt->errors;
        while ((*pp)->next)
            pp = &(*pp)->next;
        free((*pp)->message);
        free(*pp);
        *pp = NULL;
    }
    kp__error_slot *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->thread = self;
    s->next = rt->errors;
    rt->errors = s;
    return s;
}

static void store(const kp_runtime *crt, char *message)
{
    failures++;
    if (!crt) {
        free(no_runtime_message);
        no_runtime_message = message;
        return;
    }
    /* The error slots are bookkeeping, not part of the runtime's observable state. */
    kp_runtime *rt = (kp_runtime *)crt;
    pthread_mutex_lock(&rt->error_lock);
    kp__error_slot *s = slot_for(rt, 1);
    if (s) {
        free(s->message);
        s->message = message;
    } else {
        free(message);
    }
    pthread_mutex_unlock(&rt->error_lock);
}

kp_status kp__failv(const kp_runtime *rt, kp_status status, const char *fmt, va_list ap)
{
    store(rt, kp__vasprintf(fmt, ap));
    return status;
}

kp_status kp__fail(const kp_runtime *rt, kp_status status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    kp__failv(rt, status, fmt, ap);
    va_end(ap);
    return status;
}

kp_status kp_error_set(const kp_runtime *rt, kp_status status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    kp__failv(rt, status, fmt, ap);
    va_end(ap);
    return status;
}

kp_status kp__fail_prefix(const kp_runtime *rt, kp_status status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *prefix = kp__vasprintf(fmt, ap);
    va_end(ap);
    const char *old = kp_last_error(rt);
    char *message = kp__asprintf("%s: %s", prefix ? prefix : "", old);
    free(prefix);
    store(rt, message);
    return status;
}

const char *kp_last_error(const kp_runtime *crt)
{
    if (!crt)
        return no_runtime_message ? no_runtime_message : "";
    kp_runtime *rt = (kp_runtime *)crt;
    pthread_mutex_lock(&rt->error_lock);
    kp__error_slot *s = slot_for(rt, 0);
    const char *m = s && s->message ? s->message : "";
    pthread_mutex_unlock(&rt->error_lock);
    return m;
}

void kp__errors_free(kp_runtime *rt)
{
    for (kp__error_slot *s = rt->errors, *next; s; s = next) {
        next = s->next;
        free(s->message);
        free(s);
    }
    rt->errors = NULL;
}
