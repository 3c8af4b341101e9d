// The case-insensitive fallback for "cat" spellings outside Kineto's own table.
#include "kineto/categories.h"

namespace replay::kineto {
namespace {

bool iequals(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i) {
        char x = a[i], y = b[i];
        if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
        if (x != y) return false;
    }
    return true;
}

}  // namespace

Category categorize_unknown(std::string_view cat) {
    if (iequals(cat, "kernel")) return Category::Kernel;
    if (iequals(cat, "cpu_op") || iequals(cat, "operator")) return Category::CpuOp;
    if (iequals(cat, "cuda_runtime") || iequals(cat, "runtime")) return Category::Runtime;
    if (iequals(cat, "gpu_memcpy") || iequals(cat, "memcpy")) return Category::Memcpy;
    if (iequals(cat, "gpu_memset") || iequals(cat, "memset")) return Category::Memset;
    if (iequals(cat, "cuda_driver")) return Category::Driver;
    if (iequals(cat, "user_annotation")) return Category::Annotation;
    if (iequals(cat, "python_function")) return Category::PythonFunction;
    if (iequals(cat, "cuda_sync")) return Category::Sync;
    return Category::Other;
}

}  // namespace replay::kineto
