#include "plan.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "progress_line.h"
#include "replay/ranks.h"
#include "session.h"

namespace replay {

namespace {

// The op instance an aten recipe issues for node `n`: the nearest op enclosing its kernel (its own
// op included) of the recipe's name; kNoIndex when none is (a recipe from elsewhere).
std::uint32_t issuing_op(const KernelGraph& graph, const Recipe& recipe, std::uint32_t n) {
    const auto* aten = std::get_if<AtenRecipe>(&recipe.detail);
    if (aten == nullptr || recipe.tier != Tier::AtenOp) return kNoIndex;
    const Trace& trace = graph.trace();
    for (std::uint32_t q = graph.nodes()[n].op; q != kNoIndex; q = trace.cpu_ops[q].parent)
        if (trace.names.view(trace.cpu_ops[q].name) == aten->op) return q;
    return kNoIndex;
}

}  // namespace

std::vector<Step> plan_steps(const KernelGraph& graph, const NodeRecipes& recipes, bool collectives,
                             StepOwner step_owner) {
    const auto& nodes = graph.nodes();
    const Trace& trace = graph.trace();
    // Issuing an aten op re-creates everything launched inside it: the kernels, memsets and
    // copies of its child ops too (embedding_dense_backward's sorts and memsets), whatever their
    // own recipes. Such nodes join the op's step, so that it is issued once, not once per child.
    std::unordered_map<std::uint32_t, std::uint32_t> issue_node_of;  // issued op -> first node
    for (std::uint32_t n = 0; n < nodes.size(); ++n) {
        const Recipe& r = recipes.decision(n);
        if (!r.replayable()) continue;
        if (const std::uint32_t op = issuing_op(graph, r, n); op != kNoIndex)
            issue_node_of.try_emplace(op, n);
    }
    // The issued op enclosing node n (StepOwner).
    const auto owner_of = [&](std::uint32_t n) {
        std::uint32_t owner = kNoIndex;
        for (std::uint32_t q = nodes[n].op; q != kNoIndex; q = trace.cpu_ops[q].parent) {
            if (!issue_node_of.count(q)) continue;
            owner = q;
            if (step_owner == StepOwner::Nearest) break;
        }
        return owner;
    };

    std::vector<Step> steps;
    std::unordered_map<std::uint32_t, std::size_t> step_of_owner;    // issued op -> step
    std::unordered_map<std::uint32_t, std::size_t> last_step_of_op;  // op instance -> step
    std::unordered_map<std::uint32_t, std::size_t> last_step_of_stream;  // stream slot -> step
    for (std::uint32_t n = 0; n < nodes.size(); ++n) {
        const Recipe& r = recipes.decision(n);
        if (const std::uint32_t owner =
                issue_node_of.empty() || !r.replayable() ? kNoIndex : owner_of(n);
            owner != kNoIndex) {
            const std::uint32_t issue = issue_node_of.at(owner);
            auto [it, added] = step_of_owner.try_emplace(owner, steps.size());
            if (added) {
                Step step;
                step.issue_node = issue;
                step.stream = static_cast<int>(nodes[issue].stream_slot);
                last_step_of_op[nodes[issue].op] = steps.size();
                last_step_of_stream[nodes[issue].stream_slot] = steps.size();
                steps.push_back(std::move(step));
            }
            steps[it->second].nodes.push_back(n);
            continue;
        }
        if (!r.replayable() || (r.tier == Tier::Collective && !collectives)) continue;
        const std::uint32_t op = nodes[n].op;
        auto previous = op == kNoIndex ? last_step_of_op.end() : last_step_of_op.find(op);
        const bool same_op = previous != last_step_of_op.end();
        // A kernel without an op that its issue launches after the first (a graph kernel given
        // an eager issue's recipe: recipe_library.h) goes with the issue before it on its stream.
        if (r.issued_with_op && op == kNoIndex) {
            if (auto s = last_step_of_stream.find(nodes[n].stream_slot);
                s != last_step_of_stream.end() && nodes[steps[s->second].issue_node].op == kNoIndex)
                steps[s->second].nodes.push_back(n);
            continue;
        }
        if (r.issued_with_op ||
            (same_op && r.tier == Tier::AtenOp &&
             recipes.decision(steps[previous->second].issue_node).key() == r.key())) {
            if (same_op) steps[previous->second].nodes.push_back(n);
            continue;  // an auxiliary kernel whose op was not issued stays unreplayed
        }
        Step step;
        step.issue_node = n;
        step.nodes.push_back(n);
        step.stream = static_cast<int>(nodes[n].stream_slot);
        if (op != kNoIndex) last_step_of_op[op] = steps.size();
        last_step_of_stream[nodes[n].stream_slot] = steps.size();
        steps.push_back(std::move(step));
    }
    return steps;
}

namespace detail {
namespace {

std::string step_label(const Recipe& recipe) {
    if (const auto* aten = std::get_if<AtenRecipe>(&recipe.detail)) return aten->op;
    if (const auto* gemm = std::get_if<GemmRecipe>(&recipe.detail)) return gemm->op;
    if (const auto* copy = std::get_if<CopyRecipe>(&recipe.detail))
        return copy->is_memset ? "memset" : "memcpy";
    return to_string(recipe.tier);
}

bool floating(DType t) {
    switch (t) {
        case DType::Float32:
        case DType::Float16:
        case DType::BFloat16:
        case DType::Float64:
        case DType::Float8E4M3:
        case DType::Float8E5M2:
            return true;
        default:
            return false;
    }
}

// Calls f(storage, reuse_bytes, shared) for each recorded input of a GEMM or aten recipe;
// returns false for other recipes (copies, Triton, collectives: their inputs are not tracked).
template <typename F>
bool for_each_input(const Recipe& recipe, F&& f) {
    if (const auto* g = std::get_if<GemmRecipe>(&recipe.detail)) {
        f(g->a_storage, g->a_reuse_bytes, true);
        f(g->b_storage, g->b_reuse_bytes, true);
        if (g->bias || g->beta != 0) f(g->c_storage, g->c_reuse_bytes, true);
        return true;
    }
    if (const auto* a = std::get_if<AtenRecipe>(&recipe.detail)) {
        for (const auto& arg : a->args)
            for (const auto& t : arg.tensors) f(t.storage_id, t.reuse_bytes, floating(t.dtype));
        return true;
    }
    return false;
}

}  // namespace

std::vector<std::int64_t> shared_storages(const Recipe& recipe) {
    std::vector<std::int64_t> out;
    if (const auto* g = std::get_if<GemmRecipe>(&recipe.detail)) {
        for (std::int64_t s : {g->a_storage, g->b_storage, g->c_storage})
            if (s >= 0) out.push_back(s);
        return out;
    }
    for_each_input(recipe, [&](std::int64_t storage, std::int64_t, bool shared) {
        if (shared && storage >= 0) out.push_back(storage);
    });
    return out;
}

bool needs_warm_up(const Recipe& recipe, const std::unordered_set<std::int64_t>& touched) {
    bool needed = false;
    const bool known = for_each_input(recipe, [&](std::int64_t storage, std::int64_t reuse,
                                                  bool shared) {
        if (reuse == kReuseFirstTouch) return;  // from memory in the recording too
        needed |= !shared || storage < 0 || !touched.count(storage);
    });
    return !known || needed;
}

std::vector<PlannedStep> plan_sequential(const Analysis& analysis, Session& session,
                                         const std::vector<std::size_t>& kernel_of,
                                         const std::function<void(const std::string&)>& progress) {
    const KernelGraph& graph = analysis.graph;
    const auto& nodes = graph.nodes();
    const auto prepare = [&](const Step& step) -> Prepared& {
        const Recipe recorded = analysis.recipes.recipe(step.issue_node);
        return session.prepare(recorded.tier == Tier::Collective
                                   ? collective_recipe(analysis, step.issue_node)
                                   : recorded);
    };
    // Each op issued once, the ops inside it with it; where it cannot be replayed, the ops inside
    // it that can are issued on their own.
    const bool collectives = session.backend().runs_collectives();
    const std::vector<Step> outermost = plan_steps(graph, analysis.recipes, collectives);
    // The innermost ops' plan, made only once an outer op cannot be prepared.
    std::optional<std::vector<Step>> nearest;
    std::vector<std::size_t> nearest_of;  // node -> its step in *nearest
    const auto inner_steps = [&](const Step& step) {
        if (!nearest) {
            nearest = plan_steps(graph, analysis.recipes, collectives, StepOwner::Nearest);
            nearest_of.assign(nodes.size(), nearest->size());
            for (std::size_t s = 0; s < nearest->size(); ++s)
                for (auto n : (*nearest)[s].nodes) nearest_of[n] = s;
        }
        std::set<std::size_t> inner;
        for (auto n : step.nodes)
            if (nearest_of[n] < nearest->size()) inner.insert(nearest_of[n]);
        return inner;
    };
    std::vector<Step> steps;
    ProgressLine progress_line("plan", "steps prepared", outermost.size(), progress);
    for (std::size_t s = 0; s < outermost.size(); ++s) {
        progress_line.tick(s);
        const Step& step = outermost[s];
        const std::set<std::size_t> inner = prepare(step).disposition == Disposition::Ready
                                                ? std::set<std::size_t>{}
                                                : inner_steps(step);
        if (inner.size() <= 1) {
            steps.push_back(step);
            continue;
        }
        for (std::size_t k : inner) steps.push_back((*nearest)[k]);
    }
    // A wait is for the stream that re-creates its producer: an op's kernels recorded on a
    // library's own streams (cuDNN's RNNs) are re-created by the op's issue on its step's
    // stream, and the recorded stream they ran on gets no work in the replay.
    std::vector<int> issued_on(nodes.size(), -1);
    for (const Step& step : steps)
        for (auto n : step.nodes) issued_on[n] = step.stream;
    std::unordered_map<std::uint32_t, std::vector<int>> waits_before;  // waiter -> producer slots
    for (const auto& w : graph.waits())
        waits_before[w.waiter].push_back(issued_on[w.producer] >= 0
                                             ? issued_on[w.producer]
                                             : static_cast<int>(nodes[w.producer].stream_slot));
    // The recorded step starts with its first launch, replayed or not.
    Nanos origin = 0, gpu_origin = 0;
    for (std::size_t n = 0; n < nodes.size(); ++n) {
        origin = n == 0 ? graph.launch_time(nodes[n]) : std::min(origin, graph.launch_time(nodes[n]));
        const Nanos start = graph.activity(nodes[n]).ts;
        gpu_origin = n == 0 ? start : std::min(gpu_origin, start);
    }

    std::vector<PlannedStep> plan;
    std::unordered_set<std::int64_t> touched;  // storages the ready steps so far read or wrote
    for (std::size_t s = 0; s < steps.size(); ++s) {
        const Step& step = steps[s];
        const Recipe recorded = analysis.recipes.recipe(step.issue_node);
        Prepared& prepared = prepare(step);
        PlannedStep p;
        for (auto n : step.nodes) {
            p.kernels.push_back(kernel_of[n]);
            p.recorded_us.push_back(static_cast<double>(graph.activity(nodes[n]).dur) / 1000.0);
        }
        if (prepared.disposition != Disposition::Ready) {
            for (auto k : p.kernels) session.mark(k, prepared);
            continue;  // nor are the waits before it issued
        }
        p.step = s;
        p.nodes = step.nodes;
        p.label = step_label(analysis.recipes.decision(step.issue_node));
        p.prepared = &prepared;
        p.stream = step.stream;
        p.tag = s + 1;
        for (auto n : step.nodes)
            if (auto w = waits_before.find(n); w != waits_before.end())
                for (int producer : w->second)
                    if (producer != step.stream &&
                        std::find(p.waits.begin(), p.waits.end(), producer) == p.waits.end())
                        p.waits.push_back(producer);
        p.offset_ns = graph.launch_time(nodes[step.issue_node]) - origin;
        Nanos first_start = graph.activity(nodes[step.issue_node]).ts;
        for (auto n : step.nodes) first_start = std::min(first_start, graph.activity(nodes[n]).ts);
        p.start_offset_ns = first_start - gpu_origin;
        p.warm = needs_warm_up(recorded, touched);
        for (std::int64_t storage : shared_storages(recorded)) touched.insert(storage);
        plan.push_back(std::move(p));
    }
    return plan;
}

std::vector<LaunchUnit> direct_units(const std::vector<PlannedStep>& plan) {
    std::vector<LaunchUnit> units;
    units.reserve(plan.size());
    for (std::size_t i = 0; i < plan.size(); ++i)
        units.push_back({LaunchUnit::Kind::Direct, i, i + 1, 0, plan[i].stream,
                         plan[i].offset_ns, plan[i].waits});
    return units;
}

std::vector<std::pair<std::size_t, std::size_t>> graph_segments(
    const std::vector<bool>& capturable, bool per_step) {
    std::vector<std::pair<std::size_t, std::size_t>> segments;
    for (std::size_t i = 0; i < capturable.size();) {
        if (!capturable[i]) {
            ++i;
            continue;
        }
        std::size_t end = i + 1;
        if (!per_step)
            while (end < capturable.size() && capturable[end]) ++end;
        segments.emplace_back(i, end);
        i = end;
    }
    return segments;
}

std::vector<Template> plan_unique(const Analysis& analysis,
                                  const std::vector<std::size_t>& kernel_of) {
    const auto& nodes = analysis.graph.nodes();
    std::vector<Template> templates;
    std::map<std::vector<std::size_t>, std::size_t> template_of;
    std::map<std::size_t, std::set<std::string>> instance_keys;
    std::set<std::size_t> covered;
    // The innermost ops: a template per op whose kernels no template before times, so an outer
    // op that cannot be replayed leaves the ones inside it their own templates.
    const std::vector<Step> steps =
        plan_steps(analysis.graph, analysis.recipes, false, StepOwner::Nearest);
    std::map<int, std::size_t> last_on_stream;  // stream -> previous step index
    std::vector<std::optional<Recipe>> predecessor(steps.size());
    std::vector<bool> after_graph_node(steps.size(), false);  // Template::in_graph
    for (std::size_t s = 0; s < steps.size(); ++s) {
        if (auto it = last_on_stream.find(steps[s].stream); it != last_on_stream.end()) {
            predecessor[s] = analysis.recipes.recipe(steps[it->second].issue_node);
            const GraphNode& mine = nodes[steps[s].issue_node];
            const GraphNode& before = nodes[steps[it->second].nodes.back()];
            after_graph_node[s] = mine.graph_launch && before.graph_launch &&
                                  mine.launch != kNoIndex && mine.launch == before.launch;
        }
        last_on_stream[steps[s].stream] = s;
    }
    for (std::size_t s = 0; s < steps.size(); ++s) {
        const Step& step = steps[s];
        std::vector<std::size_t> positions;
        for (auto n : step.nodes) positions.push_back(kernel_of[n]);
        const Recipe recipe = analysis.recipes.recipe(step.issue_node);
        if (auto it = template_of.find(positions); it != template_of.end()) {
            Template& t = templates[it->second];
            if (t.instances.size() < kMaxInstances &&
                instance_keys[it->second].insert(recipe.instance_key()).second) {
                t.instances.push_back(recipe);
                t.predecessors.push_back(predecessor[s]);
                t.in_graph.push_back(after_graph_node[s]);
            }
            continue;
        }
        bool adds = false;
        for (auto k : positions) adds |= !covered.count(k);
        if (!adds) continue;
        Template t;
        t.instances.push_back(recipe);
        t.predecessors.push_back(predecessor[s]);
        t.in_graph.push_back(after_graph_node[s]);
        t.positions = positions;
        for (auto n : step.nodes)
            t.recorded_us.push_back(static_cast<double>(analysis.graph.activity(nodes[n]).dur) /
                                    1000.0);
        covered.insert(positions.begin(), positions.end());
        instance_keys[templates.size()].insert(recipe.instance_key());
        template_of.emplace(positions, templates.size());
        templates.push_back(std::move(t));
    }
    return templates;
}

}  // namespace detail
}  // namespace replay
