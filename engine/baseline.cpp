#include "replay/baseline.h"

#include <algorithm>
#include <filesystem>

#include "replay/document_kind.h"
#include "replay/input_error.h"
#include "replay/regression.h"
#include "replay/report_json.h"

namespace replay {
namespace {

namespace fs = std::filesystem;

// *.json in the folder and in its immediate subfolders, in path order.
std::vector<fs::path> json_files(const fs::path& dir) {
    std::vector<fs::path> files;
    auto scan = [&](const fs::path& folder, bool descend) {
        std::error_code e;
        std::vector<fs::path> subdirs;
        for (fs::directory_iterator it(folder, e), end; !e && it != end; it.increment(e)) {
            std::error_code se;
            if (it->is_directory(se))
                subdirs.push_back(it->path());
            else if (it->path().extension() == ".json")
                files.push_back(it->path());
        }
        return descend ? subdirs : std::vector<fs::path>{};
    };
    for (const auto& sub : scan(dir, true)) scan(sub, false);
    std::sort(files.begin(), files.end());
    return files;
}

}  // namespace

namespace {

// Every replay report of `trace_hash` in the folder and its immediate subfolders, newest first
// (modification time; path order breaks ties), and a line saying what was read.
struct Found {
    std::string path;
    Report report;
    fs::file_time_type time;
};
std::vector<Found> matching_reports(const std::string& dir, const std::string& trace_hash,
                                    const std::function<void(const std::string&)>& warn,
                                    std::string& read) {
    const auto say = [&](const std::string& line) {
        if (warn) warn(line);
    };
    std::size_t reports = 0, broken = 0;
    std::vector<Found> found;
    for (const auto& f : json_files(dir)) {
        // Parse only as far as the top level tells what it is: traces can be large.
        try {
            const Document d = sniff_document(f.string());
            if (d.kind == DocumentKind::NotJson) {
                ++broken;
                say(f.string() + ": byte " + std::to_string(d.offset) +
                    ": not read as a baseline: not JSON (" + d.why + ")");
                continue;
            }
            if (d.kind != DocumentKind::ToolFile || !d.schema.starts_with("replay.report/"))
                continue;
        } catch (const InputError& e) {
            ++broken;
            say(std::string(e.what()) + " (not read as a baseline)");
            continue;
        }
        Report report;
        try {
            report = read_report_json(f.string());
        } catch (const InputError& e) {
            ++broken;
            say(std::string(e.what()) + " (not read as a baseline)");
            continue;
        }
        ++reports;
        if (report.input("trace_hash") != trace_hash) continue;
        std::error_code te;
        found.push_back({f.string(), std::move(report), fs::last_write_time(f, te)});
    }
    read = std::to_string(reports) + " replay reports read in " + dir + " and its subfolders" +
           (broken > 0 ? ", " + std::to_string(broken) + " unreadable" : "");
    // Stable: among equal times the path order of json_files() stays, the first path first.
    std::stable_sort(found.begin(), found.end(),
                     [](const Found& a, const Found& b) { return a.time > b.time; });
    return found;
}

}  // namespace

Baseline find_baseline(const std::string& path_or_dir, const std::string& trace_hash,
                       const std::function<void(const std::string&)>& warn) {
    std::error_code ec;
    if (!fs::is_directory(path_or_dir, ec))
        return Baseline{path_or_dir, read_report_json(path_or_dir), {}, {}};
    std::string read;
    std::vector<Found> found = matching_reports(path_or_dir, trace_hash, warn, read);
    if (found.empty())
        throw InputError(path_or_dir, 0,
                         "no baseline report for trace_hash " + trace_hash + " (" + read + ")");
    Baseline best{found.front().path, std::move(found.front().report), {}, {}};
    best.chosen = (found.size() > 1 ? "the newest of " + std::to_string(found.size()) + " reports"
                                    : std::string("the only report")) +
                  " of this trace (" + read + ")";
    return best;
}

Baseline pooled_baseline(std::vector<Report> runs, const std::vector<std::string>& paths) {
    Baseline pooled;
    if (runs.size() == 1) {
        pooled.report = std::move(runs.front());
    } else {
        pooled.report = pool_baselines(runs, paths, pooled.notes);
    }
    for (const auto& p : paths) pooled.path += (pooled.path.empty() ? "" : " + ") + p;
    return pooled;
}

Baseline find_pooled_baseline(const std::string& dir, const std::string& trace_hash,
                              const std::string& mode,
                              const std::function<void(const std::string&)>& warn) {
    std::error_code ec;
    if (!fs::is_directory(dir, ec))
        throw InputError(dir, 0, "pooled baselines are read from a folder of reports");
    std::string read;
    std::vector<Report> runs;
    std::vector<std::string> paths;
    for (Found& f : matching_reports(dir, trace_hash, warn, read))
        if (f.report.mode == mode) {
            paths.push_back(f.path);
            runs.push_back(std::move(f.report));
        }
    if (runs.empty())
        throw InputError(dir, 0,
                         "no baseline report for trace_hash " + trace_hash + " in " + mode +
                             " mode (" + read + ")");
    const std::size_t pooled_runs = runs.size();
    Baseline pooled = pooled_baseline(std::move(runs), paths);
    pooled.chosen = std::to_string(pooled_runs) + " report" + (pooled_runs > 1 ? "s" : "") +
                    " of this trace in " + mode + " mode, pooled (" + read + ")";
    return pooled;
}

}  // namespace replay
