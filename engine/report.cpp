#include "replay/report.h"

#include <simdjson.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <ostream>

#include "replay/input_error.h"
#include "replay/json_writer.h"
#include "replay/recipe_json.h"
#include "replay/source.h"  // read_all

namespace replay {
namespace {

namespace od = simdjson::ondemand;

void write_tier(JsonWriter& json, Tier tier) {
    if (tier == Tier::NotReplayable)
        json.key("tier").null();
    else
        json.field("tier", static_cast<int>(tier));
}

void write_pairs(JsonWriter& json, std::string_view name,
                 const std::vector<std::pair<std::string, std::string>>& pairs) {
    json.key(name).begin_object();
    for (const auto& [k, v] : pairs) json.field(k, v);
    json.end_object();
}

bool replayed(const KernelResult& k) {
    return k.replayed_us.count > 0;
}

double median_of(std::vector<double> v) {
    if (v.empty()) return NAN;
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Median of a multiset given as (value, multiplicity) pairs, without expanding it.
double median_of_counted(std::vector<std::pair<double, std::int64_t>> v) {
    std::erase_if(v, [](const auto& p) { return p.second <= 0; });
    if (v.empty()) return NAN;
    std::sort(v.begin(), v.end());
    std::int64_t n = 0;
    for (const auto& p : v) n += p.second;
    auto at_rank = [&](std::int64_t rank) {
        for (const auto& [value, count] : v) {
            if (rank < count) return value;
            rank -= count;
        }
        return v.back().first;
    };
    return 0.5 * (at_rank((n - 1) / 2) + at_rank(n / 2));
}

// ---- reading ----------------------------------------------------------------------------------

struct Reader {
    const std::string& file;
    const std::string& text;
    od::document& doc;

    std::uint64_t offset_of(const char* at) const {
        if (at == nullptr || at < text.data()) return 0;
        return std::min<std::uint64_t>(static_cast<std::uint64_t>(at - text.data()), text.size());
    }
    std::uint64_t here() {
        const char* at = nullptr;
        if (doc.current_location().get(at)) return text.size();  // past the end: truncated input
        return offset_of(at);
    }
    [[noreturn]] void fail(const std::string& what) { throw InputError(file, here(), what); }
    [[noreturn]] void fail(simdjson::error_code e, const std::string& what) {
        throw InputError(file, here(), what + " (" + simdjson::error_message(e) + ")");
    }

    // Calls fn(key, value) for every member of an object; throws for malformed JSON.
    template <typename F>
    void each_field(od::value v, const char* what, F&& fn) {
        od::object o;
        if (auto e = v.get_object().get(o)) fail(e, std::string("expected an object for ") + what);
        for (auto f : o) {
            od::field field;
            if (auto e = std::move(f).get(field))
                fail(e, std::string("malformed member in ") + what);
            std::string_view key;
            if (auto e = field.unescaped_key().get(key))
                fail(e, std::string("unreadable member name in ") + what);
            const std::string k(key);  // the view may not outlive the next key
            fn(k, field.value());
        }
    }
    template <typename F>
    void each_element(od::value v, const char* what, F&& fn) {
        od::array a;
        if (auto e = v.get_array().get(a)) fail(e, std::string("expected an array for ") + what);
        for (auto el : a) {
            od::value x;
            if (auto e = std::move(el).get(x)) fail(e, std::string("malformed element in ") + what);
            fn(x);
        }
    }

    // Numbers: null (a NaN when written) reads back as NaN; anything else that is not a number too.
    double num(od::value v) {
        od::json_type t;
        if (auto e = v.type().get(t)) fail(e, "unreadable value");
        if (t != od::json_type::number) return NAN;
        double d = NAN;
        if (auto e = v.get_double().get(d)) fail(e, "malformed number");
        return d;
    }
    std::uint64_t count(od::value v) {
        std::uint64_t u = 0;
        if (!v.get_uint64().get(u)) return u;
        const double d = num(v);
        return std::isfinite(d) && d > 0 ? static_cast<std::uint64_t>(d) : 0;
    }
    std::string str(od::value v) {
        od::json_type t;
        if (auto e = v.type().get(t)) fail(e, "unreadable value");
        if (t == od::json_type::null) return {};
        if (t == od::json_type::number) {  // tolerate "warmup": 5 in a {k: v} map
            std::string_view raw = v.raw_json_token();
            while (!raw.empty() && (raw.back() == ' ' || raw.back() == '\n' || raw.back() == '\r' ||
                                    raw.back() == '\t'))
                raw.remove_suffix(1);
            return std::string(raw);
        }
        if (t == od::json_type::boolean) {
            bool b = false;
            if (!v.get_bool().get(b)) return b ? "true" : "false";
        }
        std::string_view s;
        if (auto e = v.get_string().get(s)) fail(e, "expected a string");
        return std::string(s);
    }
    bool boolean(od::value v) {
        bool b = false;
        if (!v.get_bool().get(b)) return b;
        return false;
    }
    Tier tier(od::value v) {
        const double d = num(v);
        if (!std::isfinite(d)) return Tier::NotReplayable;
        const int t = static_cast<int>(d);
        return t >= 1 && t <= 4 ? static_cast<Tier>(t) : Tier::NotReplayable;
    }
    std::vector<std::pair<std::string, std::string>> pairs(od::value v, const char* what) {
        std::vector<std::pair<std::string, std::string>> out;
        each_field(v, what,
                   [&](const std::string& k, od::value x) { out.emplace_back(k, str(x)); });
        return out;
    }
    std::vector<std::string> strings(od::value v, const char* what) {
        std::vector<std::string> out;
        each_element(v, what, [&](od::value x) { out.push_back(str(x)); });
        return out;
    }
    std::vector<double> numbers(od::value v, const char* what) {
        std::vector<double> out;
        each_element(v, what, [&](od::value x) { out.push_back(num(x)); });
        return out;
    }
    DurationStats stats(od::value v, const char* what) {
        DurationStats s;
        each_field(v, what, [&](const std::string& k, od::value x) {
            if (k == "count")
                s.count = static_cast<std::size_t>(count(x));
            else if (k == "min")
                s.min = num(x);
            else if (k == "median")
                s.median = num(x);
            else if (k == "mean")
                s.mean = num(x);
            else if (k == "max")
                s.max = num(x);
            else if (k == "sum")
                s.sum = num(x);
            else if (k == "stddev")
                s.stddev = num(x);
            else if (k == "p95")
                s.p95 = num(x);
            else if (k == "p99")
                s.p99 = num(x);
        });
        return s;
    }
};

// CSV: numbers in shortest round-trip form, NaN as an empty cell; text quoted when it needs it.
void csv_text(std::ostream& out, std::string_view text) {
    if (text.find_first_of(",\"\r\n") == std::string_view::npos) {
        out << text;
        return;
    }
    out << '"';
    for (char c : text) {
        if (c == '"') out << '"';
        out << c;
    }
    out << '"';
}

void csv_num(std::ostream& out, double x) {
    if (!std::isfinite(x)) return;
    char buf[32];
    auto [ptr, ec] = std::to_chars(buf, buf + sizeof buf, x);
    out.write(buf, ptr - buf);
}

}  // namespace

const char* tier_label(Tier tier) {
    switch (tier) {
        case Tier::NotReplayable:
            return "not replayable";
        case Tier::Copy:
            return "copy/memset";
        case Tier::Gemm:
            return "gemm";
        case Tier::AtenOp:
            return "dispatcher op";
        case Tier::Collective:
            return "collective";
    }
    return "?";
}

KernelResult recorded_result(const UniqueKernel& k) {
    KernelResult r;
    r.id = k.id;
    r.name = k.name;
    r.kind = to_string(k.kind);
    r.tier = k.recipe.tier;
    r.rule = k.recipe.rule;
    r.count = k.recorded_us.count;
    r.recorded_us = k.recorded_us;
    r.reason = k.recipe.reason;
    return r;
}

std::string Report::input(const std::string& key) const {
    for (const auto& [k, v] : inputs)
        if (k == key) return v;
    return {};
}

std::string Report::env(const std::string& key) const {
    for (const auto& [k, v] : environment)
        if (k == key) return v;
    return {};
}

void write_report_json(std::ostream& out, const Report& r) {
    JsonWriter json(out);
    json.begin_object();
    json.field("schema", r.schema).field("tool_version", r.tool_version);
    json.field("mode", r.mode).field("backend", r.backend);
    write_pairs(json, "environment", r.environment);
    write_pairs(json, "inputs", r.inputs);
    write_pairs(json, "options", r.options);

    const ReportTotals& t = r.totals;
    json.key("totals").begin_object();
    json.field("recorded_kernel_us", t.recorded_kernel_us);
    json.field("recipe_coverage", t.recipe_coverage);
    json.field("replayed_coverage", t.replayed_coverage);
    json.field("replayed_kernel_us", t.replayed_kernel_us);
    json.field("replayed_recorded_us", t.replayed_recorded_us);
    json.field("total_error_pct", t.total_error_pct);
    json.field("median_abs_error_pct", t.median_abs_error_pct);
    json.field("median_abs_error_pct_per_launch", t.median_abs_error_pct_per_launch);
    json.field("gemm_name_match", t.gemm_name_match);
    json.field("predicted_total_us", t.predicted_total_us);
    json.field("sequential_kernel_us", t.sequential_kernel_us);
    json.field("wall_seconds", t.wall_seconds);
    json.end_object();

    json.key("tiers").begin_array();
    for (const auto& tr : r.tiers) {
        json.begin_object();
        write_tier(json, tr.tier);
        json.field("label", tier_label(tr.tier));
        json.field("unique", static_cast<std::uint64_t>(tr.unique));
        json.field("activities", static_cast<std::uint64_t>(tr.activities));
        json.field("recorded_us", tr.recorded_us).field("replayed_us", tr.replayed_us);
        json.field("replayed_recorded_us", tr.replayed_recorded_us);
        json.end_object();
    }
    json.end_array();

    json.key("kernels").begin_array();
    for (const auto& k : r.kernels) {
        json.begin_object();
        json.field("id", k.id).field("name", k.name).field("kind", k.kind);
        write_tier(json, k.tier);
        json.field("rule", k.rule).field("disposition", k.disposition).field("reason", k.reason);
        json.field("count", static_cast<std::uint64_t>(k.count));
        json.key("recorded_us");
        write_duration_stats(json, k.recorded_us);
        json.key("replayed_us");
        write_duration_stats(json, k.replayed_us);
        json.key("samples_us").begin_array();
        for (double x : k.samples_us) json.value(x);
        json.end_array();
        json.field("error_pct", k.error_pct);
        json.array("replayed_names", k.replayed_names);
        json.field("name_match", k.name_match);
        json.field("gflops_per_s", k.gflops_per_s).field("gb_per_s", k.gb_per_s);
        json.end_object();
    }
    json.end_array();
    json.array("notes", r.notes);
    json.end_object();
    out << '\n';
}

Report read_report_json(const std::string& path) {
    const std::string text = read_all(path);
    simdjson::padded_string padded(text);
    od::parser parser;
    od::document doc;
    if (auto e = parser.iterate(padded).get(doc))
        throw InputError(path, 0, std::string("not JSON (") + simdjson::error_message(e) + ")");
    Reader rd{path, text, doc};
    Report report;
    report.schema.clear();
    od::object root;
    if (auto e = doc.get_object().get(root)) {
        if (e == simdjson::INCORRECT_TYPE)
            throw InputError(path, 0, "not a JSON object: expected a replay report (report.json)");
        throw InputError(path, 0, std::string("not JSON (") + simdjson::error_message(e) + ")");
    }
    bool has_kernels = false;
    for (auto f : root) {
        od::field field;
        if (auto e = std::move(f).get(field)) rd.fail(e, "malformed report");
        std::string_view key_view;
        if (auto e = field.unescaped_key().get(key_view)) rd.fail(e, "unreadable member name");
        const std::string key(key_view);
        od::value v = field.value();
        if (key == "schema") {
            report.schema = rd.str(v);
            if (report.schema.rfind("replay.report/", 0) != 0)
                throw InputError(
                    path, 0,
                    "schema is \"" + report.schema + "\", not a replay report (replay.report/1)");
        } else if (key == "tool_version")
            report.tool_version = rd.str(v);
        else if (key == "mode")
            report.mode = rd.str(v);
        else if (key == "backend")
            report.backend = rd.str(v);
        else if (key == "environment")
            report.environment = rd.pairs(v, "\"environment\"");
        else if (key == "inputs")
            report.inputs = rd.pairs(v, "\"inputs\"");
        else if (key == "options")
            report.options = rd.pairs(v, "\"options\"");
        else if (key == "notes")
            report.notes = rd.strings(v, "\"notes\"");
        else if (key == "totals") {
            ReportTotals& t = report.totals;
            rd.each_field(v, "\"totals\"", [&](const std::string& k, od::value x) {
                const double d = rd.num(x);
                if (k == "recorded_kernel_us")
                    t.recorded_kernel_us = std::isfinite(d) ? d : 0;
                else if (k == "recipe_coverage")
                    t.recipe_coverage = std::isfinite(d) ? d : 0;
                else if (k == "replayed_coverage")
                    t.replayed_coverage = std::isfinite(d) ? d : 0;
                else if (k == "replayed_kernel_us")
                    t.replayed_kernel_us = std::isfinite(d) ? d : 0;
                else if (k == "replayed_recorded_us")
                    t.replayed_recorded_us = std::isfinite(d) ? d : 0;
                else if (k == "total_error_pct")
                    t.total_error_pct = d;
                else if (k == "median_abs_error_pct")
                    t.median_abs_error_pct = d;
                else if (k == "median_abs_error_pct_per_launch")
                    t.median_abs_error_pct_per_launch = d;
                else if (k == "gemm_name_match")
                    t.gemm_name_match = d;
                else if (k == "predicted_total_us")
                    t.predicted_total_us = d;
                else if (k == "sequential_kernel_us")
                    t.sequential_kernel_us = d;
                else if (k == "wall_seconds")
                    t.wall_seconds = std::isfinite(d) ? d : 0;
            });
        } else if (key == "tiers") {
            rd.each_element(v, "\"tiers\"", [&](od::value e) {
                TierResult tr;
                rd.each_field(e, "a tier row", [&](const std::string& k, od::value x) {
                    if (k == "tier")
                        tr.tier = rd.tier(x);
                    else if (k == "unique")
                        tr.unique = static_cast<std::size_t>(rd.count(x));
                    else if (k == "activities")
                        tr.activities = static_cast<std::size_t>(rd.count(x));
                    else if (k == "recorded_us")
                        tr.recorded_us = rd.num(x);
                    else if (k == "replayed_us")
                        tr.replayed_us = rd.num(x);
                    else if (k == "replayed_recorded_us")
                        tr.replayed_recorded_us = rd.num(x);
                });
                report.tiers.push_back(tr);
            });
        } else if (key == "kernels") {
            has_kernels = true;
            rd.each_element(v, "\"kernels\"", [&](od::value e) {
                KernelResult k;
                const std::uint64_t at = rd.here();
                rd.each_field(e, "a kernel entry", [&](const std::string& kk, od::value x) {
                    if (kk == "id")
                        k.id = rd.str(x);
                    else if (kk == "name")
                        k.name = rd.str(x);
                    else if (kk == "kind")
                        k.kind = rd.str(x);
                    else if (kk == "tier")
                        k.tier = rd.tier(x);
                    else if (kk == "rule")
                        k.rule = rd.str(x);
                    else if (kk == "disposition")
                        k.disposition = rd.str(x);
                    else if (kk == "reason")
                        k.reason = rd.str(x);
                    else if (kk == "count")
                        k.count = static_cast<std::size_t>(rd.count(x));
                    else if (kk == "recorded_us")
                        k.recorded_us = rd.stats(x, "\"recorded_us\"");
                    else if (kk == "replayed_us")
                        k.replayed_us = rd.stats(x, "\"replayed_us\"");
                    else if (kk == "samples_us")
                        k.samples_us = rd.numbers(x, "\"samples_us\"");
                    else if (kk == "error_pct")
                        k.error_pct = rd.num(x);
                    else if (kk == "replayed_names")
                        k.replayed_names = rd.strings(x, "\"replayed_names\"");
                    else if (kk == "name_match")
                        k.name_match = rd.boolean(x);
                    else if (kk == "gflops_per_s")
                        k.gflops_per_s = rd.num(x);
                    else if (kk == "gb_per_s")
                        k.gb_per_s = rd.num(x);
                });
                if (k.id.empty()) throw InputError(path, at, "a kernel entry has no \"id\"");
                if (k.count == 0) k.count = k.recorded_us.count;
                report.kernels.push_back(std::move(k));
            });
        }
    }
    if (!has_kernels) throw InputError(path, 0, "no \"kernels\" array: not a replay report");
    if (report.schema.empty()) report.schema = "replay.report/1";
    return report;
}

void write_kernels_csv(std::ostream& out, const Report& r) {
    out << "id,name,kind,tier,rule,disposition,count,recorded_median_us,recorded_sum_us,replayed_"
           "median_us,"
           "replayed_min_us,replayed_mean_us,replayed_stddev_us,replayed_p95_us,replayed_p99_us,"
           "error_pct,"
           "name_match,gflops_per_s,gb_per_s,reason\n";
    for (const auto& k : r.kernels) {
        const bool done = replayed(k);
        csv_text(out, k.id);
        out << ',';
        csv_text(out, k.name);
        out << ',';
        csv_text(out, k.kind);
        out << ',';
        if (k.tier != Tier::NotReplayable) out << static_cast<int>(k.tier);
        out << ',';
        csv_text(out, k.rule);
        out << ',';
        csv_text(out, k.disposition);
        out << ',' << k.count << ',';
        csv_num(out, k.recorded_us.median);
        out << ',';
        csv_num(out, k.recorded_us.sum);
        for (double x : {k.replayed_us.median, k.replayed_us.min, k.replayed_us.mean,
                         k.replayed_us.stddev, k.replayed_us.p95, k.replayed_us.p99}) {
            out << ',';
            if (done) csv_num(out, x);
        }
        out << ',';
        csv_num(out, k.error_pct);
        out << ',';
        if (done || !k.replayed_names.empty()) out << (k.name_match ? "true" : "false");
        out << ',';
        csv_num(out, k.gflops_per_s);
        out << ',';
        csv_num(out, k.gb_per_s);
        out << ',';
        csv_text(out, k.reason);
        out << '\n';
    }
}

void finalize_report(Report& r) {
    // Per kernel: statistics of the replayed samples and the error against the recording.
    // name_match is the driver's (only per-kernel timing such as CUPTI knows the names that really
    // ran).
    for (auto& k : r.kernels) {
        if (!k.samples_us.empty()) k.replayed_us = summarize(k.samples_us);
        if (k.count == 0) k.count = k.recorded_us.count;
        k.error_pct =
            replayed(k) && k.recorded_us.median > 0
                ? (k.replayed_us.median - k.recorded_us.median) / k.recorded_us.median * 100.0
                : NAN;
    }

    // Tier rows, tiers 0..4 in order, only those present.
    std::vector<TierResult> tiers(5);
    for (std::size_t i = 0; i < tiers.size(); ++i) tiers[i].tier = static_cast<Tier>(i);
    for (const auto& k : r.kernels) {
        auto& t = tiers[static_cast<std::size_t>(k.tier) % tiers.size()];
        ++t.unique;
        t.activities += k.count;
        t.recorded_us += k.recorded_us.sum;
        if (replayed(k)) {
            t.replayed_us += k.replayed_us.mean * static_cast<double>(k.count);
            t.replayed_recorded_us += k.recorded_us.sum;
        }
    }
    r.tiers.clear();
    for (const auto& t : tiers)
        if (t.unique > 0) r.tiers.push_back(t);

    // Totals.
    ReportTotals& t = r.totals;
    if (!(t.recorded_kernel_us > 0)) {
        t.recorded_kernel_us = 0;
        for (const auto& k : r.kernels)
            if (k.kind == "kernel") t.recorded_kernel_us += k.recorded_us.sum;
    }
    double covered = 0;
    double replayed_total = 0, recorded_total = 0;
    double gemm_all = 0, gemm_matched = 0;
    double predicted = 0;
    std::vector<double> abs_errors;
    std::vector<std::pair<double, std::int64_t>> abs_errors_per_launch;
    for (const auto& k : r.kernels) {
        if (!replayed(k)) continue;
        const double n = static_cast<double>(k.count);
        replayed_total += k.replayed_us.mean * n;
        recorded_total += k.recorded_us.sum;
        predicted += k.replayed_us.median * n;
        if (k.kind == "kernel") {
            covered += k.recorded_us.sum;
            if (std::isfinite(k.error_pct)) {
                abs_errors.push_back(std::fabs(k.error_pct));
                abs_errors_per_launch.emplace_back(std::fabs(k.error_pct), k.count);
            }
        }
        if (k.tier == Tier::Gemm) {
            gemm_all += k.recorded_us.sum;
            if (k.name_match) gemm_matched += k.recorded_us.sum;
        }
    }
    t.replayed_coverage = t.recorded_kernel_us > 0 ? covered / t.recorded_kernel_us : 0;
    t.replayed_kernel_us = replayed_total;
    t.replayed_recorded_us = recorded_total;
    t.total_error_pct =
        recorded_total > 0 ? (replayed_total - recorded_total) / recorded_total * 100.0 : NAN;
    t.median_abs_error_pct = median_of(std::move(abs_errors));
    t.median_abs_error_pct_per_launch = median_of_counted(std::move(abs_errors_per_launch));
    // Only CUPTI records name the kernels a replay ran; other timings carry the recipe's label.
    const bool names_known = r.env("timing") == "cupti";
    t.gemm_name_match = names_known && gemm_all > 0 ? gemm_matched / gemm_all : NAN;
    const bool any = recorded_total > 0 || replayed_total > 0;
    t.predicted_total_us = r.mode == "unique" && any ? predicted : NAN;
}

}  // namespace replay
