// cf_clblast_current (clblast_current.h): clblast::RetrieveParameters for C.
// No exception or C++ type crosses into the C code.
extern "C" {
#include "clblast_current.h"
#include "status.h"
}

#include <clblast.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

extern "C" clformer_status cf_clblast_current(cl_device_id device, const char *kernel, char *out,
                                              size_t cap)
{
    try {
        std::unordered_map<std::string, size_t> params;
        const clblast::StatusCode st =
            clblast::RetrieveParameters(device, kernel, clblast::Precision::kSingle, params);
        if (st != clblast::StatusCode::kSuccess)
            return cf_fail(CLFORMER_ERR_CLBLAST, "CLBlast could not say its %s parameters (status %d)",
                           kernel, static_cast<int>(st));
        std::vector<std::pair<std::string, size_t>> sorted(params.begin(), params.end());
        std::sort(sorted.begin(), sorted.end());
        std::string text;
        for (const auto &p : sorted) {
            if (!text.empty()) text += ' ';
            text += p.first + '=' + std::to_string(p.second);
        }
        if (text.size() >= cap)
            return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "CLBlast's %s parameters do not fit in %zu bytes",
                           kernel, cap);
        std::snprintf(out, cap, "%s", text.c_str());
        return CLFORMER_OK;
    } catch (...) {
        return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory reading CLBlast's %s parameters",
                       kernel);
    }
}
