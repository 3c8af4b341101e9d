#include "plan.h"

#include <map>
#include <set>
#include <string>
#include <unordered_map>

namespace replay {

std::vector<Step> plan_steps(const KernelGraph& graph, const std::vector<Recipe>& recipes) {
    std::vector<Step> steps;
    std::unordered_map<std::uint32_t, std::size_t> last_step_of_op;  // op instance -> step
    std::unordered_map<std::uint32_t, std::size_t> last_step_of_stream;  // stream slot -> step
    const auto& nodes = graph.nodes();
    for (std::uint32_t n = 0; n < nodes.size(); ++n) {
        const Recipe& r = recipes[n];
        if (!r.replayable() || r.tier == Tier::Collective) continue;
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
        if (r.issued_with_op || (same_op && r.tier == Tier::AtenOp &&
                                 recipes[steps[previous->second].issue_node].key() == r.key())) {
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

std::vector<Template> plan_unique(const Analysis& analysis,
                                  const std::vector<std::size_t>& kernel_of) {
    const auto& nodes = analysis.graph.nodes();
    std::vector<Template> templates;
    std::map<std::vector<std::size_t>, std::size_t> template_of;
    std::map<std::size_t, std::set<std::string>> instance_keys;
    std::set<std::size_t> covered;
    const std::vector<Step> steps = plan_steps(analysis.graph, analysis.recipes);
    std::map<int, std::size_t> last_on_stream;  // stream -> previous step index
    std::vector<std::optional<Recipe>> predecessor(steps.size());
    for (std::size_t s = 0; s < steps.size(); ++s) {
        if (auto it = last_on_stream.find(steps[s].stream); it != last_on_stream.end())
            predecessor[s] = analysis.recipes[steps[it->second].issue_node];
        last_on_stream[steps[s].stream] = s;
    }
    for (std::size_t s = 0; s < steps.size(); ++s) {
        const Step& step = steps[s];
        std::vector<std::size_t> positions;
        for (auto n : step.nodes) positions.push_back(kernel_of[n]);
        const Recipe& recipe = analysis.recipes[step.issue_node];
        if (auto it = template_of.find(positions); it != template_of.end()) {
            Template& t = templates[it->second];
            if (t.instances.size() < kMaxInstances &&
                instance_keys[it->second].insert(recipe.instance_key()).second) {
                t.instances.push_back(recipe);
                t.predecessors.push_back(predecessor[s]);
            }
            continue;
        }
        bool adds = false;
        for (auto k : positions) adds |= !covered.count(k);
        if (!adds) continue;
        Template t;
        t.instances.push_back(recipe);
        t.predecessors.push_back(predecessor[s]);
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
