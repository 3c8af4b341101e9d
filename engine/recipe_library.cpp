#include "replay/recipe_library.h"

#include <algorithm>
#include <string_view>
#include <tuple>
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

// Whether a node's storage ids (NodeRecipes::storages) name any storage.
bool any_storage(std::span<const std::int64_t> storages) {
    return std::any_of(storages.begin(), storages.end(), [](std::int64_t id) { return id >= 0; });
}

std::string_view op_of(const Recipe& r) {
    if (const auto* g = std::get_if<GemmRecipe>(&r.detail)) return g->op;
    if (const auto* a = std::get_if<AtenRecipe>(&r.detail)) return a->op;
    if (const auto* c = std::get_if<CopyRecipe>(&r.detail)) return c->is_memset ? "memset" : "copy";
    return to_string(r.tier);
}

constexpr std::uint32_t kNone = 0xFFFFFFFFu;

// Compared element by element: std::equal on three ints is a call to memcmp, and the matcher
// compares a few for every kernel that wants a recipe.
bool same_dims(const std::array<std::int32_t, 3>& dims, const std::int32_t (&recorded)[3]) {
    return dims[0] == recorded[0] && dims[1] == recorded[1] && dims[2] == recorded[2];
}

// lacks_op_recipe() of nodes' decisions, worked out once per table entry (the rule is a string).
class WantsLibrary {
  public:
    explicit WantsLibrary(const NodeRecipes& recipes) : recipes_(recipes) {
        wanted_.reserve(recipes.table().size());
        for (const Recipe& r : recipes.table()) wanted_.push_back(lacks_op_recipe(r));
    }
    bool operator()(std::uint32_t node) const {
        const std::uint32_t entry = recipes_.entry(node);
        // Entries added since are the library's own decisions, asked about one by one.
        return entry < wanted_.size() ? wanted_[entry] != 0
                                      : lacks_op_recipe(recipes_.decision(node));
    }

  private:
    const NodeRecipes& recipes_;
    std::vector<std::uint8_t> wanted_;  // per table entry at construction
};

// An issue of one trace by ids: its neighbours' names, then per kernel its name, grid, block, the
// key() of its recipe (numbered) and whether it is issued with its op. Issues with equal ids have
// equal identity() texts, which are then built once per distinct issue.
using IssueKey = std::vector<std::uint64_t>;
// One step of the hashes of issue keys and launches.
std::uint64_t mix(std::uint64_t h, std::uint64_t v) {
    h = (h ^ v) * 0x9E3779B97F4A7C15ULL;
    return h ^ (h >> 29);
}

struct IssueKeyHash {
    std::size_t operator()(const IssueKey& key) const {
        std::uint64_t h = key.size();
        for (const std::uint64_t v : key) h = mix(h, v);
        return static_cast<std::size_t>(h);
    }
};

std::uint64_t pack(std::int32_t a, std::int32_t b) {
    return std::uint64_t{static_cast<std::uint32_t>(a)} << 32 | static_cast<std::uint32_t>(b);
}

class Matcher {
  public:
    Matcher(const RecipeLibrary& library, const Trace& trace) : library_(library) {
        // The library's kernel names as the trace's ids (none: no kernel of the trace has it).
        std::unordered_map<std::string_view, NameId> ids;
        for (std::size_t i = 0; i < trace.names.size(); ++i)
            ids.emplace(trace.names.view(static_cast<NameId>(i)), static_cast<NameId>(i));
        const auto id = [&](const std::string& name) {
            const auto it = ids.find(name);
            return it == ids.end() ? kNone : it->second;
        };
        for (std::size_t i = 0; i < library.entries().size(); ++i) {
            const LibraryEntry& e = library.entries()[i];
            Ids& entry = ids_.emplace_back();
            for (const LaunchShape& k : e.kernels) entry.kernels.push_back(id(k.name));
            entry.before = id(e.before);
            entry.after = id(e.after);
            if (entry.kernels.front() == kNone) continue;
            const LaunchShape& first = e.kernels.front();
            by_launch_[LaunchSet::key(entry.kernels.front(), first.grid.data(), first.block.data())]
                .push_back(i);
        }
    }

