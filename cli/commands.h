// The commands of `replay`, one file each. Each adds its options to the app (a subcommand, or the
// top-level app for the replay itself) and returns how to run it once the command line is parsed.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

namespace replay::cli {

struct Command {
    CLI::App* app = nullptr;   // where its options live; *app is true when it was chosen
    std::function<int()> run;  // the exit status: 0 ok, 1 regression found, 2 bad input or usage
    // It may load a backend (a GPU's context): it exits as usual, not through
    // exit_leaving_teardown(), whose freeing after the exit would overlap the user's next replay.
    bool loads_backend = false;
};

Command add_inspect_command(CLI::App& app);
Command add_classify_command(CLI::App& app);
// `replay TRACE --mode ...` and `replay --mode unique --kernels FILE`, on the top-level app.
Command add_replay_command(CLI::App& app);
Command add_regress_command(CLI::App& app);
Command add_compare_command(CLI::App& app);
Command add_predict_command(CLI::App& app);
Command add_report_command(CLI::App& app);
Command add_ncu_command(CLI::App& app);
Command add_sweep_command(CLI::App& app);
Command add_fit_command(CLI::App& app);

}  // namespace replay::cli
