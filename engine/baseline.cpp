#include "replay/baseline.h"

#include <algorithm>
#include <filesystem>

#include "replay/document_kind.h"
#include "replay/report_json.h"
#include "replay/input_error.h"

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

Baseline find_baseline(const std::string& path_or_dir, const std::string& trace_hash,
                       const std::function<void(const std::string&)>& warn) {
    std::error_code ec;
    if (!fs::is_directory(path_or_dir, ec))
        return Baseline{path_or_dir, read_report_json(path_or_dir), {}};

    const auto say = [&](const std::string& line) {
        if (warn) warn(line);
    };
    std::size_t reports = 0, matching = 0, broken = 0;
    bool found = false;
    Baseline best;
    fs::file_time_type best_time{};
    for (const auto& f : json_files(path_or_dir)) {
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
        ++matching;
        std::error_code te;
        const auto t = fs::last_write_time(f, te);
        if (!found || t > best_time) {
            found = true;
            best_time = t;
            best = Baseline{f.string(), std::move(report), {}};
        }
    }
    const std::string read = std::to_string(reports) + " replay reports read in " + path_or_dir +
                             " and its subfolders" +
                             (broken > 0 ? ", " + std::to_string(broken) + " unreadable" : "");
    if (!found)
        throw InputError(path_or_dir, 0,
                         "no baseline report for trace_hash " + trace_hash + " (" + read + ")");
    best.chosen = (matching > 1 ? "the newest of " + std::to_string(matching) + " reports"
                                : std::string("the only report")) +
                  " of this trace (" + read + ")";
    return best;
}

}  // namespace replay
