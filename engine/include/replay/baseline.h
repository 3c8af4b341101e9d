// `replay regress --baseline`: the baseline report of a trace, from a file or a folder of them.
#pragma once

#include <string>

#include "replay/report.h"

namespace replay {

struct Baseline {
    std::string path;
    Report report;
};
// `path_or_dir` a report file: read it. A folder: read every *.json in it and in its immediate
// subfolders, keep the replay reports whose inputs["trace_hash"] equals `trace_hash`, and pick the
// newest (modification time; path order breaks ties). Throws InputError when none matches.
Baseline find_baseline(const std::string& path_or_dir, const std::string& trace_hash);

}  // namespace replay
