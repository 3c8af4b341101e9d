#include "replay/recipe_library.h"

#include <algorithm>
#include <string_view>
#include <unordered_map>

#include "replay/analysis.h"
#include "replay/document_kind.h"
#include "replay/input_error.h"
#include "replay/recipe_json.h"

namespace replay {
namespace {

constexpr const char* kRule = "recipe-library";

LaunchShape shape_of(const KernelGraph& graph, std::uint32_t node) {
    const GpuActivity& a = graph.activity(graph.nodes()[node]);
    LaunchShape s;
    s.name = std::string(graph.trace().names.view(a.name));
    for (int i = 0; i < 3; ++i) {
        s.grid[static_cast<std::size_t>(i)] = a.grid[i];
        s.block[static_cast<std::size_t>(i)] = a.block[i];
    }
    return s;
}

// Storage ids and reuse distances belong to the run that recorded them: another run's (or another
// part of this one's) would share buffers that the graph's kernels never shared.
Recipe without_storages(Recipe r) {
    visit_tensor_slots(r, [](std::int64_t& storage, std::int64_t& reuse) {
        storage = -1;
        reuse = kReuseUnknown;
    });
    return r;
}

// An instance's own storage ids, moved into another source's range; reuse distances are forgotten
// (they are recomputed along the trace that takes the recipe).
Recipe with_storages(Recipe r, std::int64_t offset) {
    visit_tensor_slots(r, [offset](std::int64_t& storage, std::int64_t& reuse) {
        if (storage >= 0) storage += offset;
        reuse = kReuseUnknown;
    });
    return r;
}

bool has_storages(const Recipe& r) {
    bool any = false;
    visit_tensor_slots(r, [&any](const std::int64_t& storage, const std::int64_t&) {
        any = any || storage >= 0;
    });
    return any;
}

std::string_view op_of(const Recipe& r) {
    if (const auto* g = std::get_if<GemmRecipe>(&r.detail)) return g->op;
    if (const auto* a = std::get_if<AtenRecipe>(&r.detail)) return a->op;
    if (const auto* c = std::get_if<CopyRecipe>(&r.detail)) return c->is_memset ? "memset" : "copy";
    return to_string(r.tier);
}

// Rules whose kernels lack a recipe only because no op with shapes encloses them.
bool wants_library(const Recipe& r) {
    return !r.replayable() && (r.rule == "no-op" || r.rule == "unlinked" || r.rule == "no-shapes");
}

std::string identity(const LibraryEntry& e) {
    std::string text = e.before + "\x1f" + e.after;
    for (std::size_t i = 0; i < e.kernels.size(); ++i)
        text += "\x1e" + e.kernels[i].text() + "\x1f" + e.recipes[i].key() +
                (e.recipes[i].issued_with_op ? "+" : "");
    return text;
}

// The entries of one library that fit the kernels of `track` from position `at`.
struct Fit {
    const LibraryEntry* entry = nullptr;
    int score = 0;  // recorded neighbours that agree (0..2)
};

class Matcher {
  public:
    explicit Matcher(const RecipeLibrary& library) : library_(library) {
        for (std::size_t i = 0; i < library.entries().size(); ++i)
            by_name_[library.entries()[i].kernels.front().name].push_back(i);
    }

