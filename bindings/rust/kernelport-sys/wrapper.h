/* SPDX-License-Identifier: Apache-2.0 */
/* What bindgen reads for kernelport-sys: the application API, the typed calls of the families and
 * the solve layer.
 * The plugin ABI (plugin.h) is left out: plugins are written in C. */
#include <kernelport/kernelport.h>
#include <kernelport/ops/gru.h>
#include <kernelport/ops/logic.h>
#include <kernelport/ops/optim.h>
#include <kernelport/ops/random.h>
#include <kernelport/ops/tc.h>
#include <kernelport/ops/tensor.h>
#include <kernelport/solve.h>
