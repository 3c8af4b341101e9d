// timing.json (examples/capture_trace.py, schemas/timing.schema.json): the unprofiled step of the
// captured model, its GPU time and, when NVML could be read, its energy per step.
#include <simdjson.h>

#include <algorithm>
#include <filesystem>
#include <map>

#include "replay/report_energy.h"
#include "replay/source.h"

namespace replay {
namespace {

namespace od = simdjson::ondemand;

// The numbers read, each with the offset of its value.
struct Numbers {
    std::map<std::string, std::pair<double, std::uint64_t>> values;
    bool has(const std::string& key) const { return values.count(key) > 0; }
    double at(const std::string& key) const { return values.at(key).first; }
};

Numbers read_numbers(const std::string& path, const simdjson::padded_string& text, std::string& gpu,
                     std::string& energy_note) {
    auto fail = [&](std::uint64_t offset, const std::string& what) -> void {
        throw InputError(path, offset, what);
    };
    od::parser parser;
    od::document doc;
    od::object root;
    if (parser.iterate(text).get(doc) || doc.get_object().get(root))
        fail(0, "not a JSON object: expected the timing.json of examples/capture_trace.py");
    Numbers numbers;
    for (auto member : root) {
        od::field field;
        std::string_view key_view;
        if (std::move(member).get(field) || field.unescaped_key().get(key_view))
            fail(0, "malformed JSON");
        const std::string key(key_view);
        od::value value = field.value();
        const std::string_view token = value.raw_json_token();
        const auto offset = static_cast<std::uint64_t>(token.data() - text.data());
        if (key == "gpu" || key == "energy_note") {
            std::string_view s;
            if (value.get_string().get(s)) fail(offset, "/" + key + ": expected a string");
            (key == "gpu" ? gpu : energy_note) = std::string(s);
            continue;
        }
        static const char* const kNumbers[] = {"median_us",       "energy_mj_per_step",
                                               "energy_steps",    "energy_window_s",
                                               "average_power_w", "idle_power_w"};
        if (std::find(std::begin(kNumbers), std::end(kNumbers), key) == std::end(kNumbers))
            continue;  // the capture's other facts (model, dtype, torch, ...)
        double d = 0;
        if (value.get_double().get(d)) fail(offset, "/" + key + ": expected a number");
        if (!std::isfinite(d) || d < 0)
            fail(offset, "/" + key + ": " + std::string(token) + " is not a finite number >= 0");
        numbers.values[key] = {d, offset};
    }
    return numbers;
}

}  // namespace

ModelTiming read_model_timing(const std::string& path) {
    const simdjson::padded_string text(read_all(path));
    std::string gpu, note;
    const Numbers n = read_numbers(path, text, gpu, note);
    ModelTiming t;
    if (n.has("median_us")) t.median_us = n.at("median_us");
    t.energy.source = path;
    t.energy.gpu = gpu;
    static const char* const kEnergy[] = {"energy_mj_per_step", "energy_steps", "energy_window_s",
                                          "average_power_w", "idle_power_w"};
    std::string missing;
    for (const char* key : kEnergy)
        if (!n.has(key)) missing += std::string(missing.empty() ? "" : ", ") + key;
    if (!missing.empty()) {
        if (note.empty())
            throw InputError(
                path, 0,
                "no " + missing + " and no energy_note: not a timing.json of capture_trace.py?");
        t.why_no_energy = note;
        return t;
    }
    const double steps = n.at("energy_steps");
    if (!(steps >= 1))
        throw InputError(path, n.values.at("energy_steps").second,
                         "/energy_steps: energy over no step");
    t.energy.mj = n.at("energy_mj_per_step");
    t.energy.steps = steps;
    t.energy.step_us = n.at("energy_window_s") * 1e6 / steps;
    t.energy.power_w = n.at("average_power_w");
    t.energy.idle_power_w = n.at("idle_power_w");
    return t;
}

std::optional<std::string> timing_file_beside(const std::string& trace) {
    std::filesystem::path p(trace);
    std::string stem = p.filename().string();
    for (const char* suffix : {".gz", ".zst", ".json"})
        if (stem.size() > std::string(suffix).size() && stem.ends_with(suffix))
            stem.resize(stem.size() - std::string(suffix).size());
    const auto candidate = p.parent_path() / (stem + ".timing.json");
    std::error_code ec;
    if (std::filesystem::is_regular_file(candidate, ec)) return candidate.string();
    return std::nullopt;
}

}  // namespace replay
