// The `replay` command line: inspect, classify, replay (sequential | unique), regress, compare,
// predict, report (HTML), ncu-cmd.
#include <CLI/CLI.hpp>
#include <cstdio>

#include "commands.h"
#include "early_exit.h"
#include "output_files.h"
#include "replay/input_error.h"

int main(int argc, char** argv) {
    CLI::App app{
        "replay: re-issue the GPU work of a PyTorch profiler (Kineto) trace on this machine and "
        "compare it, kernel "
        "by kernel, with the recording.\n\n"
        "  replay inspect TRACE               what ran on the GPU, by tier, stream and unique "
        "kernel\n"
        "  replay classify TRACE -o FILE      unique kernels with their tiers, rules and recipes\n"
        "  replay TRACE --mode sequential     replay every activity in recorded order\n"
        "  replay TRACE --mode unique         replay each unique kernel alone (warmup + runs)\n"
        "  replay regress --baseline R TRACE  replay and flag kernels slower than a baseline "
        "report\n"
        "  replay compare A B                 compare two reports (or two traces)\n"
        "  replay predict TRACE               predict the step time, here or on another GPU\n"
        "  replay report DIR -o report.html   one self-contained HTML page of a report\n"
        "  replay ncu-cmd KERNEL_ID TRACE     the ncu command line that profiles one kernel\n"
        "  replay sweep --config C TRACE      time chosen kernels over a grid of their dims\n"
        "  replay fit DIR -o model.json       timing models of swept kernels\n\n"
        "Exit status: 0 ok, 1 regression found (regress/compare), 2 bad input or usage, or nothing "
        "replayed (outputs are then left as they were).",
        "replay"};
    app.set_version_flag("--version", "replay 0.1.0");
    app.require_subcommand(0, 1);
    app.fallthrough(false);

    using namespace replay::cli;
    remember_command_line(argc, argv);
    remove_partial_outputs_on_signals();
    const Command commands[] = {add_inspect_command(app), add_classify_command(app),
                                add_replay_command(app), add_regress_command(app),
                                add_compare_command(app), add_predict_command(app),
                                add_report_command(app),  add_ncu_command(app),
                                add_sweep_command(app), add_fit_command(app)};
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        const int rc = app.exit(e);
        return rc == 0 ? 0 : 2;
    }

    const auto run = [](const Command& command) {
        try {
            return command.run();
        } catch (const replay::InputError& e) {
            std::fprintf(stderr, "replay: error: %s\n", e.what());
            return 2;
        } catch (const std::exception& e) {
            std::fprintf(stderr, "replay: error: %s\n", e.what());
            return 2;
        }
    };
    // The replay itself lives on the top-level app: it runs when no subcommand was chosen.
    const Command* chosen = nullptr;
    for (const auto& command : commands)
        if (command.app != &app && *command.app) chosen = &command;
    for (const auto& command : commands)
        if (chosen == nullptr && command.app == &app) chosen = &command;
    if (chosen == nullptr) return 2;
    const int status = run(*chosen);
    if (chosen->loads_backend) return status;
    // The commands that load no backend end without waiting for their memory to be freed.
    exit_leaving_teardown(status);
}
