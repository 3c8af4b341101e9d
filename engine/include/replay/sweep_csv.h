// The CSV of a sweep, one per GPU and kernel (`{gpu}_{kernel}_{dtype}.csv`, schemas/sweep_csv.md):
// one row per grid point, appended and flushed to disk as each point is measured, under an
// exclusive lock, so that parts running as separate processes share the file and a killed job
// resumes where it stopped (a torn last line is cut off when the file is opened again).
#pragma once

#include <cmath>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

namespace replay {

struct SweepRow {
    std::vector<std::int64_t> dims;  // the varied dims, in the CSV's column order
    double flops = 0, bytes = 0, elements = 0, padded_elements = 0;  // the point's work (recipe_dims.h)
    std::size_t samples = 0;                    // timed runs
    double median_us = NAN, p95_us = NAN, min_us = NAN;
    double spread_pct = NAN;                    // robust run-to-run spread (1.4826 x MAD / median)
    double energy_j = NAN;                      // per run; empty until energy is measured
    std::string status = "ok";                  // ok, or skipped/failed: the reason
};

// The header: the dim names, then the fixed columns.
std::vector<std::string> sweep_csv_columns(const std::vector<std::string>& dim_names);
// One line, without its newline: GFLOP/s (GEMMs) and GB/s come from the work and the median.
std::string format_sweep_row(const SweepRow& row);

// A CSV as read back: its header and complete rows (a torn last line is left out; `torn` says
// whether there was one).
struct SweepTable {
    std::vector<std::string> columns;
    std::vector<std::vector<std::string>> rows;
    bool torn = false;
    std::size_t malformed = 0;  // complete lines with another number of fields
    // The column's index; throws InputError naming the file when it is missing.
    std::size_t column(const std::string& name, const std::string& path) const;
};
// Throws InputError when the file cannot be read or has no header.
SweepTable read_sweep_csv(const std::string& path);
SweepTable parse_sweep_csv(const std::string& text);

// A CSV being appended to. Opening creates it with its header, or checks the header of the one
// there (the same dims, or InputError) and cuts a torn last line off; every append takes the
// lock, writes one line and flushes it to disk.
class SweepCsvWriter {
  public:
    SweepCsvWriter(const std::string& path, const std::vector<std::string>& dim_names);
    ~SweepCsvWriter();
    SweepCsvWriter(const SweepCsvWriter&) = delete;
    SweepCsvWriter& operator=(const SweepCsvWriter&) = delete;

    // Points with a row, as read when the file was opened and appended since.
    bool done(const std::vector<std::int64_t>& dims) const { return done_.count(dims) > 0; }
    std::size_t rows_at_open() const { return rows_at_open_; }
    bool repaired() const { return repaired_; }  // a torn last line was cut off
    void append(const SweepRow& row);
    const std::string& path() const { return path_; }

  private:
    std::string path_;
    int fd_ = -1;
    std::set<std::vector<std::int64_t>> done_;
    std::size_t rows_at_open_ = 0;
    bool repaired_ = false;
};

}  // namespace replay
