/* SPDX-License-Identifier: Apache-2.0 */
/* Internal: registry helpers shared with the loader and the tuner. */
#ifndef KP_REGISTRY_H
#define KP_REGISTRY_H

#include "runtime.h"

struct kp_registrar {
    kp_runtime *rt;
    kp__plugin *plugin;
};

/* Drops every kernel a plugin registered (its init failed after registering some). */
void kp__registry_remove_plugin(kp_runtime *rt, const kp__plugin *plugin);
/* Non-zero when v is one of the tunable's allowed values, choices, or within its range. */
int kp__tunable_allows(const kp_tunable_desc *t, int64_t v);

#endif
