/* SPDX-License-Identifier: Apache-2.0 */
/* Hopper's sm_90a PTX from what NVIDIA's OpenCL compiler emits (sm_90): shared by the program
 * builds (cl-program.c) and bench/probes/tc-ceilings, which builds with plain OpenCL. */
#ifndef KP_CL_PTX_H
#define KP_CL_PTX_H

/* What a kernel writes before each sm_90a instruction in its inline asm: a PTX comment, so the
 * sm_90 build accepts it. */
#define KP_PTX_SM90A_MARK "//KP:"

/*
 * `ptx` (NUL-terminated PTX text) with its ".target sm_90" raised to sm_90a and every
 * KP_PTX_SM90A_MARK removed, malloc'ed (the caller frees it); NULL when the text is not PTX for
 * sm_90 or memory runs out. Pure: safe from any thread.
 */
char *kp__ptx_sm90a(const char *ptx);

#endif
