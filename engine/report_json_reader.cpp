// Reading report.json back (regress, compare): every value is checked against what
// schemas/report.schema.json allows, so that a broken report is an error naming the file, the
// field (a JSON pointer) and its byte offset instead of a comparison that quietly says "ok".
#include <simdjson.h>

#include <cmath>
#include <optional>
#include <set>
#include <unordered_map>

#include "replay/recipe_json.h"
#include "replay/report_json.h"
#include "replay/source.h"

namespace replay {
namespace {

namespace od = simdjson::ondemand;

constexpr std::string_view kSchemaPrefix = "replay.report/";
constexpr std::string_view kSchema = "replay.report/1";

using Number = NumberRange;

// Where the file ends inside an unclosed string, or with objects and arrays still open: the
// offset of that string's opening quote, or of the end; nullopt when the structure is complete.
std::optional<std::pair<std::uint64_t, std::string>> truncation(std::string_view text) {
    std::size_t depth = 0, string_start = 0;
    bool in_string = false, escaped = false;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (in_string) {
            if (escaped)
                escaped = false;
            else if (c == '\\')
                escaped = true;
            else if (c == '"')
                in_string = false;
        } else if (c == '"') {
            in_string = true;
            string_start = i;
        } else if (c == '{' || c == '[') {
            ++depth;
        } else if ((c == '}' || c == ']') && depth > 0) {
            --depth;
        }
    }
    if (in_string)
        return std::pair{static_cast<std::uint64_t>(text.size()),
                         "the file ends inside the string that starts at byte " +
                             std::to_string(string_start) + ": truncated?"};
    if (depth > 0)
        return std::pair{static_cast<std::uint64_t>(text.size()),
                         "the file ends with " + std::to_string(depth) +
                             " objects or arrays still open: truncated?"};
    return std::nullopt;
}

class ReportReader {
  public:
    ReportReader(const std::string& file, const simdjson::padded_string& text)
        : file_(file), text_(text) {}

    Report read() {
        if (text_.size() == 0) throw InputError(file_, 0, "empty file: not a replay report");
        od::parser parser;
        od::document doc;
        od::object root;
        simdjson::error_code e = parser.iterate(text_).get(doc);
        if (!e) e = doc.get_object().get(root);
        if (e == simdjson::INCORRECT_TYPE)
            throw InputError(file_, 0, "not a JSON object: expected a replay report (report.json)");
        if (e) {
            if (auto cut = truncation(std::string_view(text_.data(), text_.size())))
                throw InputError(file_, cut->first, "not complete JSON: " + cut->second);
            throw InputError(file_, 0,
                             std::string("not JSON (") + simdjson::error_message(e) + ")");
        }
        Report report;
        report.schema.clear();
        report.totals = {};
        members(root, 0, kRootRequired, [&](const std::string& key, od::value v) {
            if (key == "schema")
                read_schema(v, report);
            else if (key == "tool_version")
                report.tool_version = string(v);
            else if (key == "mode")
                report.mode = one_of(v, {"sequential", "unique"});
            else if (key == "backend")
                report.backend = string(v);
            else if (key == "environment")
                report.environment = string_map(v);
            else if (key == "inputs")
                report.inputs = string_map(v);
            else if (key == "options")
                report.options = string_map(v);
            else if (key == "notes")
                elements(v, [&](od::value x) { report.notes.push_back(string(x)); });
            else if (key == "totals")
                read_totals(v, report.totals);
            else if (key == "tiers")
                elements(v, [&](od::value x) { report.tiers.push_back(read_tier_row(x)); });
            else if (key == "kernels")
                elements(v, [&](od::value x) { report.kernels.push_back(read_kernel(x)); });
            else if (key == "energy")
                read_energy(v, report.energy);
            else if (key == "timeline")
                report.timeline = read_timeline(v);
        });
        if (report.energy.requested) finalize_energy(report);
        return report;
    }

