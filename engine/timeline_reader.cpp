// Reading replay_trace.json back for the HTML report: the GPU activities of the recorded profiler
// step and of the last replayed iteration, on each side's own clock.
#include <simdjson.h>

#include <algorithm>

#include "replay/source.h"
#include "replay/timeline.h"

namespace replay {
namespace {

namespace dom = simdjson::dom;

// A member that is missing (an arg that only some events carry) gives the fallback.
double number_or(simdjson::simdjson_result<dom::element> member, double fallback) {
    dom::element e;
    if (member.get(e) != simdjson::SUCCESS) return fallback;
    double d = 0;
    if (e.get_double().get(d) == simdjson::SUCCESS) return d;
    std::int64_t i = 0;
    if (e.get_int64().get(i) == simdjson::SUCCESS) return static_cast<double>(i);
    return fallback;
}

std::string text_or(simdjson::simdjson_result<dom::element> member,
                    const std::string& fallback = {}) {
    std::string_view s;
    return member.get_string().get(s) == simdjson::SUCCESS ? std::string(s) : fallback;
}

Tier tier_from_text(const std::string& t) {
    if (t.size() == 1 && t[0] >= '1' && t[0] <= '4') return static_cast<Tier>(t[0] - '0');
    return Tier::NotReplayable;
}

const char* kind_of(std::string_view category) {
    if (category == "gpu_memcpy") return "memcpy";
    if (category == "gpu_memset") return "memset";
    if (category == "kernel") return "kernel";
    return nullptr;
}

}  // namespace

Timeline read_replay_trace(const std::string& path, std::size_t max_items_per_side) {
    const simdjson::padded_string text(read_all(path));
    dom::parser parser;
    dom::element root;
    if (auto error = parser.parse(text).get(root))
        throw InputError(path, 0,
                         std::string("not a replay_trace.json: ") + simdjson::error_message(error));
    dom::array events;
    if (root["traceEvents"].get_array().get(events) != simdjson::SUCCESS)
        throw InputError(path, 0, "not a replay_trace.json: no \"traceEvents\" array");
    Timeline t;
    double offset = 0, recorded_offset = 0;
    int iteration = 0;  // the replayed iteration drawn; 0: any (a trace of one)
    dom::element replay;
    if (root["replay"].get(replay) == simdjson::SUCCESS) {
        offset = number_or(replay["replayed_offset_us"], 0);
        iteration = static_cast<int>(number_or(replay["replayed_iteration"], 0));
        recorded_offset = number_or(replay["recorded_offset_us"], 0);
        t.trace = text_or(replay["trace"]);
        dom::object environment;
        if (replay["environment"].get_object().get(environment) == simdjson::SUCCESS)
            for (auto [key, value] : environment)
                t.environment.emplace_back(std::string(key), text_or(dom::element(value)));
    }
    for (dom::element e : events) {
        std::string_view ph, cat;
        if (e["ph"].get_string().get(ph) != simdjson::SUCCESS || ph != "X") continue;
        if (e["cat"].get_string().get(cat) != simdjson::SUCCESS) continue;
        const char* kind = kind_of(cat);
        if (kind == nullptr) continue;
        Timeline::Item item;
        item.kind = kind;
        item.name = text_or(e["name"]);
        item.device = static_cast<std::int64_t>(number_or(e["pid"], 0));
        item.stream = static_cast<std::int64_t>(number_or(e["tid"], 0));
        item.start_us = number_or(e["ts"], 0);
        item.dur_us = number_or(e["dur"], 0);
        dom::element args;
        if (e["args"].get(args) == simdjson::SUCCESS) {
            item.replayed = text_or(args["side"]) == "replayed";
            item.iteration = static_cast<int>(number_or(args["iteration"], 0));
            if (item.replayed && iteration > 0 && item.iteration != iteration) continue;
            item.kernel_id = text_or(args["kernel_id"]);
            item.tier = tier_from_text(text_or(args["tier"]));
            item.stream = static_cast<std::int64_t>(
                number_or(args["stream"], static_cast<double>(item.stream)));
            if (item.replayed) item.recorded_dur_us = number_or(args["recorded_dur_us"], NAN);
        }
        item.start_us -= item.replayed ? offset : recorded_offset;
        t.items.push_back(std::move(item));
    }
    // The first items of each side, in start order.
    std::stable_sort(t.items.begin(), t.items.end(), [](const auto& a, const auto& b) {
        return a.replayed != b.replayed ? !a.replayed : a.start_us < b.start_us;
    });
    const auto first_replayed = std::find_if(t.items.begin(), t.items.end(),
                                             [](const auto& i) { return i.replayed; });
    const auto recorded = static_cast<std::size_t>(first_replayed - t.items.begin());
    const std::size_t replayed = t.items.size() - recorded;
    if (replayed > max_items_per_side)
        t.items.erase(first_replayed + static_cast<std::ptrdiff_t>(max_items_per_side),
                      t.items.end());
    if (recorded > max_items_per_side)
        t.items.erase(t.items.begin() + static_cast<std::ptrdiff_t>(max_items_per_side),
                      t.items.begin() + static_cast<std::ptrdiff_t>(recorded));
    return t;
}

}  // namespace replay
