#include "replay/signatures.h"

#include <algorithm>
#include <cstdio>
#include <unordered_map>

namespace replay {

std::string hash_hex(std::string_view text) {
    std::uint64_t h = 1469598103934665603ULL;  // FNV-1a
    for (unsigned char c : text) {
        h ^= c;
        h *= 1099511628211ULL;
    }
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
    return buf;
}

std::vector<UniqueKernel> unique_kernels(const KernelGraph& graph,
                                         const std::vector<Recipe>& recipes) {
    std::vector<UniqueKernel> kernels;
    std::unordered_map<std::string, std::size_t> index;
    std::vector<std::vector<double>> durations;
    const auto& names = graph.trace().names;
    for (std::uint32_t n = 0; n < graph.nodes().size(); ++n) {
        const GpuActivity& a = graph.activity(graph.nodes()[n]);
        std::string signature = recipes[n].key();
        signature += '|';
        signature += names.view(a.name);
        for (const std::int32_t* dims : {a.grid, a.block}) {
            for (int i = 0; i < 3; ++i) {
                signature += '|';
                signature += std::to_string(dims[i]);
            }
        }
        auto [it, inserted] = index.emplace(signature, kernels.size());
        if (inserted) {
            UniqueKernel k;
            k.id = hash_hex(signature);
            k.kind = a.kind;
            k.name = names.view(a.name);
            std::copy(a.grid, a.grid + 3, k.grid);
            std::copy(a.block, a.block + 3, k.block);
            k.recipe = recipes[n];
            kernels.push_back(std::move(k));
            durations.emplace_back();
        }
        kernels[it->second].nodes.push_back(n);
        durations[it->second].push_back(static_cast<double>(a.dur) / 1000.0);
    }
    for (std::size_t i = 0; i < kernels.size(); ++i)
        kernels[i].recorded_us = summarize(std::move(durations[i]));
    std::stable_sort(kernels.begin(), kernels.end(),
                     [](const UniqueKernel& a, const UniqueKernel& b) {
                         return a.recorded_us.sum > b.recorded_us.sum;
                     });
    return kernels;
}

}  // namespace replay
