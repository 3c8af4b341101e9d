// `replay classify TRACE -o FILE`: the unique kernels with their tiers, rules and recipes.
#include <cstdio>
#include <memory>
#include <utility>

#include "commands.h"
#include "output_files.h"
#include "replay/recipe_json.h"
#include "trace_loader.h"

namespace replay::cli {

Command add_classify_command(CLI::App& app) {
    struct State {
        std::string trace;
        LoadOptions load;
        std::string output = "kernel_signatures.json";
    };
    auto s = std::make_shared<State>();
    auto* classify = app.add_subcommand(
        "classify",
        "Write the unique kernels with their tiers, the rule that decided and their recipes");
    add_trace_argument(*classify, s->trace)->required();
    add_load_options(*classify, s->load, SideFiles::Offered);
    add_set_dims_option(*classify, s->load);
    classify
        ->add_option("-o,--output", s->output,
                     "Output file (schemas/kernel_signatures.schema.json)")
        ->capture_default_str();
    return {classify, [s] {
                auto analysis = load_trace(s->trace, s->load);
                SignatureFile file;
                file.trace = analysis->trace().source;
                file.trace_hash = analysis->trace_hash;
                file.dataflow = to_string(analysis->dataflow.source);
                file.kernels = analysis->kernels;
                for (auto& k : file.kernels) k.nodes.clear();
                write_file(s->output, [&](std::ostream& out) { write_signature_file(out, file); });
                if (!s->load.quiet)
                    std::fprintf(stderr,
                                 "wrote %s: %zu unique kernels, %.2f%% of kernel time has a "
                                 "recipe\n",
                                 s->output.c_str(), file.kernels.size(),
                                 100.0 * analysis->coverage);
                keep_until_exit(std::move(analysis));
                return 0;
            }};
}

}  // namespace replay::cli
