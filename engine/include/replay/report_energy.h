// Energy in reports beyond the types of report.h: the real model's step from the timing.json that
// examples/capture_trace.py writes beside a trace (schemas/timing.schema.json), where that file is
// found, and how it joins a report.
#pragma once

#include <cmath>
#include <optional>
#include <string>

#include "replay/report.h"

namespace replay {

// The unprofiled step of the captured model.
struct ModelTiming {
    double median_us = NAN;     // median GPU time of one step (CUDA events)
    StepEnergy energy;          // not measured() when the capture could not read NVML
    std::string why_no_energy;  // the capture's energy_note then
};

// Reads and checks a timing.json: numbers finite and >= 0, the energy fields all there or an
// energy_note. Throws InputError naming the file, the field and its byte offset.
ModelTiming read_model_timing(const std::string& path);

// `<trace stem>.timing.json` beside the trace (traces/h200/bloom_b1.json.gz ->
// traces/h200/bloom_b1.timing.json), when that file exists.
std::optional<std::string> timing_file_beside(const std::string& trace);

// Puts the model's step into report.energy.model, notes a GPU other than the replay's, and
// recomputes the energy figures.
void add_model_energy(Report& report, const ModelTiming& timing);

}  // namespace replay
