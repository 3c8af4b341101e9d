// Recipes for kernels that have no op: kernels launched by cudaGraphLaunch, or recorded without
// record_shapes, keep a name, grid, block and stream. A recipe library holds the recipes of the
// same kernels where they were launched eagerly (this trace's own eager instances, then other
// traces or kernel_signatures.json files of the same workload) and gives them to such kernels by
// name + grid + block, with the recorded neighbours deciding when several recipes fit.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "replay/classifier.h"
#include "replay/kernel_graph.h"
#include "replay/recipe.h"

namespace replay {

// A kernel as a graph launch knows it.
struct LaunchShape {
    std::string name;
    std::array<std::int32_t, 3> grid{0, 0, 0};
    std::array<std::int32_t, 3> block{0, 0, 0};
    bool operator==(const LaunchShape&) const = default;
    std::string text() const;  // "name grid[x,y,z] block[x,y,z]"
};

// Kernels as a set of (name, grid, block), hashed: `may_hold` is true for every kernel added and
// for the rare other kernel whose hash collides (a filter that never misses; the matcher compares
// name, grid and block itself).
class LaunchSet {
  public:
    // Of a kernel's name, grid (3 values) and block (3 values).
    static std::uint64_t key(NameId name, const std::int32_t* grid, const std::int32_t* block);
    static std::uint64_t key(const GpuActivity& kernel) {
        return key(kernel.name, kernel.grid, kernel.block);
    }
    void add(const GpuActivity& kernel) {
        if (kernel.name >= names_.size()) names_.resize(kernel.name + 1, false);
        names_[kernel.name] = true;
        keys_.insert(key(kernel));
    }
    // Most kernels are told apart by their name alone, without the hash.
    bool may_hold(const GpuActivity& kernel) const {
        return kernel.name < names_.size() && names_[kernel.name] && keys_.contains(key(kernel));
    }

  private:
    std::vector<bool> names_;  // per NameId: whether a kernel of that name was added
    std::unordered_set<std::uint64_t> keys_;
};

// One op issue as a library holds it: the recipe of its first kernel and the kernels the issue
// launched (the first included), with the kernels recorded just before and after it.
struct LibraryEntry {
    std::vector<LaunchShape> kernels;
    // Where the kernels' recipes (storage ids and reuse distances forgotten) start among the
    // library's: RecipeLibrary::recipe(entry, k).
    std::uint32_t recipes = 0;
    // Per instance folded into the entry, in recorded order: where its kernels' recipes with the
    // instance's own storage ids (renumbered apart from other sources'; reuse distances
    // forgotten) start: RecipeLibrary::instance(at, k). Empty for kernel_signatures.json
    // entries, which have no storage ids.
    std::vector<std::uint32_t> instances;
    std::string before;           // name of the kernel before it on its stream ("" at the start)
    std::string after;            // name of the kernel after the issue
    std::string source;           // the file (or "this trace") it came from
    std::size_t seen = 1;         // instances folded into this entry
};

class RecipeLibrary {
  public:
    // The replayable op issues of an analysed trace, one entry per distinct issue and neighbours.
    // `storage_offset` is added to the trace's storage ids, so that two sources' ids stay apart.
    // `first_kernels`, when given: only the issues whose first kernel it may hold (a library
    // matched against those kernels by name, grid and block needs no others).
    void add_graph(const KernelGraph& graph, const NodeRecipes& recipes, const std::string& source,
                   std::int64_t storage_offset = 0, const LaunchSet* first_kernels = nullptr);
    // A kernel_signatures.json file or a trace (told by content). Throws InputError.
    void add_file(const std::string& path);
    // Single-kernel entries (a signature file's unique kernels have no neighbours).
    void add_kernel(const LaunchShape& kernel, const Recipe& recipe, const std::string& source);

    bool empty() const { return entries_.empty(); }
    std::size_t size() const { return entries_.size(); }
    const std::vector<LibraryEntry>& entries() const { return entries_; }
    // The recipe of kernel `k` of `entry`, without storage ids.
    const Recipe& recipe(const LibraryEntry& entry, std::size_t k) const {
        return recipes_.decision(entry.recipes + k);
    }
    // The recipe of kernel `k` of the instance that starts at `at` (LibraryEntry::instances),
    // with the instance's storage ids.
    Recipe instance(std::uint32_t at, std::size_t k) const { return recipes_.recipe(at + k); }
    // The library's recipes as nodes: kernel k of an entry is node LibraryEntry::recipes + k, of
    // an instance node LibraryEntry::instances[i] + k.
    const NodeRecipes& nodes() const { return recipes_; }
    // The key() of the recipe of kernel `k` of `entry`, numbered: equal keys, equal numbers.
    std::uint32_t key(const LibraryEntry& entry, std::size_t k) const {
        return key_of_[recipes_.entry(entry.recipes + k)];
    }

  private:
    // Adds `entry`, or folds it into an equal one: that entry's index.
    std::size_t add(LibraryEntry entry);
    // A library recipe of its own (a node of recipes_): `recipe` without storage ids, whose
    // key() has number `key` (number_key).
    std::uint32_t add_recipe(const Recipe& recipe, std::uint32_t key);
    std::uint32_t number_key(std::string key);
    // What tells entries apart: neighbours, kernels and their recipes' keys, as text.
    std::string identity(const LibraryEntry& entry) const;

    std::vector<LibraryEntry> entries_;
    // The recipes of the entries' kernels and of their instances, a node each: the decisions
    // shared, each instance's storage ids beside them.
    NodeRecipes recipes_;
    std::int64_t traces_ = 0;  // traces added by add_file: each gets its own storage-id range
    std::unordered_multimap<std::uint64_t, std::size_t> index_;  // identity's hash -> entries_
    // The entries' recipes' key() texts, numbered, and the number of each of recipes_' decisions.
    std::vector<std::string> keys_;
    std::unordered_map<std::string, std::uint32_t> key_numbers_;
    std::vector<std::uint32_t> key_of_;
};

struct LibraryStats {
    std::size_t candidates = 0;  // kernels without a recipe that a library could serve
    std::size_t matched = 0;     // kernels that got one (issuing kernels and their companions)
    std::size_t by_neighbours = 0;  // matches where several recipes fit and neighbours decided
    std::size_t from_own_trace = 0;
    std::size_t with_storages = 0;  // matched kernels that took an instance's storage ids
};

// Whether a kernel lacks a recipe only because no op with shapes encloses it (rules no-op,
// unlinked, no-shapes): what a recipe library or the Inductor wrapper's library calls may give.
bool lacks_op_recipe(const Recipe& r);

// Gives recipes to the graph's kernels that have none because no op with shapes encloses them
// (rules no-op, unlinked, no-shapes): this trace's own eager instances first, then `library`.
// Matched kernels get rule "recipe-library" and the source in the recipe's reason; the kernels
// an issue launches after its first are marked issued_with_op (timed with its issue). The n-th
// match of an entry takes the storage ids of its n-th recorded instance (cycling): a CUDA graph
// replaying an eager step launches the same issues in the same order, so each layer's kernels get
// that layer's buffers instead of sharing one set (which would keep every weight in L2).
LibraryStats apply_recipe_library(const KernelGraph& graph, NodeRecipes& recipes,
                                  const RecipeLibrary& library);

}  // namespace replay
