// `replay inspect TRACE`: what ran on the GPU, by tier, stream and unique kernel.
#include <iostream>
#include <memory>
#include <utility>

#include "commands.h"
#include "replay/inspect_report.h"
#include "trace_loader.h"

namespace replay::cli {

Command add_inspect_command(CLI::App& app) {
    struct State {
        std::string trace;
        LoadOptions load;
        bool json = false;
        int top = 15;
    };
    auto s = std::make_shared<State>();
    auto* inspect = app.add_subcommand("inspect",
                                       "Summarise a trace: events by category, GPU time by tier, "
                                       "streams, top unique kernels, coverage");
    add_trace_argument(*inspect, s->trace)->required();
    add_load_options(*inspect, s->load, SideFiles::Offered);
    inspect->add_flag("--json", s->json,
                      "One JSON object on stdout: counts, kernel_time_us, unique_kernels, "
                      "coverage, tiers, streams, ...");
    inspect->add_option("--top", s->top, "How many unique kernels to list")
        ->check(CLI::Range(0, 1000000))
        ->capture_default_str();
    return {inspect, [s] {
                auto analysis = load_trace(s->trace, s->load);
                if (s->json)
                    write_inspect_json(std::cout, *analysis, s->top);
                else
                    print_inspect(std::cout, *analysis, s->top);
                keep_until_exit(std::move(analysis));
                return 0;
            }};
}

}  // namespace replay::cli
