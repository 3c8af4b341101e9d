// The CPU speed of another host relative to the recording's, from a trace of each.
#include "replay/host_scale.h"

#include <algorithm>
#include <map>
#include <string_view>

#include "replay/input_error.h"
#include "replay/stats.h"

namespace replay {
namespace {

// A call that may wait for the GPU measures the GPU, not the CPU.
bool waits_for_gpu(std::string_view name) {
    return name.find("Synchronize") != std::string_view::npos ||
           name.find("Memcpy") != std::string_view::npos;
}

// Durations (us) per name; runtime calls under a prefix of their own so that an op and a call of
// the same name stay apart.
using Durations = std::map<std::string, std::vector<double>>;
constexpr std::string_view kCallPrefix = "call:";

Durations durations_by_name(const Trace& trace) {
    Durations out;
    for (const CpuOp& op : trace.cpu_ops)
        if (op.category == 0)
            out[std::string(trace.names.view(op.name))].push_back(static_cast<double>(op.dur) / 1e3);
    for (const RuntimeCall& c : trace.runtime_calls) {
        const std::string_view name = trace.names.view(c.name);
        if (waits_for_gpu(name)) continue;
        out[std::string(kCallPrefix) + std::string(name)].push_back(static_cast<double>(c.dur) / 1e3);
    }
    return out;
}

}  // namespace

HostScale estimate_host_scale(const Trace& target, const Trace& reference,
                              const std::string& reference_path) {
    const Durations mine = durations_by_name(target);
    const Durations theirs = durations_by_name(reference);
    HostScale out;
    std::vector<double> ratios;
    for (const auto& [key, samples] : mine) {
        auto it = theirs.find(key);
        if (it == theirs.end() || samples.size() < HostScale::kMinInstances ||
            it->second.size() < HostScale::kMinInstances)
            continue;
        NameRatio r;
        r.runtime_call = key.starts_with(kCallPrefix);
        r.name = r.runtime_call ? key.substr(kCallPrefix.size()) : key;
        r.target_count = samples.size();
        r.reference_count = it->second.size();
        r.target_median_us = stats::median(samples);
        r.reference_median_us = stats::median(it->second);
        if (!(r.target_median_us > 0) || !(r.reference_median_us > 0)) continue;
        ratios.push_back(r.ratio());
        out.names.push_back(std::move(r));
    }
    if (out.names.size() < HostScale::kMinNames)
        throw InputError(reference_path, 0,
                         "--host-reference: this trace and the reference share " +
                             std::to_string(out.names.size()) + " op or runtime-call names seen at least " +
                             std::to_string(HostScale::kMinInstances) + " times in each; at least " +
                             std::to_string(HostScale::kMinNames) +
                             " are needed to compare the two hosts' CPUs");
    std::sort(ratios.begin(), ratios.end());
    out.scale = stats::median(ratios);
    out.ratio_p25 = stats::percentile(ratios, 0.25);
    out.ratio_p75 = stats::percentile(ratios, 0.75);
    return out;
}

}  // namespace replay
