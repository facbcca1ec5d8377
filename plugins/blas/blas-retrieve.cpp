/* SPDX-License-Identifier: Apache-2.0 */
// Reads CLBlast's current tuning parameters: its C API (1.5.3) can override them but not read them.
#include <cstdio>
#include <exception>
#include <string>
#include <unordered_map>

#include <clblast.h>

#include "blas-retrieve.h"

int blas_retrieve_parameters(void *device, const char *kernel, int precision, size_t n,
                             const char *const *names, size_t *values, char *why, size_t why_size)
{
    // Nothing may unwind into the C caller: a failed allocation becomes CLBlast's own
    // "unexpected error" status.
    try {
        std::unordered_map<std::string, size_t> params;
        clblast::StatusCode st =
            clblast::RetrieveParameters(static_cast<cl_device_id>(device), kernel,
                                        static_cast<clblast::Precision>(precision), params);
        if (st != clblast::StatusCode::kSuccess)
            return static_cast<int>(st);
        // OverrideParameters needs exactly CLBlast's names; a CLBlast with other parameters
        // than the ones this plugin was written for must not be half-overridden.
        std::string missing;
        for (size_t i = 0; i < n; i++) {
            auto it = params.find(names[i]);
            if (it == params.end()) {
                missing += missing.empty() ? "" : ", ";
                missing += names[i];
            } else {
                values[i] = it->second;
            }
        }
        if (!missing.empty() || params.size() != n) {
            std::string theirs;
            for (const auto &p : params)
                theirs += (theirs.empty() ? "" : ", ") + p.first;
            std::snprintf(why, why_size,
                          "CLBlast's %s has parameters {%s}; this plugin expects %zu of them "
                          "(missing: %s)",
                          kernel, theirs.c_str(), n, missing.empty() ? "none" : missing.c_str());
            return BLAS_RETRIEVE_MISMATCH;
        }
        return 0;
    } catch (const std::exception &e) {
        std::snprintf(why, why_size, "RetrieveParameters(%s): %s", kernel, e.what());
        return static_cast<int>(clblast::StatusCode::kUnexpectedError);
    }
}