    // The best entry for the kernels of `track` from `at`, nullptr when none fits; `ambiguous`
    // says whether entries with other recipes fitted as well (the neighbours decided).
    const LibraryEntry* best(const KernelGraph& graph, const WantsLibrary& wants,
                             const std::vector<std::uint32_t>& track, std::size_t at,
                             bool& ambiguous) {
        ambiguous = false;
        const auto activity = [&](std::size_t i) -> const GpuActivity& {
            return graph.activity(graph.nodes()[track[i]]);
        };
        // The entries whose first kernel has this one's name, grid and block (and the rare other
        // whose key collides), in entry order.
        const auto found = by_launch_.find(LaunchSet::key(activity(at)));
        if (found == by_launch_.end()) return nullptr;
        const std::vector<std::size_t>& alike = found->second;
        const NameId before = at > 0 ? activity(at - 1).name : StringPool::kEmpty;
        const auto& entries = library_.entries();
        fits_.clear();
        for (std::size_t i : alike) {
            const LibraryEntry& e = entries[i];
            const Ids& ids = ids_[i];
            if (at + e.kernels.size() > track.size()) continue;
            bool all = true;
            for (std::size_t k = 0; k < e.kernels.size() && all; ++k) {
                const GpuActivity& a = activity(at + k);
                all = (k == 0 || wants(track[at + k])) && a.name == ids.kernels[k] &&
                      same_dims(e.kernels[k].grid, a.grid) &&
                      same_dims(e.kernels[k].block, a.block);
            }
            if (!all) continue;
            const std::size_t next = at + e.kernels.size();
            const NameId after = next < track.size() ? activity(next).name : StringPool::kEmpty;
            fits_.push_back({i, (ids.before == before ? 1 : 0) + (ids.after == after ? 1 : 0)});
        }
        if (fits_.empty()) return nullptr;
        const Fit* chosen = &fits_.front();
        for (const Fit& f : fits_) {
            const LibraryEntry& e = entries[f.entry];
            const LibraryEntry& c = entries[chosen->entry];
            if (f.score > chosen->score ||
                (f.score == chosen->score && e.kernels.size() > c.kernels.size()) ||
                (f.score == chosen->score && e.kernels.size() == c.kernels.size() && e.seen > c.seen))
                chosen = &f;
        }
        const std::uint32_t key = library_.key(entries[chosen->entry], 0);
        for (const Fit& f : fits_)
            if (library_.key(entries[f.entry], 0) != key) ambiguous = true;
        return &entries[chosen->entry];
    }

  private:
    // An entry that fits the kernels of a track from a position.
    struct Fit {
        std::size_t entry = 0;
        int score = 0;  // recorded neighbours that agree (0..2)
    };
    // An entry's names as the trace's ids.
    struct Ids {
        std::vector<NameId> kernels;
        NameId before = kNone, after = kNone;
    };
    const RecipeLibrary& library_;
    // LaunchSet::key of an entry's first kernel -> the entries, in entry order.
    std::unordered_map<std::uint64_t, std::vector<std::size_t>> by_launch_;
    std::vector<Ids> ids_;                           // per entry
    std::vector<Fit> fits_;
};

}  // namespace

bool lacks_op_recipe(const Recipe& r) {
    return !r.replayable() && (r.rule == "no-op" || r.rule == "unlinked" || r.rule == "no-shapes");
}

std::uint64_t LaunchSet::key(NameId name, const std::int32_t* grid, const std::int32_t* block) {
    return mix(mix(mix(name, pack(grid[0], grid[1])), pack(grid[2], block[0])),
               pack(block[1], block[2]));
}

std::string LaunchShape::text() const {
    auto dims = [](const std::array<std::int32_t, 3>& d) {
        return "[" + std::to_string(d[0]) + "," + std::to_string(d[1]) + "," +
               std::to_string(d[2]) + "]";
    };
    return name + " grid" + dims(grid) + " block" + dims(block);
}

std::string RecipeLibrary::identity(const LibraryEntry& e) const {
    std::string text = e.before;
    text.append("\x1f").append(e.after);
    for (std::size_t i = 0; i < e.kernels.size(); ++i) {
        text.append("\x1e").append(e.kernels[i].text()).append("\x1f").append(keys_[key(e, i)]);
        if (recipe(e, i).issued_with_op) text += '+';
    }
    return text;
}

std::uint32_t RecipeLibrary::number_key(std::string key) {
    const auto [it, added] =
        key_numbers_.try_emplace(std::move(key), static_cast<std::uint32_t>(keys_.size()));
    if (added) keys_.push_back(it->first);
    return it->second;
}

