// `replay sweep --config FILE (TRACE | --kernels FILE) --out DIR`: replay chosen unique kernels
// over a grid of their dims in unique mode, one CSV row per point (schemas/sweep_csv.md).
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <regex>

#include "commands.h"
#include "output_files.h"
#include "replay/json_writer.h"
#include "replay/recipe_dims.h"
#include "replay/recipe_json.h"
#include "replay/shape_rewrite.h"
#include "replay/sweep_config.h"
#include "replay/sweep_csv.h"
#include "replay_settings.h"
#include "trace_loader.h"

namespace replay::cli {
namespace {

// A fresh backend every so many points bounds what prepared recipes of all sizes hold.
constexpr std::size_t kPointsPerBackend = 32;

struct SweepState {
    std::string trace, kernel_file, config_path, out_dir;
    LoadOptions load;
    ReplaySettings settings;
    int parts = 0, part = 0;
};

bool is_model_dim(const std::string& name, const Recipe& recipe) {
    if (name == "model.batch" || name == "model.seq") return true;
    return (name == "batch" || name == "seq") && !std::holds_alternative<GemmRecipe>(recipe.detail);
}

bool selected(const KernelSelector& s, const UniqueKernel& k) {
    const int tier = static_cast<int>(k.recipe.tier);
    for (const auto& id : s.ids)
        if (id == k.id) return true;
    for (int t : s.tiers)
        if (t == tier) return true;
    for (const auto& pattern : s.names) {
        const std::regex re(pattern);
        if (std::regex_search(k.name, re) || std::regex_search(recipe_short_name(k.recipe), re))
            return true;
    }
    return false;
}

std::string file_safe(const std::string& text) {
    std::string out;
    for (char c : text)
        if (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_') out += c;
    return out.empty() ? "unknown" : out;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::string duration(double seconds) {
    const long s = static_cast<long>(seconds);
    char buffer[64];
    std::snprintf(buffer, sizeof buffer, "%ldd%ldh%02ldm%02lds", s / 86400, s / 3600 % 24, s / 60 % 60, s % 60);
    return buffer;
}

// The recipes of a kernel at each grid point: its own dims set directly, or (model.batch,
// model.seq) the whole trace rewritten and classified again.
class PointRecipes {
  public:
    PointRecipes(Analysis* analysis, const UniqueKernel& kernel, const std::vector<DimAxis>& axes)
        : analysis_(analysis), kernel_(kernel), axes_(axes) {
        for (const auto& axis : axes) {
            if (is_model_dim(axis.name, kernel.recipe)) {
                if (analysis == nullptr || kernel.nodes.empty())
                    throw std::runtime_error("dim " + axis.name +
                                             " rewrites the trace (--set-dims): give the TRACE, "
                                             "not --kernels");
                model_dims_ = true;
            } else if (!recipe_dim(kernel.recipe, axis.name)) {
                with_dims(kernel.recipe, {{axis.name, 1}});  // throws, naming the known dims
            }
        }
        if (model_dims_) {
            rewriter_.emplace(analysis->trace());
        }
    }
    // apply() re-points rewritten ops at op shapes it appends: restoring the op shapes alone
    // would leave those ops pointing past them, so that the next kernel's rewriter (the softmax
    // after the baddbmm) found no embedding. apply() at the recorded dims restores both.
    ~PointRecipes() {
        if (model_dims_) rewriter_->apply(analysis_->parsed.trace, {});
    }
    PointRecipes(const PointRecipes&) = delete;
    PointRecipes& operator=(const PointRecipes&) = delete;

    Recipe at(const std::vector<std::int64_t>& point) {
        std::vector<std::pair<std::string, std::int64_t>> own;
        DimsRequest model;
        for (std::size_t d = 0; d < axes_.size(); ++d) {
            const std::string& name = axes_[d].name;
            if (!is_model_dim(name, kernel_.recipe)) own.emplace_back(name, point[d]);
            else if (name.ends_with("batch")) model.batch = point[d];
            else model.seq = point[d];
        }
        Recipe recipe = kernel_.recipe;
        if (model_dims_) {
            rewriter_->apply(analysis_->parsed.trace, model);
            recipe = classify(analysis_->graph).recipe(kernel_.nodes.front());
        }
        return own.empty() ? with_dims(recipe, {}) : with_dims(recipe, own);
    }

  private:
    Analysis* analysis_;
    const UniqueKernel& kernel_;
    const std::vector<DimAxis>& axes_;
    bool model_dims_ = false;
    std::optional<ShapeRewriter> rewriter_;
};

SweepRow measure(const Recipe& recipe, const UniqueKernel& kernel, Backend& backend,
                 const DriverOptions& options) {
    SweepRow row;
    const RecipeWork work = recipe_work(recipe);
    row.flops = work.flops;
    row.bytes = work.bytes;
    row.elements = work.elements;
    row.padded_elements = work.padded_elements;
    SignatureFile file;
    UniqueKernel one = kernel;
    one.recipe = recipe;
    one.nodes.clear();
    file.kernels.push_back(std::move(one));
    const Report report = replay_unique(file, backend, options);
    const KernelResult& k = report.kernels.front();
    row.samples = k.samples_us.size();
    if (!k.samples_us.empty()) {
        const DurationStats s = summarize(k.samples_us);
        row.median_us = s.median;
        row.p95_us = s.p95;
        row.min_us = s.min;
        row.spread_pct = 100.0 * stats::robust_relative_spread(k.samples_us, {});
    } else {
        row.status = std::string(to_string(k.outcome)) + ": " + k.reason;
    }
    return row;
}

void write_kernel_sidecar(const std::filesystem::path& path, const UniqueKernel& k,
                          const Environment& env, const std::vector<DimAxis>& axes,
                          const std::vector<std::string>& masked, const std::string& csv) {
    write_file(path, [&](std::ostream& out) {
        JsonWriter json(out);
        json.begin_object();
        json.field("schema", "replay.sweep_kernel/1");
        json.field("kernel_id", k.id).field("name", k.name).field("op", recipe_short_name(k.recipe));
        json.field("dtype", recipe_dtype_label(k.recipe)).field("csv", csv);
        json.field("gpu", env.device_name).field("backend", env.backend);
        json.key("dims").begin_array();
        for (const auto& a : axes) json.value(a.name);
        json.end_array();
        json.array("masked", masked);
        json.field("family", recipe_family(k.recipe, masked));
        json.key("recipe");
        write_recipe(json, k.recipe);
        json.end_object();
        out << '\n';
    });
}

int run_sweep(SweepState& s) {
    const SweepConfig config = read_sweep_config(s.config_path);
    if (config.warmup) s.settings.warmup = *config.warmup;
    if (config.runs) s.settings.runs = *config.runs;
    if (config.context) s.settings.context = *config.context;
    std::unique_ptr<Analysis> analysis;
    SignatureFile signatures;
    if (!s.trace.empty()) {
        analysis = load_trace(s.trace, s.load);
        signatures.trace = analysis->trace().source;
        signatures.trace_hash = analysis->trace_hash;
        signatures.kernels = analysis->kernels;
    } else {
        signatures = read_signature_file(s.kernel_file);
    }
    const GridPart part = choose_part(s.parts, s.part, [](const char* name) { return std::getenv(name); });
    std::filesystem::create_directories(s.out_dir);
    auto backend = s.settings.make_backend();
    const Environment env = backend->environment();
    DriverOptions options = s.settings.driver_options(true, *backend);
    options.sequential_check = false;
    const bool quiet = s.load.quiet;
    const auto start = std::chrono::steady_clock::now();
    std::size_t measured_total = 0, kernels_swept = 0;

    for (const SweepSpec& spec : config.sweeps) {
        std::vector<const UniqueKernel*> chosen;
        for (const auto& k : signatures.kernels)
            if (selected(spec.kernels, k) && k.recipe.replayable() && !k.recipe.issued_with_op &&
                k.recipe.tier != Tier::Collective)
                chosen.push_back(&k);
        if (chosen.empty()) {
            std::fprintf(stderr, "replay sweep: warning: no replayable kernel matches a sweep of %s\n",
                         config.path.c_str());
            continue;
        }
        const auto points = expand_grid(spec.dims);
        const auto mine = part_indices(points.size(), part);
        std::vector<std::string> dim_names;
        for (const auto& a : spec.dims) dim_names.push_back(a.name);
        for (const UniqueKernel* kernel : chosen) {
            PointRecipes recipes(analysis.get(), *kernel, spec.dims);
            std::vector<Recipe> all;
            for (const auto& p : points) all.push_back(recipes.at(p));
            const auto masked = varying_fields(all);
            const std::string stem = file_safe(env.device_name) + "_" + recipe_short_name(kernel->recipe) +
                                     "-" + kernel->id.substr(0, 8) + "_" + recipe_dtype_label(kernel->recipe);
            const std::filesystem::path csv = std::filesystem::path(s.out_dir) / (stem + ".csv");
            write_kernel_sidecar(std::filesystem::path(s.out_dir) / (stem + ".kernel.json"), *kernel, env,
                                 spec.dims, masked, csv.filename().string());
            SweepCsvWriter writer(csv.string(), dim_names);
            if (writer.repaired() && !quiet)
                std::fprintf(stderr, "replay sweep: %s: cut off a torn last line (a killed run)\n",
                             csv.c_str());
            std::vector<std::size_t> todo;
            for (auto i : mine)
                if (!writer.done(points[i])) todo.push_back(i);
            if (!quiet)
                std::fprintf(stderr, "replay sweep: %s (%s): part %d/%d (%s): %zu of %zu points, %zu already in %s\n",
                             kernel->id.c_str(), recipe_short_name(kernel->recipe).c_str(), part.part,
                             part.parts, part.source.c_str(), mine.size(), points.size(),
                             mine.size() - todo.size(), csv.filename().c_str());
            const auto kernel_start = std::chrono::steady_clock::now();
            for (std::size_t n = 0; n < todo.size(); ++n) {
                if (n > 0 && n % kPointsPerBackend == 0) {
                    // The old backend goes first: built while it still held its context and
                    // memory, every other backend ran ~2x slower on the H200 (blocks of 32
                    // points alternating in the 2026-11-24 sweep).
                    backend.reset();
                    backend = s.settings.make_backend();
                }
                const auto& point = points[todo[n]];
                SweepRow row = measure(all[todo[n]], *kernel, *backend, options);
                row.dims = point;
                writer.append(row);
                ++measured_total;
                if (quiet) continue;
                const double elapsed = seconds_since(kernel_start);
                const double remaining = elapsed / static_cast<double>(n + 1) * static_cast<double>(todo.size() - n - 1);
                std::string dims;
                for (std::size_t d = 0; d < point.size(); ++d)
                    dims += (d ? " " : "") + dim_names[d] + "=" + std::to_string(point[d]);
                std::fprintf(stderr, "[%s] %s | %zu/%zu=%.1f%% | %s | %.3f us | %.2fs/point | remaining %s\n",
                             kernel->id.substr(0, 8).c_str(), recipe_short_name(kernel->recipe).c_str(), n + 1,
                             todo.size(), 100.0 * static_cast<double>(n + 1) / static_cast<double>(todo.size()),
                             dims.c_str(), row.median_us, elapsed / static_cast<double>(n + 1),
                             duration(remaining).c_str());
            }
            ++kernels_swept;
        }
    }
    if (!quiet)
        std::fprintf(stderr, "replay sweep: %zu kernels, %zu points measured in %.1f s into %s (energy columns "
                             "are empty: energy is not measured yet)\n",
                     kernels_swept, measured_total, seconds_since(start), s.out_dir.c_str());
    return kernels_swept > 0 ? 0 : 2;
}

}  // namespace

Command add_sweep_command(CLI::App& app) {
    auto s = std::make_shared<SweepState>();
    auto* sweep = app.add_subcommand(
        "sweep",
        "Replay chosen unique kernels over a grid of their dims (GEMM m/n/k/batch, an op's "
        "argI.dJ, or model.batch/model.seq through --set-dims' rewrite), in unique mode, one "
        "CSV row per point and kernel: DIR/{gpu}_{op}-{id}_{dtype}.csv (schemas/sweep_csv.md). "
        "A rerun skips the points already there; --parts N --part i (or SLURM_ARRAY_TASK_ID) "
        "runs every N-th point, so that several processes share one grid");
    add_trace_argument(*sweep, s->trace);
    add_load_options(*sweep, s->load, SideFiles::Offered);
    add_set_dims_option(*sweep, s->load);
    sweep->add_option("--config", s->config_path,
                      "The sweep: kernels (ids, names, tiers) and dims, YAML or JSON "
                      "(schemas/sweep_config.md)")
        ->required();
    sweep->add_option("--kernels", s->kernel_file, "Sweep kernels of a kernel_signatures.json instead of a TRACE");
    sweep->add_option("--out", s->out_dir, "Folder of the CSVs (shared by every part)")->required();
    sweep->add_option("--parts", s->parts, "Split the grid into N parts (default: SLURM_ARRAY_TASK_COUNT or 1)")
        ->check(CLI::Range(1, 100000));
    sweep->add_option("--part", s->part, "Run part i of --parts (1-based; default: from SLURM_ARRAY_TASK_ID)")
        ->check(CLI::Range(1, 100000));
    s->settings.add_sweep_options(*sweep);
    return {sweep,
            [s, sweep] {
                if (s->trace.empty() == s->kernel_file.empty()) {
                    std::cerr << "replay sweep: give a TRACE or --kernels FILE (one of them)\n"
                              << sweep->help();
                    return 2;
                }
                return run_sweep(*s);
            },
            true};
}

}  // namespace replay::cli
