// `replay ncu-cmd KERNEL_ID TRACE|--kernels FILE`: prints the Nsight Compute command line that
// profiles exactly that unique kernel: a unique-mode replay of it alone (--only, one run, no
// warmup) inside its NVTX range, which ncu selects with --nvtx-include, its kernel name with -k
// and -c 1.
#include <filesystem>
#include <iostream>
#include <memory>

#include "commands.h"
#include "replay/ncu_command.h"
#include "replay/recipe_json.h"
#include "trace_loader.h"

namespace replay::cli {
namespace {

struct NcuState {
    std::string kernel_id, trace, kernel_file, out_dir, report;
    LoadOptions load;
};

const UniqueKernel& find_kernel(const std::vector<UniqueKernel>& kernels, const std::string& id,
                                const std::string& source) {
    for (const auto& k : kernels)
        if (k.id == id) {
            if (k.kind != ActivityKind::Kernel)
                throw std::runtime_error(id + " is a " + to_string(k.kind) +
                                         ": Nsight Compute profiles kernels");
            if (!k.recipe.replayable() || k.recipe.issued_with_op)
                throw std::runtime_error(
                    id + " is not replayed on its own (" +
                    (k.recipe.issued_with_op ? std::string("it is issued with its op's kernel")
                                             : k.recipe.reason) +
                    "): profile the kernel that issues it");
            return k;
        }
    throw std::runtime_error("no unique kernel " + id + " in " + source +
                             " (ids: `replay classify` or report.json)");
}

int run_ncu(const NcuState& s) {
    if (s.trace.empty() == s.kernel_file.empty())
        throw std::runtime_error("give a TRACE or --kernels FILE (one of them)");
    NcuTarget t;
    t.kernel_id = s.kernel_id;
    std::error_code error;
    const auto self = std::filesystem::read_symlink("/proc/self/exe", error);
    t.replay = error ? "replay" : self.string();
    if (!s.trace.empty()) {
        const auto analysis = load_trace(s.trace, s.load);
        t.kernel_name = find_kernel(analysis->kernels, s.kernel_id, s.trace).name;
        t.source_args = {s.trace};
        if (!s.load.et.empty()) t.source_args.insert(t.source_args.end(), {"--et", s.load.et});
        if (!s.load.shapes.empty())
            t.source_args.insert(t.source_args.end(), {"--shapes", s.load.shapes});
    } else {
        const SignatureFile file = read_signature_file(s.kernel_file);
        t.kernel_name = find_kernel(file.kernels, s.kernel_id, s.kernel_file).name;
        t.source_args = {"--kernels", s.kernel_file};
    }
    t.out_dir = s.out_dir.empty() ? "ncu_" + s.kernel_id : s.out_dir;
    t.report = s.report.empty() ? "ncu_" + s.kernel_id : s.report;
    std::cout << ncu_command(t) << "\n";
    return 0;
}

}  // namespace

Command add_ncu_command(CLI::App& app) {
    auto s = std::make_shared<NcuState>();
    auto* ncu = app.add_subcommand(
        "ncu-cmd",
        "Print the Nsight Compute (ncu) command line that profiles exactly one unique kernel: "
        "a unique-mode replay of that kernel alone (--only ID --warmup 0 --runs 1 --nvtx) whose "
        "NVTX range ncu selects (--nvtx --nvtx-include \"<range>/\", -k regex:<name>, -c 1)");
    ncu->add_option("kernel_id", s->kernel_id, "Unique-kernel id (report.json, kernels.csv, "
                                                "`replay classify`)")
        ->required();
    add_trace_argument(*ncu, s->trace);
    ncu->add_option("--kernels", s->kernel_file,
                    "A kernel_signatures.json (from `replay classify`) instead of the trace");
    ncu->add_option("--out", s->out_dir, "The replay's --out in the command (default ncu_ID)");
    ncu->add_option("-o,--ncu-report", s->report, "ncu's -o report name (default ncu_ID)");
    add_load_options(*ncu, s->load, SideFiles::Offered);
    return {ncu, [s] { return run_ncu(*s); }};
}

}  // namespace replay::cli
