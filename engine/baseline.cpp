#include "replay/baseline.h"

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "replay/report_json.h"
#include "replay/source.h"

namespace replay {

Baseline find_baseline(const std::string& path_or_dir, const std::string& trace_hash) {
    namespace fs = std::filesystem;
    std::error_code ec;
    if (!fs::is_directory(path_or_dir, ec))
        return Baseline{path_or_dir, read_report_json(path_or_dir)};

    // *.json in the folder and in its immediate subfolders.
    std::vector<fs::path> files;
    auto scan = [&](const fs::path& dir, bool descend) {
        std::error_code e;
        std::vector<fs::path> subdirs;
        for (fs::directory_iterator it(dir, e), end; !e && it != end; it.increment(e)) {
            std::error_code se;
            if (it->is_directory(se))
                subdirs.push_back(it->path());
            else if (it->path().extension() == ".json")
                files.push_back(it->path());
        }
        return descend ? subdirs : std::vector<fs::path>{};
    };
    for (const auto& sub : scan(path_or_dir, true)) scan(sub, false);
    std::sort(files.begin(), files.end());

    std::size_t reports = 0;
    bool found = false;
    Baseline best;
    fs::file_time_type best_time{};
    for (const auto& f : files) {
        // Reports start with their schema; skip other JSON (traces can be large) without parsing
        // it.
        {
            std::ifstream in(f, std::ios::binary);
            std::string head(4096, '\0');
            in.read(head.data(), static_cast<std::streamsize>(head.size()));
            head.resize(static_cast<std::size_t>(in.gcount()));
            if (head.find("replay.report/") == std::string::npos) continue;
        }
        Report report;
        try {
            report = read_report_json(f.string());
        } catch (const std::exception&) {
            continue;
        }
        ++reports;
        if (report.input("trace_hash") != trace_hash) continue;
        std::error_code te;
        const auto t = fs::last_write_time(f, te);
        if (!found || t > best_time) {
            found = true;
            best_time = t;
            best = Baseline{f.string(), std::move(report)};
        }
    }
    if (!found)
        throw InputError(path_or_dir, 0,
                         "no baseline report for trace_hash " + trace_hash + " (" +
                             std::to_string(reports) +
                             " replay reports read in this folder and its subfolders)");
    return best;
}

}  // namespace replay
