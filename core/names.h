/* SPDX-License-Identifier: Apache-2.0 */
/* Internal: the one definition of valid kernel, tunable and parameter names. */
#ifndef KP_NAMES_H
#define KP_NAMES_H

/* "family.op": lowercase letters, digits and '_' in two or more '.'-separated segments. */
int kp__name_is_kernel(const char *s);
/* '.'-separated segments, each a C identifier: "WG", "clblast.Xgemm.MWG". */
int kp__name_is_tunable(const char *s);
/* A C identifier: a parameter name. */
int kp__name_is_identifier(const char *s);

#endif