std::size_t RecipeLibrary::add(LibraryEntry entry) {
    // One entry per distinct issue and neighbours: a decode step repeats each layer's issues.
    const std::string id = identity(entry);
    const std::uint64_t h = std::hash<std::string>{}(id);
    for (auto [it, end] = index_.equal_range(h); it != end; ++it) {
        LibraryEntry& kept = entries_[it->second];
        if (identity(kept) != id) continue;
        ++kept.seen;
        kept.instances.insert(kept.instances.end(), entry.instances.begin(), entry.instances.end());
        return it->second;
    }
    index_.emplace(h, entries_.size());
    entries_.push_back(std::move(entry));
    return entries_.size() - 1;
}

std::uint32_t RecipeLibrary::add_recipe(const Recipe& recipe, std::uint32_t key) {
    const std::size_t node = recipes_.size();
    recipes_.resize_nodes(node + 1);
    recipes_.set(node, without_storages(recipe));
    const std::uint32_t entry = recipes_.entry(node);
    if (entry >= key_of_.size()) key_of_.resize(entry + 1, kNone);
    key_of_[entry] = key;
    return static_cast<std::uint32_t>(node);
}

void RecipeLibrary::add_kernel(const LaunchShape& kernel, const Recipe& recipe,
                               const std::string& source) {
    if (!recipe.replayable() || recipe.tier == Tier::Collective || recipe.issued_with_op) return;
    LibraryEntry e;
    e.kernels.push_back(kernel);
    e.recipes = add_recipe(recipe, number_key(recipe.key()));
    e.source = source;
    add(std::move(e));
}

