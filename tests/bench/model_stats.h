// What each part of the trace model and of the engine's structures costs, in bytes and in bytes
// per trace event, with the counts that say what a more compact layout could drop (CPU ops that
// no GPU activity hangs under, runtime calls that launch nothing, fields that are never set).
#pragma once

#include <cstdio>

#include "replay/analysis.h"

namespace replay::bench {

// Prints one table: per structure its element count, element size, heap bytes and bytes per
// event; then the usage counts behind the compact-model plan in RESULTS.md.
void print_model_stats(const Analysis& analysis, std::FILE* out);

}  // namespace replay::bench
