/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target: the manifest loader on arbitrary bytes. Whatever it is given, it either loads
 * the text or refuses it with a message in the documented form; it never crashes or leaks. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "manifest/manifest.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    kp__manifest m;
    kp__manifest_init(&m);
    char *err = NULL;
    kp_status st = kp__manifest_load_text(&m, (const char *)data, size, "fuzz.yaml", 0, &err);
    /* Every refusal names the file first: "fuzz.yaml:LINE:COL: error: ...". */
    if (st == KP_ERR_MANIFEST && (!err || strncmp(err, "fuzz.yaml:", 10) != 0))
        abort();
    if (st == KP_OK && err)
        abort();
    free(err);
    kp__manifest_fini(&m);
    return 0;
}
