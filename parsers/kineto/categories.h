// The event categories ("cat") the parser tells apart: Kineto's spellings from 2021 on, matched
// exactly on the hot path (a table checked at compile time), and any other spelling by a
// case-insensitive fallback.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

#include "kineto/scanner.h"

namespace replay::kineto {

enum class Category : std::uint8_t {
    Kernel,
    Memcpy,
    Memset,
    CpuOp,
    Annotation,
    PythonFunction,
    Runtime,
    Driver,
    Sync,
    Other,
    Missing
};

// The "cat" spellings Kineto writes, matched exactly (index + 1 is the spelling's number).
struct KnownCategory {
    std::string_view text;
    Category category;
};
constexpr std::array<KnownCategory, 16> kKnownCategories{{
    {"kernel", Category::Kernel},
    {"Kernel", Category::Kernel},
    {"cpu_op", Category::CpuOp},
    {"Operator", Category::CpuOp},
    {"cuda_runtime", Category::Runtime},
    {"Runtime", Category::Runtime},
    {"gpu_memcpy", Category::Memcpy},
    {"Memcpy", Category::Memcpy},
    {"gpu_memset", Category::Memset},
    {"Memset", Category::Memset},
    {"python_function", Category::PythonFunction},
    {"user_annotation", Category::Annotation},
    {"cuda_driver", Category::Driver},
    {"ac2g", Category::Other},
    {"async", Category::Other},
    {"async_cpu_to_gpu", Category::Other},
}};

// A known spelling's number, checked against the table when compiling.
template <std::size_t N>
consteval std::uint8_t spelling_number(const char (&text)[N]) {
    for (std::size_t i = 0; i < kKnownCategories.size(); ++i)
        if (kKnownCategories[i].text == std::string_view(text, N - 1))
            return static_cast<std::uint8_t>(i + 1);
    throw "not in kKnownCategories";
}

// The number of a known spelling (1..kKnownCategories.size()), 0 for any other text.
inline std::uint8_t known_category(std::string_view cat) {
    switch (cat.size()) {
        case 4:
            return is(cat, "ac2g") ? spelling_number("ac2g") : 0;
        case 5:
            return is(cat, "async") ? spelling_number("async") : 0;
        case 6:
            return is(cat, "kernel")   ? spelling_number("kernel")
                   : is(cat, "Kernel") ? spelling_number("Kernel")
                   : is(cat, "cpu_op") ? spelling_number("cpu_op")
                   : is(cat, "Memcpy") ? spelling_number("Memcpy")
                   : is(cat, "Memset") ? spelling_number("Memset")
                                       : 0;
        case 7:
            return is(cat, "Runtime") ? spelling_number("Runtime") : 0;
        case 8:
            return is(cat, "Operator") ? spelling_number("Operator") : 0;
        case 10:
            return is(cat, "gpu_memcpy")   ? spelling_number("gpu_memcpy")
                   : is(cat, "gpu_memset") ? spelling_number("gpu_memset")
                                           : 0;
        case 11:
            return is(cat, "cuda_driver") ? spelling_number("cuda_driver") : 0;
        case 12:
            return is(cat, "cuda_runtime") ? spelling_number("cuda_runtime") : 0;
        case 15:
            return is(cat, "python_function")   ? spelling_number("python_function")
                   : is(cat, "user_annotation") ? spelling_number("user_annotation")
                                                : 0;
        case 16:
            return is(cat, "async_cpu_to_gpu") ? spelling_number("async_cpu_to_gpu") : 0;
        default:
            return 0;
    }
}

// Any other spelling ("KERNEL", "cuda_sync", ...): a case-insensitive match, else Other.
Category categorize_unknown(std::string_view cat);

// The category of a "cat" text, given known_category(cat).
inline Category categorize(std::string_view cat, std::uint8_t known) {
    if (known != 0) return kKnownCategories[known - 1].category;
    return categorize_unknown(cat);
}

}  // namespace replay::kineto
