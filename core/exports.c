/* SPDX-License-Identifier: Apache-2.0 */
/* The public headers' inline helpers, exported by the library as real symbols: a program in
 * another language (a Rust or Python binding) calls them through the C ABI like any function. */

/* The headers define every helper with KP_INLINE: here that makes one external definition of
 * each, with default visibility, instead of a static copy. */
#define KP_INLINE __attribute__((visibility("default")))

/* The definitions are their own prototypes (the headers declare nothing else). */
#pragma GCC diagnostic ignored "-Wmissing-prototypes"

#include "kernelport/kernelport.h"
#include "kernelport/ops/gru.h"
#include "kernelport/ops/logic-ca.h"
#include "kernelport/ops/logic.h"
#include "kernelport/ops/optim.h"
#include "kernelport/ops/random.h"
#include "kernelport/ops/tc.h"
#include "kernelport/ops/tensor.h"
