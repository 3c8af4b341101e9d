// NodeRecipes: the shared decisions and, beside them, each node's storage ids and reuse distances.
#include <algorithm>
#include <functional>
#include <stdexcept>

#include "replay/classifier.h"

namespace replay {
namespace {

// Only speeds the lookup up: equality decides. Takes what tells decisions apart cheaply.
std::uint64_t decision_hash(const Recipe& r) {
    std::uint64_t h = static_cast<std::uint64_t>(r.tier) | std::uint64_t{r.issued_with_op} << 8;
    const auto mix = [&](std::uint64_t v) {
        h = (h ^ v) * 0x9E3779B97F4A7C15ull;
        h ^= h >> 29;
    };
    const auto text = [&](const std::string& s) { mix(std::hash<std::string>{}(s)); };
    text(r.rule);
    text(r.reason);
    mix(r.detail.index());
    if (const auto* c = std::get_if<CopyRecipe>(&r.detail)) {
        mix(static_cast<std::uint64_t>(c->bytes) ^ static_cast<std::uint64_t>(c->direction) << 56);
    } else if (const auto* g = std::get_if<GemmRecipe>(&r.detail)) {
        text(g->op);
        for (std::int64_t v : {g->m, g->n, g->k, g->batch, g->lda, g->ldb, g->ldc})
            mix(static_cast<std::uint64_t>(v));
    } else if (const auto* a = std::get_if<AtenRecipe>(&r.detail)) {
        text(a->op);
        text(a->overload);
        for (const auto& arg : a->args) {
            mix(static_cast<std::uint64_t>(arg.kind));
            text(arg.value);
            for (const auto& t : arg.tensors) {
                mix(static_cast<std::uint64_t>(t.dtype) ^
                    static_cast<std::uint64_t>(t.storage_offset) << 8);
                for (std::int64_t d : t.dims) mix(static_cast<std::uint64_t>(d));
            }
        }
    } else if (const auto* c = std::get_if<CollectiveRecipe>(&r.detail)) {
        text(c->collective);
        mix(static_cast<std::uint64_t>(c->in_nelems) ^ static_cast<std::uint64_t>(c->out_nelems)
                                                           << 1);
    } else if (const auto* t = std::get_if<TritonRecipe>(&r.detail)) {
        text(t->kernel);
        text(t->variant);
    }
    return h;
}

}  // namespace

std::uint32_t NodeRecipes::add_run(std::vector<std::int64_t>& pool,
                                   std::span<const std::int64_t> values) {
    if (pool.size() + values.size() + 1 >= kNone)
        throw std::length_error("NodeRecipes: more than 2^32 storage ids and reuse distances");
    const auto at = static_cast<std::uint32_t>(pool.size());
    pool.push_back(static_cast<std::int64_t>(values.size()));
    pool.insert(pool.end(), values.begin(), values.end());
    return at;
}

std::uint32_t NodeRecipes::intern(Recipe decision) {
    const std::uint64_t h = decision_hash(decision);
    for (auto [it, end] = index_.equal_range(h); it != end; ++it)
        if (table_[it->second] == decision) return it->second;
    table_.push_back(std::move(decision));
    const auto entry = static_cast<std::uint32_t>(table_.size() - 1);
    index_.emplace(h, entry);
    return entry;
}

void NodeRecipes::resize_nodes(std::size_t nodes) {
    entry_.resize(nodes, 0);
    storage_at_.resize(nodes, kNone);
    reuse_at_.resize(nodes, kNone);
}

void NodeRecipes::set(std::size_t node, const Recipe& recipe) {
    Recipe decision = recipe;
    std::vector<std::int64_t> storages, distances;
    bool any_storage = false, any_distance = false;
    visit_tensor_slots(decision, [&](std::int64_t& storage, std::int64_t& reuse) {
        storages.push_back(storage);
        distances.push_back(reuse);
        any_storage = any_storage || storage != -1;
        any_distance = any_distance || reuse != kReuseUnknown;
        storage = -1;
        reuse = kReuseUnknown;
    });
    entry_[node] = intern(std::move(decision));
    storage_at_[node] = any_storage ? add_run(storage_pool_, storages) : kNone;
    reuse_at_[node] = any_distance ? add_run(reuse_pool_, distances) : kNone;
}

void NodeRecipes::share(std::size_t node, std::size_t from) {
    entry_[node] = entry_[from];
    storage_at_[node] = storage_at_[from];
    reuse_at_[node] = reuse_at_[from];
}

void NodeRecipes::set_storages(std::size_t node, std::span<const std::int64_t> storages) {
    const bool any = std::ranges::any_of(storages, [](std::int64_t s) { return s != -1; });
    storage_at_[node] = any ? add_run(storage_pool_, storages) : kNone;
}

void NodeRecipes::set_reuse(std::size_t node, std::span<const std::int64_t> distances) {
    // The kernels of one op come one after the other and see the same distances: one run.
    const auto last = slots(last_reuse_run_, reuse_pool_);
    if (last_reuse_run_ == kNone ||
        !std::equal(last.begin(), last.end(), distances.begin(), distances.end()))
        last_reuse_run_ = add_run(reuse_pool_, distances);
    reuse_at_[node] = last_reuse_run_;
}

void NodeRecipes::set_reason(std::uint32_t entry, std::string reason) {
    const std::uint64_t old = decision_hash(table_[entry]);
    for (auto [it, end] = index_.equal_range(old); it != end; ++it)
        if (it->second == entry) {
            index_.erase(it);
            break;
        }
    table_[entry].reason = std::move(reason);
    index_.emplace(decision_hash(table_[entry]), entry);
}

void NodeRecipes::drop_storage_ids() {
    std::fill(storage_at_.begin(), storage_at_.end(), kNone);
    std::fill(reuse_at_.begin(), reuse_at_.end(), kNone);
    storage_pool_.clear();
    reuse_pool_.clear();
    last_reuse_run_ = kNone;
}

std::size_t NodeRecipes::append(const NodeRecipes& from, std::size_t node,
                                std::int64_t storage_offset, std::vector<std::uint32_t>& entries) {
    const std::uint32_t entry = from.entry_[node];
    if (entry >= entries.size()) entries.resize(from.table_.size(), kNone);
    if (entries[entry] == kNone) entries[entry] = intern(from.table_[entry]);
    const std::size_t n = entry_.size();
    entry_.push_back(entries[entry]);
    reuse_at_.push_back(kNone);
    storage_at_.push_back(kNone);
    const auto storages = from.storages(node);
    if (!storages.empty()) {
        // Into the pool directly (a node of this table's own would first be copied: the pool
        // may move as it grows).
        storage_at_.back() =
            &from != this ? add_run(storage_pool_, storages)
                          : add_run(storage_pool_, std::vector(storages.begin(), storages.end()));
        if (storage_offset != 0)
            for (std::int64_t& s : std::span(storage_pool_).last(storages.size()))
                if (s >= 0) s += storage_offset;
    }
    return n;
}

Recipe NodeRecipes::recipe(std::size_t node) const {
    Recipe r = decision(node);
    const auto storage = storages(node);
    const auto distance = reuse(node);
    std::size_t i = 0;
    visit_tensor_slots(r, [&](std::int64_t& s, std::int64_t& reuse_bytes) {
        if (i < storage.size()) s = storage[i];
        if (i < distance.size()) reuse_bytes = distance[i];
        ++i;
    });
    return r;
}

}  // namespace replay