    // The best entry for the kernels of `track` from `at`, nullptr when none fits; `ambiguous`
    // says whether entries with other recipes fitted as well (the neighbours decided).
    const LibraryEntry* best(const KernelGraph& graph, const NodeRecipes& recipes,
                             const std::vector<std::uint32_t>& track, std::size_t at,
                             bool& ambiguous) const {
        ambiguous = false;
        const LaunchShape first = shape_of(graph, track[at]);
        const auto named = by_name_.find(first.name);
        if (named == by_name_.end()) return nullptr;
        const std::string before = at > 0 ? shape_of(graph, track[at - 1]).name : "";
        std::vector<Fit> fits;
        for (std::size_t i : named->second) {
            const LibraryEntry& e = library_.entries()[i];
            if (!(e.kernels.front() == first) || at + e.kernels.size() > track.size()) continue;
            bool all = true;
            for (std::size_t k = 1; k < e.kernels.size() && all; ++k)
                all = wants_library(recipes.decision(track[at + k])) &&
                      shape_of(graph, track[at + k]) == e.kernels[k];
            if (!all) continue;
            const std::size_t next = at + e.kernels.size();
            const std::string after = next < track.size() ? shape_of(graph, track[next]).name : "";
            fits.push_back({&e, (e.before == before ? 1 : 0) + (e.after == after ? 1 : 0)});
        }
        if (fits.empty()) return nullptr;
        const Fit* chosen = &fits.front();
        for (const Fit& f : fits)
            if (f.score > chosen->score ||
                (f.score == chosen->score && f.entry->kernels.size() > chosen->entry->kernels.size()) ||
                (f.score == chosen->score &&
                 f.entry->kernels.size() == chosen->entry->kernels.size() &&
                 f.entry->seen > chosen->entry->seen))
                chosen = &f;
        for (const Fit& f : fits)
            if (f.entry->recipes.front().key() != chosen->entry->recipes.front().key())
                ambiguous = true;
        return chosen->entry;
    }

