// Recipes and unique kernels to and from JSON (kernel_signatures.json, report.json), so that
// `replay --mode unique --kernels FILE` can replay without the trace.
#pragma once

#include <string>
#include <vector>

#include "replay/json_writer.h"
#include "replay/recipe.h"
#include "replay/signatures.h"

namespace replay {

void write_recipe(JsonWriter& json, const Recipe& recipe);
// "tier": 1 to 4, or null for a kernel that is not replayable (every file the tool writes).
void write_tier(JsonWriter& json, Tier tier);
void write_duration_stats(JsonWriter& json, const DurationStats& stats);
// The members of a DurationStats object other than "count", in the order they are written.
struct DurationField {
    const char* name;
    double DurationStats::*member;
};
const std::vector<DurationField>& duration_fields();

struct SignatureFile {
    std::string trace;                  // the trace it was made from
    std::string trace_hash;             // Analysis::trace_hash
    std::vector<UniqueKernel> kernels;  // nodes are empty; recorded_us holds the statistics
    std::string dataflow;  // where storage ids came from: "et", "inferred", "none" ("": not said)
};
// Writes kernel_signatures.json (schemas/kernel_signatures.schema.json).
void write_signature_file(std::ostream& out, const SignatureFile& file);
// Throws InputError naming the file and byte offset for malformed content.
SignatureFile read_signature_file(const std::string& path);

}  // namespace replay
