/* SPDX-License-Identifier: Apache-2.0 */
/* The output structs the extension passes to the library, initialised in one place each. */
#include <string.h>

#include "kpy.h"

/* Every output struct starts with a struct_size the caller sets, so that a newer library writes
 * no field this extension lacks (docs/stability.md). */
void kpy_kernel_info_init(kp_kernel_info *info)
{
    memset(info, 0, sizeof *info);
    info->struct_size = sizeof *info;
}

void kpy_param_info_init(kp_param_info *info)
{
    memset(info, 0, sizeof *info);
    info->struct_size = sizeof *info;
}

void kpy_tuning_info_init(kp_tuning_info *info)
{
    memset(info, 0, sizeof *info);
    info->struct_size = sizeof *info;
}

void kpy_plugin_record_init(kp_plugin_record *record)
{
    memset(record, 0, sizeof *record);
    record->struct_size = sizeof *record;
}

void kpy_device_info_init(kp_device_info *info)
{
    memset(info, 0, sizeof *info);
    info->struct_size = sizeof *info;
}

void kpy_bench_result_init(kp_bench_result *result)
{
    memset(result, 0, sizeof *result);
    result->struct_size = sizeof *result;
}

void kpy_manifest_layer_init(kp_manifest_layer *layer)
{
    memset(layer, 0, sizeof *layer);
    layer->struct_size = sizeof *layer;
}