  private:
    const RecipeLibrary& library_;
    std::unordered_map<std::string, std::vector<std::size_t>> by_name_;
};

}  // namespace

std::string LaunchShape::text() const {
    auto dims = [](const std::array<std::int32_t, 3>& d) {
        return "[" + std::to_string(d[0]) + "," + std::to_string(d[1]) + "," +
               std::to_string(d[2]) + "]";
    };
    return name + " grid" + dims(grid) + " block" + dims(block);
}

void RecipeLibrary::add(LibraryEntry entry) {
    // One entry per distinct issue and neighbours: a decode step repeats each layer's issues.
    const std::string id = identity(entry);
    if (auto it = index_.find(id); it != index_.end()) {
        LibraryEntry& kept = entries_[it->second];
        ++kept.seen;
        for (auto& instance : entry.instances) kept.instances.push_back(std::move(instance));
        return;
    }
    index_.emplace(id, entries_.size());
    entries_.push_back(std::move(entry));
}

void RecipeLibrary::add_kernel(const LaunchShape& kernel, const Recipe& recipe,
                               const std::string& source) {
    if (!recipe.replayable() || recipe.tier == Tier::Collective || recipe.issued_with_op) return;
    LibraryEntry e;
    e.kernels.push_back(kernel);
    e.recipes.push_back(without_storages(recipe));
    e.source = source;
    add(std::move(e));
}

void RecipeLibrary::add_graph(const KernelGraph& graph, const NodeRecipes& recipes,
                              const std::string& source, std::int64_t storage_offset) {
    const auto& nodes = graph.nodes();
    for (const StreamTrack& track : graph.streams()) {
        const auto& t = track.nodes;
        for (std::size_t at = 0; at < t.size();) {
            const Recipe& r = recipes.decision(t[at]);
            if (!r.replayable() || r.tier == Tier::Collective || r.issued_with_op ||
                r.rule == kRule) {
                ++at;
                continue;
            }
            // The kernels the same op issue launched after this one (split-K reductions, the
            // second kernel of a multi-kernel aten op), as the drivers group them.
            const std::uint32_t op = nodes[t[at]].op;
            std::size_t end = at + 1;
            while (end < t.size() && op != kNoIndex && nodes[t[end]].op == op &&
                   (recipes.decision(t[end]).issued_with_op ||
                    recipes.decision(t[end]).key() == r.key()))
                ++end;
            LibraryEntry e;
            std::vector<Recipe> instance;
            for (std::size_t k = at; k < end; ++k) {
                e.kernels.push_back(shape_of(graph, t[k]));
                e.recipes.push_back(recipes.decision(t[k]));  // a decision has no storage ids
                instance.push_back(with_storages(recipes.recipe(t[k]), storage_offset));
            }
            if (std::any_of(instance.begin(), instance.end(), has_storages))
                e.instances.push_back(std::move(instance));
            e.before = at > 0 ? shape_of(graph, t[at - 1]).name : "";
            e.after = end < t.size() ? shape_of(graph, t[end]).name : "";
            e.source = source;
            add(std::move(e));
            at = end;
        }
    }
}

void RecipeLibrary::add_file(const std::string& path) {
    const Document doc = sniff_document(path);
    if (doc.kind == DocumentKind::ToolFile) {
        if (!doc.schema.starts_with("replay.kernel_signatures/"))
            throw InputError(path, 0,
                             "a recipe library is a kernel_signatures.json or a trace, not a " +
                                 doc.schema + " file");
        const SignatureFile file = read_signature_file(path);
        for (const UniqueKernel& k : file.kernels) {
            if (k.kind != ActivityKind::Kernel) continue;
            LaunchShape s{k.name, {k.grid[0], k.grid[1], k.grid[2]}, {k.block[0], k.block[1], k.block[2]}};
            add_kernel(s, k.recipe, path);
        }
        return;
    }
    if (doc.kind != DocumentKind::Trace)
        throw InputError(path, doc.offset,
                         "a recipe library is a kernel_signatures.json or a trace: " + doc.why);
    AnalysisOptions options;
    options.trace_path = path;
    const auto analysis = analyze(options);
    // Storage ids of each trace in a range of their own, above any id a trace records.
    add_graph(analysis->graph, analysis->recipes, path, ++traces_ << 40);
}

LibraryStats apply_recipe_library(const KernelGraph& graph, NodeRecipes& recipes,
                                  const RecipeLibrary& library) {
    LibraryStats stats;
    RecipeLibrary own;
    own.add_graph(graph, recipes, "this trace");
    const Matcher own_matcher(own);
    const Matcher library_matcher(library);
    std::unordered_map<const LibraryEntry*, std::size_t> uses;  // matches so far, per entry
    for (const StreamTrack& track : graph.streams()) {
        const auto& t = track.nodes;
        for (std::size_t at = 0; at < t.size();) {
            if (!wants_library(recipes.decision(t[at])) ||
                graph.activity(graph.nodes()[t[at]]).kind != ActivityKind::Kernel) {
                ++at;
                continue;
            }
            ++stats.candidates;
            bool ambiguous = false;
            const LibraryEntry* e = own_matcher.best(graph, recipes, t, at, ambiguous);
            const bool own_trace = e != nullptr;
            if (e == nullptr) e = library_matcher.best(graph, recipes, t, at, ambiguous);
            if (e == nullptr) {
                ++at;
                continue;
            }
            const std::vector<Recipe>* instance = nullptr;
            if (!e->instances.empty()) {
                std::size_t& n = uses[e];
                instance = &e->instances[n++ % e->instances.size()];
            }
            const std::string how =
                ambiguous ? "name, grid, block and the kernels recorded around it"
                          : "name, grid and block";
            for (std::size_t k = 0; k < e->kernels.size(); ++k) {
                Recipe r = instance != nullptr ? (*instance)[k] : e->recipes[k];
                if (instance != nullptr && has_storages(r)) ++stats.with_storages;
                r.rule = kRule;
                r.issued_with_op = k > 0 || r.issued_with_op;
                r.reason = "recipe of " + std::string(op_of(r)) + " from " + e->source +
                           " (matched by " + how + ")";
                recipes.set(t[at + k], std::move(r));
            }
            stats.matched += e->kernels.size();
            stats.candidates += e->kernels.size() - 1;
            if (ambiguous) ++stats.by_neighbours;
            if (own_trace) stats.from_own_trace += e->kernels.size();
            at += e->kernels.size();
        }
    }
    return stats;
}

}  // namespace replay
