#include "replay/kernels_csv.h"

#include <charconv>
#include <cmath>
#include <ostream>

namespace replay {
namespace {

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

void write_kernels_csv(std::ostream& out, const Report& r) {
    out << "id,name,kind,tier,rule,disposition,count,recorded_median_us,recorded_sum_us,replayed_"
           "median_us,"
           "replayed_min_us,replayed_mean_us,replayed_stddev_us,replayed_p95_us,replayed_p99_us,"
           "error_pct,"
           "name_match,gflops_per_s,gb_per_s,reason\n";
    for (const auto& k : r.kernels) {
        const bool done = was_replayed(k);
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
        csv_text(out, to_string(k.outcome));
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

}  // namespace replay
