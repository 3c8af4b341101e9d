// The Kineto parser's entry points: they open the input, run the pipeline (kineto/pipeline.h) and
// turn what the splitter and the batches saw into the result's statistics and warnings.
#include "replay/kineto_parser.h"

#include <algorithm>
#include <cstdio>
#include <thread>

#if defined(__linux__)
#include <sched.h>
#endif

#include "kineto/pipeline.h"
#include "replay/event_splitter.h"

namespace replay {

unsigned parse_threads(const ParseOptions& options) {
    if (options.threads != 0) return options.threads;
    unsigned cpus = std::thread::hardware_concurrency();
#if defined(__linux__)
    // taskset, cgroups cpusets and batch schedulers narrow this down; hardware_concurrency() not.
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) cpus = static_cast<unsigned>(CPU_COUNT(&set));
#endif
    return std::clamp(cpus, 2u, kMaxParseThreads);
}

namespace {

// The share of the input lost (in percent) above which a parse says so loudly.
constexpr std::uint64_t kLoudLossPercent = 1;

ParseResult parse_source(ByteSource& source, const std::string& path, const ParseOptions& options) {
    ParseResult result;
    Trace& trace = result.trace;
    ParseStats& stats = result.stats;
    trace.source = path;
    stats.compression = source.compression();
    const std::string& file = source.name();

    const unsigned workers = parse_threads(options);
    kineto::Pipeline pipeline(source, options, trace, stats, workers);
    {
        std::vector<std::jthread> helpers;
        for (unsigned i = 1; i < workers; ++i) helpers.emplace_back([&] { pipeline.worker(); });
        pipeline.worker();
    }
    pipeline.finish();
    const EventSplitter& splitter = pipeline.splitter();
    result.content_hash = pipeline.content_hash().hex();
    result.activity_totals = pipeline.content_hash().totals();

    stats.raw_bytes = source.raw_offset();
    stats.stray_bytes = splitter.stray_bytes();
    stats.first_stray_offset = splitter.first_stray_offset();
    stats.damaged_places = splitter.damaged_places();
    stats.damaged_bytes = splitter.damaged_bytes();
    stats.first_damage_offset = splitter.first_damage_offset();
    stats.first_damage_resumed = splitter.first_damage_resumed();
    if (source.truncated() && (!splitter.saw_events_array() || stats.events == 0))
        throw InputError(file, stats.raw_bytes,
                         kineto::cut_short_before_events(source, stats.json_bytes));
    if (stats.json_bytes == 0)
        throw InputError(file, 0, "empty input (no bytes after decompression)");
    if (!splitter.saw_events_array())
        throw InputError(file, stats.json_bytes,
                         "no \"traceEvents\" array: not a Kineto/Chrome trace");
    // Only what ends the input is a truncation: not damaged text that runs to the end of it.
    if (source.truncated() || (!splitter.complete() && !splitter.ended_in_damage())) {
        stats.truncated = true;
        stats.truncated_lost_bytes = stats.json_bytes - splitter.last_complete_end();
        result.warnings.push_back(
            file + ": truncated input (" +
            (source.truncated()
                 ? std::string(to_string(source.compression())) + " stream cut short; "
                 : "") +
            std::to_string(stats.truncated_lost_bytes) +
            " bytes after the last complete event at byte " +
            std::to_string(splitter.last_complete_end()) + " were lost)");
    }
    const std::uint64_t valid = stats.events - stats.malformed;
    if (valid == 0)
        throw InputError(
            file, stats.malformed ? stats.first_malformed_offset : splitter.last_complete_end(),
            stats.malformed
                ? "no valid event found (first malformed: " + stats.first_malformed_reason + ")"
                : "no valid event found");
    if (stats.damaged_places)
        result.warnings.push_back(
            file + ": skipped " + std::to_string(stats.damaged_bytes) +
            " byte(s) of damaged text in " + std::to_string(stats.damaged_places) +
            " place(s), reading on at the next event start each time; the first from byte " +
            std::to_string(stats.first_damage_offset) + " to byte " +
            std::to_string(stats.first_damage_resumed));
    if (stats.malformed)
        result.warnings.push_back(file + ": skipped " + std::to_string(stats.malformed) +
                                  " malformed event(s); the first at byte " +
                                  std::to_string(stats.first_malformed_offset) + ": " +
                                  stats.first_malformed_reason);
    if (stats.stray_bytes)
        result.warnings.push_back(file + ": skipped " + std::to_string(stats.stray_bytes) +
                                  " stray byte(s) after the end of the trace; the first at byte " +
                                  std::to_string(stats.first_stray_offset));
    // More than a small share lost is said loudly, with the share: the lines above alone read
    // like notes on a trace that was read.
    const std::uint64_t lost = stats.truncated_lost_bytes + stats.damaged_bytes +
                               stats.malformed_bytes + stats.stray_bytes;
    if (lost * 100 > stats.json_bytes * kLoudLossPercent) {
        char share[32];
        std::snprintf(share, sizeof share, "%.1f%%",
                      100.0 * static_cast<double>(lost) / static_cast<double>(stats.json_bytes));
        result.warnings.push_back(file + ": LOST " + share + " of the input (" +
                                  std::to_string(lost) + " of " + std::to_string(stats.json_bytes) +
                                  " bytes cut off, damaged or malformed): everything reported is "
                                  "about the rest only");
    }
    return result;
}

}  // namespace

ParseResult parse_kineto(const std::string& path, const ParseOptions& options) {
    auto source = open_source(path);
    return parse_source(*source, path, options);
}

ParseResult parse_kineto_buffer(std::string_view json, const ParseOptions& options,
                                const std::string& name) {
    const auto source = memory_source(name, json);
    return parse_source(*source, name, options);
}

}  // namespace replay
