// `replay regress --baseline`: the baseline report of a trace, from a file or a folder of them.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "replay/report.h"

namespace replay {

struct Baseline {
    std::string path;
    Report report;
    // For a folder: which report was chosen and among how many; empty for a file.
    std::string chosen;
    std::vector<std::string> notes;  // pooled: what pool_baselines() said
};

// `path_or_dir` a report file: read it (a broken one is an InputError). A folder: read every
// *.json in it and in its immediate subfolders, keep the replay reports whose
// inputs["trace_hash"] equals `trace_hash`, and pick the newest (modification time; path order
// breaks ties). `warn` gets one line for each file there that is a broken replay report, or no
// JSON at all, naming it and what is wrong; traces and other JSON are passed over. Throws
// InputError when no report matches.
Baseline find_baseline(const std::string& path_or_dir, const std::string& trace_hash,
                       const std::function<void(const std::string&)>& warn = {});

// Several runs' reports (read from `paths`) as one baseline: pool_baselines() of them, `path`
// their paths joined by " + ", `notes` what the pooling said. One report is taken as it is.
Baseline pooled_baseline(std::vector<Report> runs, const std::vector<std::string>& paths);

// The same search, but every report of the trace in the folder that was made in `mode` is taken,
// pooled (pool_baselines, newest first): several processes' runs, so that what differs between
// processes counts as noise. `path` lists them joined by " + ". Throws InputError when none
// matches.
Baseline find_pooled_baseline(const std::string& dir, const std::string& trace_hash,
                              const std::string& mode,
                              const std::function<void(const std::string&)>& warn = {});

}  // namespace replay
