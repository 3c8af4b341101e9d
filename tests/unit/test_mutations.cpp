// The mutation benchmark (issue 16) as a test: 300 plain, 150 gzip and 150 zstd copies of the BLOOM
// trace, each with one byte deleted, inserted or changed at a random offset (fixed seed), are
// parsed. It prints how many were read unchanged, with malformed events, with damaged text skipped,
// as truncated, or rejected, and the events lost per damaged byte; it fails when a plain copy
// damaged inside traceEvents loses more than the events around the damage, is called truncated,
// or is rejected. Run build/tests/test_mutations to see the table.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "parser_test_files.h"
#include "replay/event_splitter.h"
#include "replay/kineto_parser.h"
#include "replay/source.h"
#include "test_support.h"

namespace {

using replay::testing::bloom_json;
using replay::testing::trace_path;

enum Verdict { kUnchanged, kMalformed, kDamaged, kTruncated, kRejected, kVerdicts };
constexpr std::array<const char*, kVerdicts> kVerdictNames = {"unchanged", "malformed events",
                                                              "damaged", "truncated", "rejected"};

struct Parsed {
    Verdict verdict = kRejected;
    std::uint64_t valid_events = 0;
    std::uint64_t kernels = 0;
};

Parsed summarize(const replay::ParseResult& r) {
    Parsed p;
    p.valid_events = r.stats.events - r.stats.malformed;
    p.kernels = r.trace.activity_totals().count(replay::ActivityKind::Kernel);
    p.verdict = r.stats.truncated        ? kTruncated
                : r.stats.damaged_places ? kDamaged
                : r.stats.malformed      ? kMalformed
                                         : kUnchanged;
    return p;
}

template <typename Parse>
Parsed parse_or_reject(Parse&& parse) {
    try {
        return summarize(parse());
    } catch (const replay::InputError&) {
        return Parsed{};
    }
}

// One byte deleted, inserted or changed at a random offset in [from, to).
std::string mutate(const std::string& bytes, std::mt19937_64& rng, std::size_t from, std::size_t to,
                   std::size_t& at) {
    at = from + static_cast<std::size_t>(rng() % (to - from));
    const char other = static_cast<char>(rng() % 256);
    std::string mutant = bytes;
    switch (rng() % 3) {
        case 0:
            mutant.erase(at, 1);
            break;
        case 1:
            mutant.insert(at, 1, other);
            break;
        default:
            mutant[at] = other == bytes[at] ? static_cast<char>(other ^ 0x20) : other;
            break;
    }
    return mutant;
}

// Where the events of the whole trace start and end, in order.
std::vector<replay::Span> event_spans(const std::string& json) {
    std::string padded = json + std::string(64, ' ');
    replay::EventSplitter splitter;
    std::vector<replay::Span> spans;
    splitter.scan(padded.data(), json.size(), true, spans);
    std::erase_if(spans, [](const replay::Span& s) { return s.metadata; });
    return spans;
}

struct Tally {
    std::array<int, kVerdicts> verdicts{};
    void print(const char* label, int mutants) const {
        std::printf("%-6s %4d mutants:", label, mutants);
        for (int v = 0; v < kVerdicts; ++v) std::printf("  %s %d", kVerdictNames[v], verdicts[v]);
        std::printf("\n");
    }
};

}  // namespace

TEST(Mutations, DamageInTheMiddleCostsOnlyTheEventsAroundIt) {
    const std::string& json = bloom_json();
    const Parsed whole = summarize(replay::parse_kineto_buffer(json, {}, "whole.json"));
    const std::vector<replay::Span> events = event_spans(json);
    ASSERT_GT(events.size(), 5000u);
    const std::size_t first = events.front().begin;
    const std::size_t last = events.back().begin + events.back().length;
    std::mt19937_64 rng(16);

    // Plain JSON: anywhere, and counted in detail inside traceEvents.
    Tally plain;
    std::uint64_t inside = 0, lost_inside = 0, most_lost = 0;
    for (int i = 0; i < 300; ++i) {
        std::size_t at = 0;
        const std::string mutant = mutate(json, rng, 0, json.size(), at);
        const Parsed p =
            parse_or_reject([&] { return replay::parse_kineto_buffer(mutant, {}, "m.json"); });
        ++plain.verdicts[p.verdict];
        if (at < first || at >= last) continue;
        // The events around the damage: the one it is in (or the two it lies between).
        const auto next = std::upper_bound(
            events.begin(), events.end(), at,
            [](std::size_t offset, const replay::Span& s) { return offset < s.begin; });
        const bool in_event =
            next != events.begin() && at < std::prev(next)->begin + std::prev(next)->length;
        const std::uint64_t around = in_event ? 1 : 2;
        const std::uint64_t lost =
            whole.valid_events > p.valid_events ? whole.valid_events - p.valid_events : 0;
        ++inside;
        lost_inside += lost;
        most_lost = std::max(most_lost, lost);
        EXPECT_NE(p.verdict, kRejected) << "byte " << at;
        EXPECT_NE(p.verdict, kTruncated) << "byte " << at;
        EXPECT_LE(lost, around) << "byte " << at << ": " << lost << " events lost";
    }

    // Compressed: the bytes of the bundled .gz and .zst files (the zstd tool's checksums and
    // gzip's CRC find most damage; what they let through is read like damaged JSON).
    replay::testing::TempDir dir;
    Tally compressed[2];
    const char* const names[2] = {"gzip", "zstd"};
    const std::string files[2] = {trace_path("h200/bloom560m_fp16_b1_s5.json.gz"),
                                  trace_path("h200/bloom560m_fp16_b1_s5.json.zst")};
    for (int kind = 0; kind < 2; ++kind) {
        const std::string bytes = replay::testing::file_bytes(files[kind]);
        for (int i = 0; i < 150; ++i) {
            std::size_t at = 0;
            std::string name = "mutant";
            name += std::to_string(i);
            const std::string path = (dir / name).string();
            replay::testing::write_file(path, mutate(bytes, rng, 0, bytes.size(), at));
            ++compressed[kind]
                  .verdicts[parse_or_reject([&] { return replay::parse_kineto(path); }).verdict];
        }
    }

    std::printf("mutation benchmark: one byte deleted, inserted or changed per copy (seed 16)\n");
    plain.print("plain", 300);
    compressed[0].print(names[0], 150);
    compressed[1].print(names[1], 150);
    std::printf(
        "plain, damage inside traceEvents: %llu mutants, %llu events lost in all, %.2f events lost "
        "per damaged byte, at most %llu for one\n",
        static_cast<unsigned long long>(inside), static_cast<unsigned long long>(lost_inside),
        inside ? static_cast<double>(lost_inside) / static_cast<double>(inside) : 0.0,
        static_cast<unsigned long long>(most_lost));
    EXPECT_GT(inside, 250u);
}
