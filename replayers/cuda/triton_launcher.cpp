#include "triton_launcher.h"

#include <dlfcn.h>

#include <mutex>
#include <stdexcept>

namespace replay::cuda {
namespace {

// The few driver API declarations used here (cuda.h), by value: the header's types are not
// needed to call through dlsym'ed pointers.
using CUresult = int;
constexpr CUresult kSuccess = 0;
constexpr int kMaxDynamicSharedAttribute = 8;  // CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES

struct DriverApi {
    CUresult (*module_load_data)(void**, const void*) = nullptr;
    CUresult (*module_unload)(void*) = nullptr;
    CUresult (*module_get_function)(void**, void*, const char*) = nullptr;
    CUresult (*func_set_attribute)(void*, int, int) = nullptr;
    CUresult (*launch_kernel)(void*, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                              unsigned, void*, void**, void**) = nullptr;
    CUresult (*get_error_string)(CUresult, const char**) = nullptr;
    std::string why;  // empty when loaded
};

template <typename F>
bool resolve(void* library, const char* name, F& out) {
    out = reinterpret_cast<F>(dlsym(library, name));
    return out != nullptr;
}

// Loaded once, kept for the process: modules stay loaded while their kernels may run.
const DriverApi& driver() {
    static DriverApi api;
    static std::once_flag once;
    std::call_once(once, [] {
        void* library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
        if (library == nullptr) {
            const char* e = dlerror();
            api.why = std::string("cannot load libcuda.so.1: ") + (e != nullptr ? e : "unknown");
            return;
        }
        const bool ok = resolve(library, "cuModuleLoadData", api.module_load_data) &&
                        resolve(library, "cuModuleUnload", api.module_unload) &&
                        resolve(library, "cuModuleGetFunction", api.module_get_function) &&
                        resolve(library, "cuFuncSetAttribute", api.func_set_attribute) &&
                        resolve(library, "cuLaunchKernel", api.launch_kernel) &&
                        resolve(library, "cuGetErrorString", api.get_error_string);
        if (!ok) api.why = "libcuda.so.1 lacks an expected entry point";
    });
    return api;
}

std::string error_text(CUresult r) {
    const char* text = nullptr;
    if (driver().get_error_string != nullptr) driver().get_error_string(r, &text);
    return text != nullptr ? text : "CUDA driver error " + std::to_string(r);
}

}  // namespace

std::unique_ptr<TritonKernel> TritonKernel::load(const std::string& cubin, const std::string& name,
                                                 int shared_bytes, std::string& why) {
    const DriverApi& api = driver();
    if (!api.why.empty()) {
        why = api.why;
        return nullptr;
    }
    std::unique_ptr<TritonKernel> k(new TritonKernel());
    if (CUresult r = api.module_load_data(&k->module_, cubin.data()); r != kSuccess) {
        k->module_ = nullptr;
        why = "cuModuleLoadData of " + name + ": " + error_text(r);
        return nullptr;
    }
    if (CUresult r = api.module_get_function(&k->function_, k->module_, name.c_str());
        r != kSuccess) {
        why = "cuModuleGetFunction " + name + ": " + error_text(r);
        return nullptr;
    }
    // Above 48 KiB, dynamic shared memory must be allowed explicitly (Triton's launcher does so).
    if (shared_bytes > 48 * 1024) {
        if (CUresult r = api.func_set_attribute(k->function_, kMaxDynamicSharedAttribute,
                                                shared_bytes);
            r != kSuccess) {
            why = name + " needs " + std::to_string(shared_bytes) +
                  " bytes of shared memory: " + error_text(r);
            return nullptr;
        }
    }
    return k;
}

TritonKernel::~TritonKernel() {
    if (module_ != nullptr && driver().module_unload != nullptr) driver().module_unload(module_);
}

void TritonKernel::launch(const std::int32_t grid[3], int threads, int shared_bytes,
                          const std::vector<std::uint64_t>& args,
                          const std::vector<int>& arg_bytes, cudaStream_t stream) const {
    // Each parameter's value in its own width: a .u32 parameter reads 4 bytes.
    std::vector<std::uint32_t> narrow(args.size());
    std::vector<void*> params(args.size());
    for (std::size_t i = 0; i < args.size(); ++i) {
        if (arg_bytes[i] == 4) {
            narrow[i] = static_cast<std::uint32_t>(args[i]);
            params[i] = &narrow[i];
        } else {
            params[i] = const_cast<std::uint64_t*>(&args[i]);
        }
    }
    const CUresult r = driver().launch_kernel(
        function_, static_cast<unsigned>(grid[0]), static_cast<unsigned>(grid[1]),
        static_cast<unsigned>(grid[2]), static_cast<unsigned>(threads), 1, 1,
        static_cast<unsigned>(shared_bytes), stream, params.data(), nullptr);
    if (r != kSuccess) throw std::runtime_error("cuLaunchKernel: " + error_text(r));
}

}  // namespace replay::cuda
