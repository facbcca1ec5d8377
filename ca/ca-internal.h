/* SPDX-License-Identifier: Apache-2.0 */
/* What libkernelport-ca's files share about a kp_ca beyond kernelport/ca.h (not exported). */
#ifndef KP_CA_INTERNAL_H
#define KP_CA_INTERNAL_H

#include "kernelport/ca.h"

/* The runtime the CA was created on, and its options as given to kp_ca_create. */
kp_runtime *kp__ca_runtime(const kp_ca *ca);
const kp_ca_options *kp__ca_options(const kp_ca *ca);

#endif
