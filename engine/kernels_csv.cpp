#include "replay/kernels_csv.h"

#include <charconv>
#include <cmath>
#include <ostream>
#include <string>

namespace replay {
namespace {

// One CSV row: fields separated as they are added. Numbers in shortest round-trip form, NaN as an
// empty cell; text quoted when it needs it.
class CsvRow {
  public:
    explicit CsvRow(std::ostream& out) : out_(out) {}
    ~CsvRow() { out_ << '\n'; }
    CsvRow(const CsvRow&) = delete;
    CsvRow& operator=(const CsvRow&) = delete;

    CsvRow& text(std::string_view text) {
        separate();
        if (text.find_first_of(",\"\r\n") == std::string_view::npos) {
            out_ << text;
            return *this;
        }
        out_ << '"';
        for (char c : text) {
            if (c == '"') out_ << '"';
            out_ << c;
        }
        out_ << '"';
        return *this;
    }
    CsvRow& number(double x) {
        separate();
        if (!std::isfinite(x)) return *this;
        char buf[32];
        auto [ptr, ec] = std::to_chars(buf, buf + sizeof buf, x);
        out_.write(buf, ptr - buf);
        return *this;
    }
    CsvRow& empty() {
        separate();
        return *this;
    }

  private:
    void separate() {
        if (!first_) out_ << ',';
        first_ = false;
    }
    std::ostream& out_;
    bool first_ = true;
};

// A replayed rate's share of the device's peak: empty without a work figure, "n/a" when the
// report's environment has no peak (the cpu backend).
void peak_share(CsvRow& row, bool replayed, double work, double pct) {
    if (!replayed || !(work > 0))
        row.empty();
    else if (std::isfinite(pct))
        row.number(pct);
    else
        row.text("n/a");
}

}  // namespace

void write_kernels_csv(std::ostream& out, const Report& r) {
    out << "id,name,kind,tier,rule,disposition,count,recorded_median_us,recorded_sum_us,replayed_"
           "median_us,"
           "replayed_min_us,replayed_mean_us,replayed_stddev_us,replayed_p95_us,replayed_p99_us,"
           "error_pct,"
           "name_match,gflops_per_s,gb_per_s,flops,bytes,pct_peak_flops,pct_peak_bandwidth,"
           "reason,"
           "energy_median_uj,energy_min_uj,energy_max_uj,energy_windows,energy_dynamic_uj,"
           "energy_power_w,energy_edp_uj_us,energy_pj_per_flop,energy_why\n";
    for (const auto& k : r.kernels) {
        const bool done = was_replayed(k);
        CsvRow row(out);
        row.text(k.id).text(k.name).text(k.kind);
        if (k.tier != Tier::NotReplayable)
            row.text(std::to_string(static_cast<int>(k.tier)));
        else
            row.empty();
        row.text(k.rule).text(to_string(k.outcome)).text(std::to_string(k.count));
        row.number(k.recorded_us.median).number(k.recorded_us.sum);
        for (double x : {k.replayed_us.median, k.replayed_us.min, k.replayed_us.mean,
                         k.replayed_us.stddev, k.replayed_us.p95, k.replayed_us.p99})
            row.number(done ? x : NAN);
        row.number(k.error_pct);
        if (done || !k.replayed_names.empty())
            row.text(k.name_match ? "true" : "false");
        else
            row.empty();
        row.number(k.gflops_per_s).number(k.gb_per_s);
        row.number(k.flops > 0 ? k.flops : NAN).number(k.bytes > 0 ? k.bytes : NAN);
        peak_share(row, done, k.flops, k.pct_peak_flops);
        peak_share(row, done, k.bytes, k.pct_peak_bandwidth);
        row.text(k.reason);
        // Empty without --energy; with it, a kernel not measured says why (n/a, never 0).
        const KernelEnergy& e = k.energy;
        const bool measured = e.measured();
        for (double x : {e.uj.median, e.uj.min, e.uj.max, static_cast<double>(e.uj.count),
                         e.dynamic_uj, e.power_w, e.edp_uj_us, e.pj_per_flop})
            row.number(measured ? x : NAN);
        row.text(r.energy.requested && !measured ? (e.why.empty() ? r.energy.probe.why : e.why)
                                                 : std::string());
    }
}

}  // namespace replay
