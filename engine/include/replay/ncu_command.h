// Nsight hooks: the NVTX range that `replay --nvtx` puts around each replayed issue, and the
// Nsight Compute command line that profiles exactly one unique kernel (`replay ncu-cmd`).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace replay {

// The NVTX range of an issue: the unique-kernel id and recorded name of the first kernel it
// re-creates, and the iteration (sequential: the timed pass, 0 for the untimed plan pass, named
// "(plan)"; unique: that kernel's issue, warmups first, counting from 1):
// "1f0c2d... void gemm<...>(...) (iteration 1)".
std::string nvtx_range_name(std::string_view kernel_id, std::string_view kernel_name,
                            int iteration);

// The function's own name in a demangled kernel name, as Nsight Compute's default
// --kernel-name-base (function) shows it: no return type, scope, template arguments or
// parameters ("void at::native::(anonymous namespace)::f<c10::Half>(int)" -> "f").
std::string kernel_function_name(std::string_view demangled);

// `text` as one POSIX shell word (single-quoted when it needs quoting).
std::string shell_quote(std::string_view text);
// `text` with the characters that an ECMAScript / PCRE pattern treats specially escaped.
std::string regex_escape(std::string_view text);

struct NcuTarget {
    std::string kernel_id, kernel_name;
    std::string replay;                    // the replay executable
    std::vector<std::string> source_args;  // TRACE [--et F] [--shapes F], or --kernels FILE
    std::string out_dir;                   // the replay's --out
    std::string report;                    // ncu -o (a .ncu-rep is added by ncu)
};
// ncu --nvtx --nvtx-include "<range>/" -k regex:<function> -c 1 -o REPORT replay ... --mode
// unique --only ID --warmup 0 --runs 1 --no-sequential-check --nvtx --backend cuda --out DIR
std::string ncu_command(const NcuTarget& target);

}  // namespace replay
