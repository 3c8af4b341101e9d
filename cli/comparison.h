// What `regress` and `compare` share: the statistics options, the refusal of a comparison in which
// nothing was compared, and the regression outputs.
#pragma once

#include <CLI/CLI.hpp>
#include <filesystem>

#include "output_files.h"
#include "replay/regression.h"

namespace replay::cli {

// --threshold, --k, --min-change-us, --alpha and, where the command has no --energy of its own
// (`regress` replays with it and compares energy then), --energy.
void add_statistics_options(CLI::App& app, RegressionOptions& options, bool with_energy = true);

// A comparison in which no kernel was measured on both sides says nothing: an exit status of 0
// there would let a wrong baseline pass a CI job. Throws, naming both sides and the notes.
void require_something_compared(const Regression& regression);

// regression.json and regression.md in `relative` (a subfolder, or "" for the folder itself).
void write_regression_outputs(OutputFolder& out, const std::filesystem::path& relative,
                              const Regression& regression);

}  // namespace replay::cli
