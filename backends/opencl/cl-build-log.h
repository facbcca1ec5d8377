/* SPDX-License-Identifier: Apache-2.0 */
/* A build log's locations mapped back to the files a program's text was made of. */
#ifndef KP_CL_BUILD_LOG_H
#define KP_CL_BUILD_LOG_H

#include <stdint.h>

/*
 * The program whose text is text[0..n_text) (concatenated; each file in it begins with a
 * `#line N "file"` directive) failed to build with `log`. A compiler that honours #line names
 * those files itself; one that does not (Oclgrind's `input.cl`, or a driver's temporary file such
 * as PoCL's `tempfile_teVzYq.cl` for text before any #line) counts lines from the start of the
 * text. Returns a malloc'ed copy of `log` in which every `FILE:LINE:COL` whose FILE is not named
 * by a #line of the text, and whose LINE falls in a file of the text, reads `file:line:COL` of that
 * file; NULL when memory runs out. Pure: safe from any thread.
 */
char *kp__build_log_map(const char *log, const char *const *text, uint32_t n_text);

#endif
