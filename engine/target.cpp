#include "replay/target.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <map>
#include <unordered_map>

#include "replay/json_writer.h"
#include "replay/stats.h"

namespace replay {
namespace {

std::string launch_text(const UniqueKernel& k) {
    return k.name + "|" + std::to_string(k.grid[0]) + "," + std::to_string(k.grid[1]) + "," +
           std::to_string(k.grid[2]) + "|" + std::to_string(k.block[0]) + "," +
           std::to_string(k.block[1]) + "," + std::to_string(k.block[2]);
}

}  // namespace

TargetComparison compare_with_target(const Report& report,
                                     const std::vector<UniqueKernel>& replayed,
                                     const std::vector<UniqueKernel>& target,
                                     const std::string& target_trace) {
    TargetComparison c;
    c.target = target_trace;
    std::unordered_map<std::string, const UniqueKernel*> by_id, by_launch;
    std::unordered_map<std::string, std::vector<const UniqueKernel*>> by_recipe;
    for (const auto& k : target) {
        if (k.kind != ActivityKind::Kernel) continue;
        by_id[k.id] = &k;
        by_launch.emplace(launch_text(k), &k);
        if (k.recipe.replayable()) by_recipe[k.recipe.key()].push_back(&k);
    }
    std::unordered_map<std::string, const UniqueKernel*> own;
    for (const auto& k : replayed) own[k.id] = &k;
    std::vector<double> errors;
    for (const KernelResult& r : report.kernels) {
        if (r.kind != "kernel" || !was_replayed(r) || r.samples_us.empty()) continue;
        const auto a = own.find(r.id);
        const UniqueKernel* b = nullptr;
        std::string how;
        if (auto it = by_id.find(r.id); it != by_id.end()) {
            b = it->second;
            how = "id";
        } else if (a != own.end()) {
            if (auto l = by_launch.find(launch_text(*a->second)); l != by_launch.end()) {
                b = l->second;
                how = "name";
            } else if (auto rc = a->second->recipe.tier == Tier::Gemm
                                     ? by_recipe.find(a->second->recipe.key())
                                     : by_recipe.end();
                       rc != by_recipe.end() && rc->second.size() == 1) {
                b = rc->second.front();  // one kernel of B does this work: cuBLAS picked it
                how = "recipe";
            }
        }
        if (b == nullptr || b->recorded_us.median <= 0) {
            ++c.replayed_unmatched;
            continue;
        }
        TargetKernel t;
        t.id = r.id;
        t.name = r.name;
        t.target_name = b->name;
        t.replayed_name = r.replayed_names.empty() ? "" : r.replayed_names.front();
        t.matched_by = how;
        t.count = r.recorded_us.count;
        t.replayed_median_us = r.replayed_us.median;
        t.target_median_us = b->recorded_us.median;
        t.error_pct = (t.replayed_median_us - t.target_median_us) / t.target_median_us * 100.0;
        t.gemm = r.tier == Tier::Gemm;
        t.same_name_as_target = !t.replayed_name.empty() && t.replayed_name == t.target_name;
        if (t.gemm) {
            ++c.gemms;
            if (t.same_name_as_target) ++c.gemms_same_name;
        }
        c.predicted_us += t.replayed_median_us * static_cast<double>(t.count);
        c.target_us += t.target_median_us * static_cast<double>(t.count);
        errors.push_back(std::fabs(t.error_pct));
        c.kernels.push_back(std::move(t));
    }
    c.total_error_pct = c.target_us > 0 ? (c.predicted_us - c.target_us) / c.target_us * 100.0 : NAN;
    c.median_abs_error_pct = errors.empty() ? NAN : summarize(errors).median;
    std::sort(c.kernels.begin(), c.kernels.end(), [](const TargetKernel& x, const TargetKernel& y) {
        return x.target_median_us * static_cast<double>(x.count) >
               y.target_median_us * static_cast<double>(y.count);
    });
    return c;
}

void write_target_json(std::ostream& out, const TargetComparison& c) {
    JsonWriter json(out);
    json.begin_object();
    json.field("schema", "replay.target/1").field("target", c.target);
    json.key("totals").begin_object();
    json.field("predicted_us", c.predicted_us).field("target_us", c.target_us);
    json.field("total_error_pct", c.total_error_pct);
    json.field("median_abs_error_pct", c.median_abs_error_pct);
    json.field("matched", static_cast<std::uint64_t>(c.kernels.size()));
    json.field("replayed_unmatched", static_cast<std::uint64_t>(c.replayed_unmatched));
    json.field("gemms", static_cast<std::uint64_t>(c.gemms));
    json.field("gemms_same_name", static_cast<std::uint64_t>(c.gemms_same_name));
    json.end_object();
    json.key("kernels").begin_array();
    for (const auto& k : c.kernels) {
        json.begin_object();
        json.field("id", k.id).field("name", k.name).field("target_name", k.target_name);
        json.field("replayed_name", k.replayed_name).field("matched_by", k.matched_by);
        json.field("count", static_cast<std::uint64_t>(k.count));
        json.field("replayed_median_us", k.replayed_median_us);
        json.field("target_median_us", k.target_median_us).field("error_pct", k.error_pct);
        json.field("gemm", k.gemm).field("same_name_as_target", k.same_name_as_target);
        json.end_object();
    }
    json.end_array();
    json.end_object();
    out << "\n";
}

void print_target_summary(std::ostream& out, const TargetComparison& c) {
    out << std::fixed << std::setprecision(2);
    out << "against the target recording " << c.target << "\n";
    out << "  kernel time, matched kernels  " << c.predicted_us << " us predicted vs "
        << c.target_us << " us recorded on the target (" << std::showpos << c.total_error_pct
        << std::noshowpos << "%)\n";
    out << "  median |error| per kernel     " << c.median_abs_error_pct << "% over "
        << c.kernels.size() << " kernels (" << c.replayed_unmatched
        << " replayed kernels have no counterpart in the target)\n";
    if (c.gemms > 0)
        out << "  GEMM kernels as the target's  " << c.gemms_same_name << " of " << c.gemms
            << " ran the kernel cuBLAS picked in the target recording\n";
}

}  // namespace replay
