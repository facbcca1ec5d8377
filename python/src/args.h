/* SPDX-License-Identifier: Apache-2.0 */
/* Keyword arguments to kp_args, by the kernel's parameter descriptions. */
#ifndef KPY_ARGS_H
#define KPY_ARGS_H

#include "kpy.h"

/*
 * Converts keyword arguments (values[i] named by the str names[i]; names may be NULL for none)
 * into out[0 .. *n_out): a Buffer for a tensor parameter (its view), an int (or an object with
 * __index__) for an int parameter, a number for a float parameter. None leaves a parameter out
 * (its default). A name the kernel lacks is passed on, for the library to refuse with its list of
 * parameters. The names in out point into the kernel's parameters or into `names`' strings, which
 * must outlive the use of out. Returns 0, or -1 with a TypeError naming the kernel and argument.
 */
int kpy_args_convert(const kpy_kernel *k, PyObject *const *values, PyObject *names, kp_arg *out,
                     size_t *n_out);

#endif
