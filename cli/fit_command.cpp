// `replay fit DIR -o model.json`: a timing model per swept kernel (each CSV of `replay sweep`
// with its .kernel.json), with its held-out error.
#include <simdjson.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "commands.h"
#include "output_files.h"
#include "replay/input_error.h"
#include "replay/sweep_csv.h"
#include "replay/timing_model.h"

namespace replay::cli {
namespace {

struct SweptKernel {
    std::string kernel_id, name, op, dtype, csv, gpu, family;
    std::vector<std::string> masked;
};

SweptKernel read_sidecar(const std::filesystem::path& path) {
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    if (auto error = parser.load(path.string()).get(doc))
        throw InputError(path.string(), 0, std::string("not readable JSON: ") + simdjson::error_message(error));
    SweptKernel k;
    const auto text = [&](const char* key) {
        std::string_view v;
        if (doc[key].get_string().get(v))
            throw InputError(path.string(), 0, std::string("'") + key + "' is missing or not a string");
        return std::string(v);
    };
    k.kernel_id = text("kernel_id");
    k.name = text("name");
    k.op = text("op");
    k.dtype = text("dtype");
    k.csv = text("csv");
    k.gpu = text("gpu");
    k.family = text("family");
    simdjson::dom::array masked;
    if (doc["masked"].get_array().get(masked)) throw InputError(path.string(), 0, "'masked' is missing");
    for (auto m : masked) {
        std::string_view v;
        if (!m.get_string().get(v)) k.masked.emplace_back(v);
    }
    return k;
}

double field(const std::vector<std::string>& row, std::size_t column) {
    const std::string& f = row[column];
    if (f.empty()) return NAN;
    char* end = nullptr;
    const double v = std::strtod(f.c_str(), &end);
    return end == f.c_str() + f.size() ? v : NAN;
}

// The swept dims a recipe holds (the columns before `flops`, less model.batch/model.seq, which
// only a trace's rewrite knows): the dims a timing model may use as features.
std::vector<std::string> recipe_dim_columns(const SweepTable& table) {
    std::vector<std::string> dims;
    for (const auto& c : table.columns) {
        if (c == "flops") break;
        if (!c.starts_with("model.")) dims.push_back(c);
    }
    return dims;
}

std::vector<TimingPoint> points_of(const std::filesystem::path& csv, std::vector<std::string>& dim_names) {
    const SweepTable table = read_sweep_csv(csv.string());
    dim_names = recipe_dim_columns(table);
    std::vector<std::size_t> dim_columns;
    for (const auto& d : dim_names) dim_columns.push_back(table.column(d, csv.string()));
    const std::string path = csv.string();
    const std::size_t flops = table.column("flops", path), bytes = table.column("bytes", path),
                      elements = table.column("elements", path), median = table.column("median_us", path),
                      status = table.column("status", path);
    // CSVs written before the column have no padded elements: that candidate is then n/a.
    const auto padded = std::find(table.columns.begin(), table.columns.end(), "padded_elements");
    std::vector<TimingPoint> points;
    for (const auto& row : table.rows) {
        if (row[status] != "ok") continue;
        TimingPoint p;
        p.work.flops = field(row, flops);
        p.work.bytes = field(row, bytes);
        p.work.elements = field(row, elements);
        p.work.padded_elements =
            padded == table.columns.end() ? NAN : field(row, static_cast<std::size_t>(padded - table.columns.begin()));
        p.time_us = field(row, median);
        for (auto c : dim_columns) p.dims.push_back(field(row, c));
        if (std::isfinite(p.time_us) && p.time_us > 0 && std::isfinite(p.work.bytes))
            points.push_back(p);
    }
    return points;
}

std::string pct(double x) {
    if (!std::isfinite(x)) return "n/a";
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%.1f%%", x);
    return buffer;
}

// "median/p90" of a held-out error.
std::string pair(const HeldOutError& e) {
    return pct(e.median_pct) + "/" + pct(e.p90_pct);
}

std::string join(const std::vector<std::string>& names) {
    std::string out;
    for (const auto& n : names) out += (out.empty() ? "" : ",") + n;
    return out;
}

}  // namespace

Command add_fit_command(CLI::App& app) {
    struct State {
        std::string dir, output = "model.json";
        int folds = 5;
        bool quiet = false;
    };
    auto s = std::make_shared<State>();
    auto* fit = app.add_subcommand(
        "fit",
        "Fit a timing model per kernel swept into DIR by `replay sweep`: piecewise linear in the "
        "work (GFLOP, or elements) and bytes above a launch floor; a log-quadratic model on the work, "
        "on the work and the elements with rows padded to a power of two, or on the work and the "
        "swept recipe dims, or gradient-boosted trees, replace it only when "
        "k-fold cross-validation finds them clearly better. Writes "
        "model.json (schemas/timing_model.schema.json) for `replay predict --model`, and prints "
        "each model's held-out median and p90 error");
    fit->add_option("dir", s->dir, "Folder of a sweep's CSVs and .kernel.json files")->required();
    fit->add_option("-o,--output", s->output, "The model file")->capture_default_str();
    fit->add_option("--folds", s->folds, "Cross-validation folds")->check(CLI::Range(2, 100))->capture_default_str();
    fit->add_flag("-q,--quiet", s->quiet, "Print nothing but errors");
    return {fit, [s] {
                std::vector<std::filesystem::path> sidecars;
                for (const auto& entry : std::filesystem::directory_iterator(s->dir))
                    if (entry.path().string().ends_with(".kernel.json")) sidecars.push_back(entry.path());
                std::sort(sidecars.begin(), sidecars.end());
                TimingModelFile file;
                FitOptions options;
                options.folds = s->folds;
                if (!s->quiet)
                    std::printf("%-18s %-18s %6s %-15s %-24s %15s %15s %15s %15s %15s\n", "kernel", "op", "points",
                                "model", "features", "linear", "quad(work)", "quad(padded)", "quad(dims)",
                                "trees");
                for (const auto& sidecar : sidecars) {
                    const SweptKernel k = read_sidecar(sidecar);
                    const auto points = points_of(std::filesystem::path(s->dir) / k.csv, options.dim_names);
                    if (points.size() < 4) {
                        std::fprintf(stderr, "replay fit: %s: %zu measured points, 4 needed: no model\n",
                                     k.csv.c_str(), points.size());
                        continue;
                    }
                    KernelTimingModel m = fit_kernel_model(points, options);
                    m.kernel_id = k.kernel_id;
                    m.name = k.name;
                    m.op = k.op;
                    m.dtype = k.dtype;
                    m.csv = k.csv;
                    m.family = k.family;
                    m.masked = k.masked;
                    if (file.gpu.empty()) file.gpu = k.gpu;
                    if (!s->quiet)
                        std::printf("%-18s %-18s %6zu %-15s %-24s %15s %15s %15s %15s %15s\n", k.kernel_id.c_str(),
                                    k.op.c_str(), m.points, m.kind.c_str(), join(m.features()).c_str(),
                                    pair(m.linear_error).c_str(), pair(m.work_quadratic_error).c_str(),
                                    pair(m.padded_quadratic_error).c_str(), pair(m.dims_quadratic_error).c_str(),
                                    pair(m.trees_error).c_str());
                    file.kernels.push_back(std::move(m));
                }
                if (file.kernels.empty())
                    throw std::runtime_error("no kernel of " + s->dir + " could be fitted (no .kernel.json "
                                             "with a CSV of 4 or more measured points)");
                write_file(s->output, [&](std::ostream& out) { write_timing_model(out, file); });
                if (!s->quiet)
                    std::fprintf(stderr, "wrote %s: %zu kernel models (errors are k-fold held-out |predicted - "
                                         "measured| / measured)\n",
                                 s->output.c_str(), file.kernels.size());
                return 0;
            }};
}

}  // namespace replay::cli