void RecipeLibrary::add_graph(const KernelGraph& graph, const NodeRecipes& recipes,
                              const std::string& source, std::int64_t storage_offset,
                              const LaunchSet* first_kernels) {
    const auto& nodes = graph.nodes();
    // Decisions of equal key() get one number, each worked out once.
    std::vector<std::uint32_t> key_of(recipes.table().size(), kNone);
    const auto key = [&](std::uint32_t node) {
        std::uint32_t& k = key_of[recipes.entry(node)];
        if (k == kNone) k = number_key(recipes.decision(node).key());
        return k;
    };
    // Per table entry, once: whether a node of that decision starts an issue (replayable, not a
    // collective, not issued with the kernel before it, not the library's own) and whether it is
    // issued with its op.
    std::vector<std::uint8_t> starts(recipes.table().size()), with_op(recipes.table().size());
    for (std::size_t e = 0; e < starts.size(); ++e) {
        const Recipe& r = recipes.table()[e];
        starts[e] =
            r.replayable() && r.tier != Tier::Collective && !r.issued_with_op && r.rule != kRule;
        with_op[e] = r.issued_with_op;
    }
    const auto name = [&](std::uint32_t node) { return graph.activity(nodes[node]).name; };
    const auto has_storages = [&](std::uint32_t node) { return any_storage(recipes.storages(node)); };
    std::unordered_map<IssueKey, std::size_t, IssueKeyHash> known;  // issue -> entries_
    std::vector<std::uint32_t> entries;  // recipes' table entries -> recipes_'
    IssueKey issue;
    for (const StreamTrack& track : graph.streams()) {
        const auto& t = track.nodes;
        for (std::size_t at = 0; at < t.size();) {
            if (!starts[recipes.entry(t[at])]) {
                ++at;
                continue;
            }
            // The kernels the same op issue launched after this one (split-K reductions, the
            // second kernel of a multi-kernel aten op), as the drivers group them.
            const std::uint32_t op = nodes[t[at]].op;
            std::size_t end = at + 1;
            while (end < t.size() && op != kNoIndex && nodes[t[end]].op == op &&
                   (with_op[recipes.entry(t[end])] || key(t[end]) == key(t[at])))
                ++end;
            if (first_kernels != nullptr &&
                !first_kernels->may_hold(graph.activity(nodes[t[at]]))) {
                at = end;
                continue;
            }
            const auto first = t.begin() + static_cast<std::ptrdiff_t>(at);
            const auto last = t.begin() + static_cast<std::ptrdiff_t>(end);
            // The instance's own recipes, where it has storage ids.
            std::uint32_t instance = kNone;
            if (std::any_of(first, last, has_storages))
                for (auto k = first; k != last; ++k) {
                    const std::size_t n = recipes_.append(recipes, *k, storage_offset, entries);
                    if (k == first) instance = static_cast<std::uint32_t>(n);
                }
            issue.assign({at > 0 ? name(t[at - 1]) : std::uint64_t{1} << 32,
                          end < t.size() ? name(t[end]) : std::uint64_t{1} << 32});
            for (auto k = first; k != last; ++k) {
                const GpuActivity& a = graph.activity(nodes[*k]);
                issue.insert(issue.end(),
                             {a.name, pack(a.grid[0], a.grid[1]), pack(a.grid[2], a.block[0]),
                              pack(a.block[1], a.block[2]),
                              key(*k) | std::uint64_t{recipes.decision(*k).issued_with_op} << 32});
            }
            if (const auto it = known.find(issue); it != known.end()) {
                LibraryEntry& kept = entries_[it->second];
                ++kept.seen;
                if (instance != kNone) kept.instances.push_back(instance);
                at = end;
                continue;
            }
            LibraryEntry e;
            for (auto k = first; k != last; ++k) {
                e.kernels.push_back(shape_of(graph, *k));
                const std::uint32_t node = add_recipe(recipes.decision(*k), key(*k));
                if (k == first) e.recipes = node;
            }
            if (instance != kNone) e.instances.push_back(instance);
            e.before = at > 0 ? shape_of(graph, t[at - 1]).name : "";
            e.after = end < t.size() ? shape_of(graph, t[end]).name : "";
            e.source = source;
            known.emplace(issue, add(std::move(e)));
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
    WantsLibrary wants(recipes);
    // This trace's issues matter only where their first kernel has the name, grid and block of a
    // kernel that wants a recipe (Matcher::best looks entries up by those).
    LaunchSet candidates;
    for (const StreamTrack& track : graph.streams())
        for (const std::uint32_t n : track.nodes)
            if (wants(n) && graph.activity(graph.nodes()[n]).kind == ActivityKind::Kernel)
                candidates.add(graph.activity(graph.nodes()[n]));
    RecipeLibrary own;
    own.add_graph(graph, recipes, "this trace", 0, &candidates);
    Matcher own_matcher(own, graph.trace());
    Matcher library_matcher(library, graph.trace());
    std::unordered_map<const LibraryEntry*, std::size_t> uses;  // matches so far, per entry
    // The decisions given so far, by what they are made of: the library, the library recipe's
    // decision, whether the kernel follows the issue's first, how it was matched, the source.
    using Given = std::tuple<const RecipeLibrary*, std::uint32_t, bool, bool, const std::string*>;
    struct GivenHash {
        std::size_t operator()(const Given& g) const {
            const auto& [library, entry, later, ambiguous, source] = g;
            std::size_t h = std::hash<const void*>{}(library) ^ std::hash<const void*>{}(source);
            return h * 0x9E3779B97F4A7C15ULL + (std::size_t{entry} << 2 | later << 1 | ambiguous);
        }
    };
    std::unordered_map<Given, std::uint32_t, GivenHash> given;  // -> recipes' table entry
    for (const StreamTrack& track : graph.streams()) {
        const auto& t = track.nodes;
        for (std::size_t at = 0; at < t.size();) {
            if (!wants(t[at]) ||
                graph.activity(graph.nodes()[t[at]]).kind != ActivityKind::Kernel) {
                ++at;
                continue;
            }
            ++stats.candidates;
            bool ambiguous = false;
            const LibraryEntry* e = own_matcher.best(graph, wants, t, at, ambiguous);
            const bool own_trace = e != nullptr;
            if (e == nullptr) e = library_matcher.best(graph, wants, t, at, ambiguous);
            if (e == nullptr) {
                ++at;
                continue;
            }
            const RecipeLibrary& from = own_trace ? own : library;
            std::uint32_t instance = kNone;
            if (!e->instances.empty()) {
                std::size_t& n = uses[e];
                instance = e->instances[n++ % e->instances.size()];
            }
            const char* how = ambiguous ? "name, grid, block and the kernels recorded around it"
                                        : "name, grid and block";
            const NodeRecipes& nodes = from.nodes();
            for (std::size_t k = 0; k < e->kernels.size(); ++k) {
                const std::size_t node = instance != kNone ? instance + k : e->recipes + k;
                const auto storages = nodes.storages(node);
                if (instance != kNone && any_storage(storages)) ++stats.with_storages;
                const auto [decision, added] = given.try_emplace(
                    Given{&from, nodes.entry(node), k > 0, ambiguous, &e->source}, kNone);
                if (added) {
                    Recipe r = nodes.decision(node);
                    r.rule = kRule;
                    r.issued_with_op = k > 0 || r.issued_with_op;
                    r.reason = "recipe of " + std::string(op_of(r)) + " from " + e->source +
                               " (matched by " + how + ")";
                    recipes.set(t[at + k], r);
                    decision->second = recipes.entry(t[at + k]);
                } else {
                    recipes.set_decision(t[at + k], decision->second);
                }
                recipes.set_storages(t[at + k], storages);
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