  private:
    static inline const std::vector<std::string> kRootRequired = {
        "schema",  "tool_version", "mode",  "backend", "environment", "inputs",
        "options", "totals",       "tiers", "kernels", "notes"};

    // ---- where we are ----
    std::string pointer() const {
        std::string p;
        for (const auto& segment : path_) {
            p += '/';
            for (char c : segment) {  // RFC 6901 escapes
                if (c == '~')
                    p += "~0";
                else if (c == '/')
                    p += "~1";
                else
                    p += c;
            }
        }
        return p.empty() ? "/" : p;
    }
    std::uint64_t offset_of(od::value& v) const {
        const std::string_view token = v.raw_json_token();
        const auto at = static_cast<std::uint64_t>(token.data() - text_.data());
        return std::min<std::uint64_t>(at, text_.size());
    }
    [[noreturn]] void fail(std::uint64_t offset, const std::string& what) const {
        throw InputError(file_, offset, pointer() + ": " + what);
    }
    [[noreturn]] void fail(std::uint64_t offset, simdjson::error_code e,
                           const std::string& what) const {
        if (e == simdjson::INCOMPLETE_ARRAY_OR_OBJECT || e == simdjson::TAPE_ERROR)
            if (auto cut = truncation(std::string_view(text_.data(), text_.size())))
                throw InputError(file_, cut->first, pointer() + ": " + cut->second);
        fail(offset, what + " (" + simdjson::error_message(e) + ")");
    }
    struct Segment {
        ReportReader& reader;
        Segment(ReportReader& r, std::string segment) : reader(r) {
            reader.path_.push_back(std::move(segment));
        }
        ~Segment() { reader.path_.pop_back(); }
        Segment(const Segment&) = delete;
        Segment& operator=(const Segment&) = delete;
    };

    // ---- structure ----
    // Calls fn(key, value) for every member of an object (each under its own pointer segment),
    // then fails naming the first of `required` that was missing.
    template <typename F>
    void members(od::object& object, std::uint64_t at, const std::vector<std::string>& required,
                 F&& fn) {
        std::set<std::string> seen;
        for (auto f : object) {
            od::field field;
            if (auto e = std::move(f).get(field)) fail(at, e, "malformed member");
            std::string_view key_view;
            if (auto e = field.unescaped_key().get(key_view)) fail(at, e, "unreadable member name");
            const std::string key(key_view);  // the view may not outlive the next key
            Segment segment(*this, key);
            fn(key, field.value());
            seen.insert(key);
        }
        for (const auto& key : required)
            if (!seen.count(key)) fail(at, "no \"" + key + "\": every replay report has one");
    }
    template <typename F>
    void members(od::value v, const std::vector<std::string>& required, F&& fn) {
        const std::uint64_t at = offset_of(v);
        od::object object;
        if (auto e = v.get_object().get(object)) fail(at, e, "expected an object");
        members(object, at, required, std::forward<F>(fn));
    }
    template <typename F>
    void elements(od::value v, F&& fn) {
        const std::uint64_t at = offset_of(v);
        od::array array;
        if (auto e = v.get_array().get(array)) fail(at, e, "expected an array");
        std::size_t index = 0;
        for (auto element : array) {
            Segment segment(*this, std::to_string(index++));
            od::value x;
            if (auto e = std::move(element).get(x)) fail(at, e, "malformed element");
            fn(x);
        }
    }

