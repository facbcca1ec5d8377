/* SPDX-License-Identifier: Apache-2.0 */
/* Events: waiting on a launch and reading its device time. */
#include <stdlib.h>

#include "runtime.h"

kp_status kp_event_wait(kp_runtime *rt, kp_event *ev)
{
    if (!rt || !ev)
        return kp__fail(rt, KP_ERR_INVALID_ARG, "kp_event_wait: NULL runtime or event");
    return ev->is_host ? KP_OK : rt->ops->event_wait(rt->backend, &ev->record);
}

kp_status kp_event_elapsed(kp_runtime *rt, kp_event *ev, double *seconds)
{
    if (!rt || !ev || !seconds)
        return kp__fail(rt, KP_ERR_INVALID_ARG, "kp_event_elapsed: NULL argument");
    if (ev->is_host) {
        *seconds = ev->host_seconds;
        return KP_OK;
    }
    return rt->ops->event_elapsed(rt->backend, &ev->record, seconds);
}

void kp_event_destroy(kp_runtime *rt, kp_event *ev)
{
    if (!ev)
        return;
    if (rt && !ev->is_host)
        rt->ops->event_release(rt->backend, &ev->record);
    free(ev);
}
