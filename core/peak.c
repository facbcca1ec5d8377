/* SPDX-License-Identifier: Apache-2.0 */
/* Device peaks: measured by the backend once per device and driver, then read from the cache. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "runtime.h"
#include "sha256.h"
#include "struct-size.h"

#define PEAK_FORMAT "kernelport-peak 3"

/* One file per device and driver: a new driver gets measured again. */
static char *peak_path(const kp_runtime *rt)
{
    if (!rt->cache_dir)
        return NULL;
    const kp_device_info *d = kp__device(rt);
    char *id = kp__asprintf("%s\n%s\n%s\n%s", d->name, d->driver, d->version, d->platform);
    if (!id)
        return NULL;
    uint8_t digest[32];
    char hex[65];
    kp__sha256(id, strlen(id), digest);
    kp__sha256_hex(digest, hex);
    free(id);
    hex[16] = '\0';
    return kp__asprintf("%s/peak-%s.txt", rt->cache_dir, hex);
}

static int read_cache(const char *path, kp_peak *p)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    char line[256];
    int fields = 0;
    if (!fgets(line, sizeof line, f) || strncmp(line, PEAK_FORMAT, strlen(PEAK_FORMAT)) != 0) {
        fclose(f);
        return 0;
    }
    while (fgets(line, sizeof line, f)) {
        char key[64], value[64];
        if (sscanf(line, "%63s %63s", key, value) != 2)
            continue;
        double v = strtod(value, NULL);
        if (strcmp(key, "bandwidth_gbs") == 0 && ++fields)
            p->bandwidth_gbs = v;
        else if (strcmp(key, "read_gbs") == 0 && ++fields)
            p->read_gbs = v;
        else if (strcmp(key, "copy_gbs") == 0 && ++fields)
            p->copy_gbs = v;
        else if (strcmp(key, "triad_gbs") == 0 && ++fields)
            p->triad_gbs = v;
        else if (strcmp(key, "vector_width") == 0 && ++fields)
            p->vector_width = (uint32_t)v;
        else if (strcmp(key, "fp32_gflops") == 0 && ++fields)
            p->fp32_gflops = v;
        else if (strcmp(key, "launch_us") == 0 && ++fields)
            p->launch_us = v;
        else if (strcmp(key, "roundtrip_us") == 0 && ++fields)
            p->roundtrip_us = v;
        else if (strcmp(key, "measured") == 0 && ++fields)
            snprintf(p->measured, sizeof p->measured, "%.31s", value);
    }
    fclose(f);
    return fields == 9 && p->bandwidth_gbs > 0 && p->fp32_gflops > 0;
}

static void write_cache(const kp_runtime *rt, const char *path, const kp_peak *p)
{
    char *tmp = kp__asprintf("%s.tmp-%ld", path, (long)getpid());
    FILE *f = tmp ? fopen(tmp, "w") : NULL;
    if (!f) {
        free(tmp);
        return;
    }
    fprintf(f,
            "%s\nbandwidth_gbs %.6g\nread_gbs %.6g\ncopy_gbs %.6g\ntriad_gbs %.6g\n"
            "vector_width %u\nfp32_gflops %.6g\nlaunch_us %.6g\nroundtrip_us %.6g\nmeasured %s\n",
            PEAK_FORMAT, p->bandwidth_gbs, p->read_gbs, p->copy_gbs, p->triad_gbs, p->vector_width,
            p->fp32_gflops, p->launch_us, p->roundtrip_us, p->measured);
    int failed = fclose(f) != 0;
    if (failed || rename(tmp, path) != 0) {
        kp__log(rt, KP_LOG_WARN, "cannot write the peak cache %s: %s", path, strerror(errno));
        unlink(tmp);
    }
    free(tmp);
}

kp_status kp_device_peak(kp_runtime *rt, int remeasure, kp_peak *out)
{
    if (!rt)
        return kp__fail(rt, KP_ERR_INVALID_ARG, "kp_device_peak: NULL argument");
    kp_status st = KP__OUT_CHECK(rt, "kp_device_peak", kp_peak, out);
    if (st != KP_OK)
        return st;
    if (!rt->ops->peak)
        return kp__fail(rt, KP_ERR_UNSUPPORTED, "peaks are not measured on %s",
                        kp__device(rt)->name);
    pthread_mutex_lock(&rt->lock);
    char *path = peak_path(rt);
    if (!remeasure && rt->peak.struct_size) {
        KP__OUT_WRITE(kp_peak, out, &rt->peak);
    } else {
        kp_peak p = {.struct_size = sizeof p};
        if (!remeasure && path && read_cache(path, &p)) {
            p.from_cache = 1;
        } else {
            st = rt->ops->peak(rt->backend, &p);
            time_t now = time(NULL);
            struct tm tm;
            gmtime_r(&now, &tm);
            strftime(p.measured, sizeof p.measured, "%Y-%m-%dT%H:%M:%SZ", &tm);
            if (st == KP_OK && path)
                write_cache(rt, path, &p);
        }
        if (st == KP_OK) {
            rt->peak = p;
            KP__OUT_WRITE(kp_peak, out, &p);
        }
    }
    pthread_mutex_unlock(&rt->lock);
    free(path);
    return st;
}