    // ---- values ----
    std::string string(od::value v) {
        const std::uint64_t at = offset_of(v);
        std::string_view s;
        if (auto e = v.get_string().get(s)) fail(at, e, "expected a string");
        return std::string(s);
    }
    std::string one_of(od::value v, std::initializer_list<std::string_view> allowed) {
        const std::uint64_t at = offset_of(v);
        std::string s = string(v);
        for (auto a : allowed)
            if (s == a) return s;
        std::string list;
        for (auto a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
        fail(at, "\"" + s + "\" is not one of " + list);
    }
    bool boolean(od::value v) {
        const std::uint64_t at = offset_of(v);
        bool b = false;
        if (auto e = v.get_bool().get(b)) fail(at, e, "expected true or false");
        return b;
    }
    std::uint64_t count(od::value v) {
        const std::uint64_t at = offset_of(v);
        std::uint64_t u = 0;
        if (auto e = v.get_uint64().get(u)) fail(at, e, "expected a count (an integer >= 0)");
        return u;
    }
    double number(od::value v, Number kind) {
        const std::uint64_t at = offset_of(v);
        const bool nullable =
            kind == Number::Signed || kind == Number::NonNegative || kind == Number::ShareOrNull;
        bool is_null = false;
        if (auto e = v.is_null().get(is_null)) fail(at, e, "unreadable value");
        if (is_null) {
            if (nullable) return NAN;
            fail(at, "null where a number is required");
        }
        std::string text(v.raw_json_token());
        while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())))
            text.pop_back();
        double d = 0;
        if (auto e = v.get_double().get(d)) fail(at, e, "expected a number");
        if (!std::isfinite(d)) fail(at, text + " is not a finite number");
        const bool duration = kind == Number::Duration;
        const bool share = kind == Number::Share || kind == Number::ShareOrNull;
        if (kind != Number::Signed && d < 0)
            fail(at, text + " is negative: " +
                         (duration ? "a duration cannot be" : "this figure cannot be"));
        if (duration && d > kMaxDurationUs)
            fail(at, text + " us is beyond any replayed or recorded duration (at most " +
                         std::to_string(static_cast<long long>(kMaxDurationUs)) + " us)");
        if (share && d > 1.000001) fail(at, text + " is a share of the recorded time above 1");
        return d;
    }
    std::vector<std::pair<std::string, std::string>> string_map(od::value v) {
        std::vector<std::pair<std::string, std::string>> out;
        members(v, {},
                [&](const std::string& key, od::value x) { out.emplace_back(key, string(x)); });
        return out;
    }
    Tier tier(od::value v) {
        const std::uint64_t at = offset_of(v);
        bool is_null = false;
        if (auto e = v.is_null().get(is_null)) fail(at, e, "unreadable value");
        if (is_null) return Tier::NotReplayable;
        std::uint64_t t = 0;
        if (v.get_uint64().get(t) || t < 1 || t > 5)
            fail(at, "expected a tier: 1 to 5 (triton), or null when not replayable");
        return static_cast<Tier>(t);
    }

    // ---- the report's parts ----
    void read_schema(od::value v, Report& report) {
        const std::uint64_t at = offset_of(v);
        report.schema = string(v);
        if (!report.schema.starts_with(kSchemaPrefix))
            fail(at,
                 "\"" + report.schema + "\" is not a replay report (" + std::string(kSchema) + ")");
        if (report.schema != kSchema)
            fail(at,
                 "\"" + report.schema + "\": this build reads " + std::string(kSchema) + " only");
    }

    void read_totals(od::value v, ReportTotals& t) {
        static const auto required = [] {
            std::vector<std::string> names;
            for (const auto& f : totals_fields())
                if (f.required) names.emplace_back(f.name);
            return names;
        }();
        members(v, required, [&](const std::string& key, od::value x) {
            for (const auto& f : totals_fields())
                if (key == f.name) t.*f.member = number(x, f.range);
        });
    }

    TierResult read_tier_row(od::value v) {
        static const std::vector<std::pair<std::string, double TierResult::*>> sums = {
            {"recorded_us", &TierResult::recorded_us},
            {"replayed_us", &TierResult::replayed_us},
            {"replayed_recorded_us", &TierResult::replayed_recorded_us}};
        TierResult row;
        members(
            v,
            {"tier", "unique", "activities", "recorded_us", "replayed_us", "replayed_recorded_us"},
            [&](const std::string& key, od::value x) {
                if (key == "tier") row.tier = tier(x);
                if (key == "unique") row.unique = count(x);
                if (key == "activities") row.activities = count(x);
                for (const auto& [name, member] : sums)
                    if (key == name) row.*member = number(x, Number::Signed);
            });
        return row;
    }

    std::vector<ValueGroup> groups(od::value v) {
        std::vector<ValueGroup> out;
        elements(v, [&](od::value g) {
            ValueGroup group;
            members(g, {"median_us", "count"}, [&](const std::string& key, od::value x) {
                if (key == "median_us") group.median = number(x, Number::Duration);
                if (key == "count") group.count = count(x);
            });
            out.push_back(group);
        });
        return out;
    }

    DurationStats duration_stats(od::value v) {
        static const auto required = [] {
            std::vector<std::string> names = {"count"};
            for (const auto& f : duration_fields()) names.emplace_back(f.name);
            return names;
        }();
        DurationStats s;
        members(v, required, [&](const std::string& key, od::value x) {
            if (key == "count") s.count = count(x);
            for (const auto& f : duration_fields())
                if (key == f.name)
                    s.*f.member = number(x, key == "sum" ? Number::Sum : Number::Duration);
        });
        return s;
    }

    KernelResult read_kernel(od::value v) {
        static const std::vector<std::string> required = {
            "id",          "name",      "kind",           "tier",        "rule",
            "disposition", "reason",    "count",          "recorded_us", "replayed_us",
            "samples_us",  "error_pct", "replayed_names", "name_match",  "gflops_per_s",
            "gb_per_s"};
        struct Figure {
            const char* name;
            double KernelResult::*member;
            Number range;
        };
        static const Figure figures[] = {
            {"error_pct", &KernelResult::error_pct, Number::Signed},
            {"gflops_per_s", &KernelResult::gflops_per_s, Number::NonNegative},
            {"gb_per_s", &KernelResult::gb_per_s, Number::NonNegative},
            {"flops", &KernelResult::flops, Number::NonNegative},
            {"bytes", &KernelResult::bytes, Number::NonNegative},
            {"pct_peak_flops", &KernelResult::pct_peak_flops, Number::NonNegative},
            {"pct_peak_bandwidth", &KernelResult::pct_peak_bandwidth, Number::NonNegative}};
        KernelResult k;
        members(v, required, [&](const std::string& key, od::value x) {
            if (key == "id")
                read_id(x, k);
            else if (key == "name")
                k.name = string(x);
            else if (key == "kind")
                k.kind = one_of(x, {"kernel", "memcpy", "memset"});
            else if (key == "tier")
                k.tier = tier(x);
            else if (key == "rule")
                k.rule = string(x);
            else if (key == "disposition")
                k.outcome = outcome(x);
            else if (key == "reason")
                k.reason = string(x);
            else if (key == "count")
                k.count = count(x);
            else if (key == "recorded_us")
                k.recorded_us = duration_stats(x);
            else if (key == "replayed_us")
                k.replayed_us = duration_stats(x);
            else if (key == "samples_us")
                elements(x,
                         [&](od::value s) { k.samples_us.push_back(number(s, Number::Duration)); });
            else if (key == "recorded_groups")
                k.recorded_groups = groups(x);
            else if (key == "replayed_groups")
                k.replayed_groups = groups(x);
            else if (key == "replayed_names")
                elements(x, [&](od::value s) { k.replayed_names.push_back(string(s)); });
            else if (key == "name_match")
                k.name_match = boolean(x);
            else if (key == "replayed_grids")
                elements(x, [&](od::value g) {
                    std::array<std::int32_t, 3> grid{};
                    std::size_t i = 0;
                    elements(g, [&](od::value d) {
                        if (i < grid.size())
                            grid[i++] = static_cast<std::int32_t>(number(d, Number::NonNegative));
                    });
                    k.replayed_grids.push_back(grid);
                });
            else if (key == "flop_dtype")
                k.flop_dtype = dtype_from_name(string(x));
            else if (key == "energy")
                read_kernel_energy(x, k.energy);
            for (const auto& [name, member, range] : figures)
                if (key == name) k.*member = number(x, range);
        });
        if (k.count == 0) k.count = k.recorded_us.count;
        return k;
    }

    // What regress/compare and the recomputed figures need: the samples and the measured inputs;
    // the rest (statistics, power, EDP) is derived again by finalize_energy.
    void read_kernel_energy(od::value v, KernelEnergy& e) {
        members(v, {"samples_uj", "why"}, [&](const std::string& key, od::value x) {
            if (key == "samples_uj")
                elements(x,
                         [&](od::value s) { e.samples_uj.push_back(number(s, Number::Signed)); });
            else if (key == "dynamic_uj")
                e.dynamic_uj = number(x, Number::Signed);
            else if (key == "launches")
                e.launches = number(x, Number::NonNegative);
            else if (key == "flops")
                e.flops = number(x, Number::NonNegative);
            else if (key == "limited_windows")
                e.limited_windows = static_cast<int>(number(x, Number::NonNegative));
            else if (key == "limited_by")
                e.limited_by = string(x);
            else if (key == "loop_us")  // reports before 2026-11-25 lack these
                e.loop_us = number(x, Number::NonNegative);
            else if (key == "loop_power_w")
                e.loop_power_w = number(x, Number::NonNegative);
            else if (key == "sm_clock_mhz")
                e.sm_clock_mhz = number(x, Number::NonNegative);
            else if (key == "temperature_c")
                e.temperature_c = number(x, Number::Signed);
            else if (key == "why")
                e.why = string(x);
        });
    }

    void read_step_energy(od::value v, StepEnergy& s) {
        members(v, {"mj"}, [&](const std::string& key, od::value x) {
            if (key == "samples_mj")
                elements(x,
                         [&](od::value y) { s.samples_mj.push_back(number(y, Number::Signed)); });
            else if (key == "mj")
                s.mj = number(x, Number::Signed);
            else if (key == "step_us")
                s.step_us = number(x, Number::NonNegative);
            else if (key == "power_w")
                s.power_w = number(x, Number::NonNegative);
            else if (key == "idle_power_w")
                s.idle_power_w = number(x, Number::NonNegative);
            else if (key == "steps")
                s.steps = number(x, Number::NonNegative);
            else if (key == "warm_read_mj")  // reports before 2026-11-25 lack it
                s.warm_read_mj = number(x, Number::Signed);
            else if (key == "limited_windows")  // nor these
                s.limited_windows = static_cast<int>(number(x, Number::NonNegative));
            else if (key == "limited_by")
                s.limited_by = string(x);
            else if (key == "sm_clock_mhz")
                s.sm_clock_mhz = number(x, Number::NonNegative);
            else if (key == "temperature_c")
                s.temperature_c = number(x, Number::Signed);
            else if (key == "source")
                s.source = string(x);
            else if (key == "gpu")
                s.gpu = string(x);
        });
    }

    void read_energy(od::value v, ReportEnergy& e) {
        e.requested = true;
        members(v, {"available", "why"}, [&](const std::string& key, od::value x) {
            if (key == "available")
                e.probe.available = boolean(x);
            else if (key == "why")
                e.probe.why = string(x);
            else if (key == "method")
                e.probe.method = string(x);
            else if (key == "counter_period_ms")
                e.probe.counter_period_ms = number(x, Number::NonNegative);
            else if (key == "power_period_ms")
                e.probe.power_period_ms = number(x, Number::NonNegative);
            else if (key == "idle_power_w")
                e.probe.idle_power_w = number(x, Number::NonNegative);
            else if (key == "step")
                read_step_energy(x, e.step);
            else if (key == "model")
                read_step_energy(x, e.model);
            else if (key == "notes")
                elements(x, [&](od::value y) { e.notes.push_back(string(y)); });
        });
    }

    // Sequential mode's timeline (report_json.h lists its numbers).
    ReportTimeline read_timeline(od::value v) {
        ReportTimeline t;
        members(v, {"issue_path", "recorded", "iterations", "first_uses"},
                [&](const std::string& key, od::value x) {
                    if (key == "issue_path")
                        t.issue_path = string(x);
                    else if (key == "recorded")
                        t.recorded = read_figures(x, {}, [](const std::string&, od::value) {});
                    else if (key == "iterations")
                        elements(x, [&](od::value i) { t.iterations.push_back(read_iteration(i)); });
                    else if (key == "first_to_last_max_gap")
                        t.first_to_last_max_gap = number(x, Number::NonNegative);
                    else if (key == "first_uses")
                        elements(x, [&](od::value s) { t.first_uses.push_back(string(s)); });
                });
        return t;
    }

    // A figures object, whose other members (`more`, required too) go to `other`.
    template <typename Other>
    TimelineFigures read_figures(od::value v, const std::vector<std::string>& more,
                                 Other&& other) {
        std::vector<std::string> required = {"activities", "gaps"};
        for (const auto& f : timeline_figures_fields())
            if (f.required) required.emplace_back(f.name);
        required.insert(required.end(), more.begin(), more.end());
        TimelineFigures f;
        members(v, required, [&](const std::string& key, od::value x) {
            if (key == "activities") {
                f.activities = count(x);
                return;
            }
            if (key == "gaps") {
                f.gaps = count(x);
                return;
            }
            for (const auto& field : timeline_figures_fields())
                if (key == field.name) {
                    f.*field.member = number(x, Number::NonNegative);
                    return;
                }
            other(key, x);
        });
        return f;
    }

    IterationResult read_iteration(od::value v) {
        std::vector<std::string> more = {"iteration", "unattributed"};
        for (const auto& f : iteration_fields())
            if (f.required) more.emplace_back(f.name);
        IterationResult r;
        r.replayed = read_figures(v, more, [&](const std::string& key, od::value x) {
            if (key == "iteration") {
                const std::uint64_t at = offset_of(x);
                const std::uint64_t n = count(x);
                if (n < 1 || n > 1000000) fail(at, "an iteration is numbered from 1");
                r.iteration = static_cast<int>(n);
            } else if (key == "unattributed") {
                r.unattributed = count(x);
            }
            for (const auto& field : iteration_fields())
                if (key == field.name) r.*field.member = number(x, Number::NonNegative);
        });
        return r;
    }

    void read_id(od::value v, KernelResult& k) {
        const std::uint64_t at = offset_of(v);
        k.id = string(v);
        if (k.id.empty()) fail(at, "an empty kernel id");
        const auto [it, inserted] = ids_.emplace(k.id, pointer());
        if (!inserted)
            fail(at, "\"" + k.id + "\" is also " + it->second +
                         ": kernel ids must be unique (comparisons match kernels by id)");
    }

    KernelOutcome outcome(od::value v) {
        const std::uint64_t at = offset_of(v);
        const std::string s = string(v);
        const auto o = kernel_outcome_from_string(s);
        if (!o || *o == KernelOutcome::Pending || *o == KernelOutcome::Recorded)
            fail(at, "\"" + s +
                         "\" is not one of replayed, issued_with_op, skipped, failed, "
                         "not_replayable");
        return *o;
    }

    const std::string& file_;
    const simdjson::padded_string& text_;
    std::vector<std::string> path_;
    std::unordered_map<std::string, std::string> ids_;  // kernel id -> pointer of its first use
};

}  // namespace

Report read_report_json(const std::string& path) {
    const simdjson::padded_string text(read_all(path));
    return ReportReader(path, text).read();
}

}  // namespace replay
