/* SPDX-License-Identifier: Apache-2.0 */
/* Fault injection at the OpenCL API, for the executable that links tests/cl-faults.c. */
#ifndef KP_TEST_CL_FAULTS_H
#define KP_TEST_CL_FAULTS_H

#include <stddef.h>

/*
 * The executable defines the OpenCL entry points that allocate buffers, build programs and
 * enqueue work, and exports them (ENABLE_EXPORTS): the dynamic linker resolves every caller's
 * reference to them there first, the library's, the plugins' and CLBlast's alike. Each counts
 * its call and forwards it to the ICD loader's, except the armed one, which fails as a driver
 * would, touching nothing: with CL_BUILD_PROGRAM_FAILURE for clBuildProgram, and a lack of
 * memory or resources for the others (CL_MEM_OBJECT_ALLOCATION_FAILURE for clCreateBuffer,
 * CL_OUT_OF_HOST_MEMORY for the program creations, CL_OUT_OF_RESOURCES for the rest).
 *
 * It also keeps the API's reference count of every buffer, program, kernel and event created
 * through it, so that a test can see OpenCL objects left behind: LeakSanitizer cannot, since the
 * driver's allocations are suppressed (tests/lsan.supp).
 */

/* Counts injectable calls from now on; the n-th (from 1) fails. n 0 only counts. */
void cl_faults_arm(long n);
/* Stops counting and failing. */
void cl_faults_disarm(void);
/* The calls counted since the last arm. */
long cl_faults_calls(void);
/* The function that was failed since the last arm ("clCreateBuffer"), or NULL. */
const char *cl_faults_failed(void);

/* The objects created and not yet released, as "2 cl_mem, 1 cl_kernel" (empty when none) in
 * `out` (may be NULL with size 0); returns how many. Programs CLBlast created are left out: it
 * keeps them in a cache of its own for the life of the process. */
long cl_faults_live(char *out, size_t size);

#endif
