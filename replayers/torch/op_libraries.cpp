#include "op_libraries.h"

#include <dlfcn.h>
#include <torch/version.h>

#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <string_view>

namespace replay::torch_detail {
namespace {

struct DlClose {
    void operator()(void* handle) const { dlclose(handle); }
};
using Library = std::unique_ptr<void, DlClose>;

struct Loaded {
    Library library;
    std::string note;
};

std::string version_text() {
    return std::string("this libtorch (") + TORCH_VERSION + ")";
}

std::mutex mutex;
std::map<std::string, Loaded> loaded;  // path -> handle (null when it failed), note
std::size_t loaded_count = 0;

}  // namespace

std::size_t loaded_op_libraries() {
    std::lock_guard<std::mutex> lock(mutex);
    return loaded_count;
}

std::vector<std::string> load_op_libraries() {
    const char* env = std::getenv("REPLAY_TORCH_LIBRARIES");
    std::vector<std::string> notes;
    if (env == nullptr) return notes;
    std::lock_guard<std::mutex> lock(mutex);
    std::string_view paths(env);
    while (!paths.empty()) {
        const auto colon = paths.find(':');
        const std::string path(paths.substr(0, colon));
        paths = colon == std::string_view::npos ? std::string_view() : paths.substr(colon + 1);
        if (path.empty()) continue;
        auto [it, inserted] = loaded.try_emplace(path);
        if (inserted) {
            // Lazy binding: Python extension modules (vLLM's _C.abi3.so) leave the interpreter's
            // functions unresolved until called, and their op kernels never call them. NODELETE
            // keeps the code of registered kernels mapped whatever dlclose does at exit.
            dlerror();
            it->second.library.reset(dlopen(path.c_str(), RTLD_LAZY | RTLD_GLOBAL | RTLD_NODELETE));
            if (it->second.library) {
                ++loaded_count;
                it->second.note = "loaded custom-op library " + path;
            } else {
                const char* error = dlerror();
                it->second.note = "could not load custom-op library " + path + ": " +
                                  (error != nullptr ? error : "unknown dlopen error");
            }
        }
        notes.push_back(it->second.note);
    }
    return notes;
}

std::string missing_op_reason(const std::string& op) {
    const auto colons = op.find("::");
    const std::string ns = colons == std::string::npos ? std::string() : op.substr(0, colons);
    const std::string load = "load its library with REPLAY_TORCH_LIBRARIES=";
    if (ns == "aten" || ns == "prims" || ns.empty())
        return version_text() + " has no " + op +
               ": replay with a libtorch as new as the recording's";
    if (ns == "vllm")
        return op + " is a vLLM custom op registered from vLLM's Python package, not in " +
               version_text() +
               ": it replays only inside vLLM (the C++ ops it calls, _C:: and _moe_C::, load "
               "with REPLAY_TORCH_LIBRARIES=<site-packages>/vllm/_C.abi3.so:...)";
    if (ns == "_C" || ns == "_C_cache_ops" || ns == "_C_custom_ar" || ns == "_moe_C")
        return op + " is a vLLM C++ custom op, not in " + version_text() + ": " + load +
               "<site-packages>/vllm/" + (ns == "_moe_C" ? "_moe_C" : "_C") + ".abi3.so";
    if (ns == "_vllm_fa2_C" || ns == "_vllm_fa3_C")
        return op + " is vLLM's flash-attention op, not in " + version_text() + ": " + load +
               "<site-packages>/vllm/vllm_flash_attn/" + ns + ".abi3.so";
    if (ns == "sgl_kernel")
        return op + " is an SGLang custom op, not in " + version_text() + ": " + load +
               "<site-packages>/sgl_kernel/common_ops.*.so";
    if (ns == "fbgemm")
        return op + " is an FBGEMM_GPU custom op, not in " + version_text() + ": " + load +
               "<site-packages>/fbgemm_gpu/fbgemm_gpu_py.so";
    return op + " is a custom op (namespace " + ns + "), not in " + version_text() + ": " + load +
           "<the shared library that registers it>";
}

}  // namespace replay::torch_detail
