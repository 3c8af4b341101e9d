// engine/signatures.cpp and parsers/content_hash.cpp. trace_content_hash feeds each repeated
// kernel name to FNV-1a as one multiply-add worked out once per name and low byte of the state:
// the value must be exactly
// that of FNV-1a over the text itself ("name:dur:stream;" per activity, the text so far replaced
// by its own hash each time it grows past 1 MiB), which archived baselines are found by. The
// unique kernels, grouped beside the reuse annotation by analyze(), must be those grouped after it.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>

#include "replay/analysis.h"
#include "replay/kineto_parser.h"
#include "replay/shape_rewrite.h"
#include "replay/signatures.h"
#include "replay/trace_model.h"
#include "test_support.h"

namespace {

// The definition, spelled out: the text built, then hashed a byte at a time.
std::string reference_hash(const replay::Trace& trace) {
    std::string text;
    for (const replay::GpuActivity& a : trace.activities) {
        text.append(trace.names.view(a.name)).append(":");
        text.append(std::to_string(a.dur)).append(":");
        text.append(std::to_string(a.stream)).append(";");
        if (text.size() > (1u << 20)) text = replay::hash_hex(text);
    }
    return replay::hash_hex(text);
}

// Names from 0 to 300 bytes, every byte value in them, each repeated many times after
// activities of random durations and streams (so it meets every low byte of the state).
replay::Trace repeated_names(std::size_t activities, unsigned seed) {
    std::mt19937 random(seed);
    replay::Trace trace;
    std::vector<replay::NameId> names;
    for (int i = 0; i < 40; ++i) {
        std::string name(random() % 301, '\0');
        for (char& c : name) c = static_cast<char>(random() % 256);
        names.push_back(trace.names.intern(name + std::to_string(i)));
    }
    names.push_back(replay::StringPool::kEmpty);  // the empty name
    for (std::size_t i = 0; i < activities; ++i) {
        replay::GpuActivity a;
        a.name = names[random() % names.size()];
        a.dur = static_cast<replay::Nanos>(random() % 100000) - 10;  // a few negative
        a.stream = static_cast<std::int64_t>(random() % 40);
        trace.activities.push_back(a);
    }
    return trace;
}

TEST(TraceHash, RepeatedNamesHashAsTheirTextDoes) {
    for (unsigned seed : {1u, 2u, 3u}) {
        const replay::Trace trace = repeated_names(5000, seed);
        EXPECT_EQ(replay::trace_content_hash(trace), reference_hash(trace)) << "seed " << seed;
    }
}

TEST(TraceHash, TextsPastOneMebibyteRollOverAsTheirTextDoes) {
    // ~170 bytes an activity: the text rolls over several times.
    const replay::Trace trace = repeated_names(40000, 4);
    EXPECT_EQ(replay::trace_content_hash(trace), reference_hash(trace));
}

// The activities' totals per kind come from the hash's pass (analyze() keeps them beside the hash,
// inspect prints them): the same as Trace::activity_totals().
TEST(TraceHash, TotalsFromTheSamePassAreTheTraces) {
    replay::Trace trace = repeated_names(3000, 5);
    for (std::size_t i = 0; i < trace.activities.size(); i += 3)
        trace.activities[i].kind =
            i % 2 ? replay::ActivityKind::Memcpy : replay::ActivityKind::Memset;
    replay::ActivityTotals totals;
    EXPECT_EQ(replay::trace_content_hash(trace, &totals), reference_hash(trace));
    const replay::ActivityTotals want = trace.activity_totals();
    EXPECT_EQ(totals.counts, want.counts);
    EXPECT_EQ(totals.times, want.times);
    EXPECT_GT(want.count(replay::ActivityKind::Memset), 0u);
    // analyze() too, with two threads and one, and with --set-dims (which adds copies).
    for (const unsigned threads : {2u, 1u, 0u}) {
        replay::AnalysisOptions options;
        options.trace_path = replay::testing::trace_path("h200/bloom_b1.json.gz");
        options.parse.threads = std::max(threads, 1u);
        if (threads == 0) options.set_dims = replay::parse_set_dims("batch=4,seq=128");
        const auto a = replay::analyze(options);
        EXPECT_EQ(a->activity_totals.counts, a->trace().activity_totals().counts) << threads;
        EXPECT_EQ(a->activity_totals.times, a->trace().activity_totals().times) << threads;
        EXPECT_GT(a->activity_totals.count(replay::ActivityKind::Kernel), 100u) << threads;
    }
}

// The parser feeds ContentHasher batch by batch: any cut of the activities into pieces hashes as
// the whole does, and a parse's content_hash (and totals) are those of its trace.
TEST(TraceHash, PiecesHashAsTheWholeAndTheParserHashesItsTrace) {
    const replay::Trace trace = repeated_names(40000, 6);  // rolls over several times
    std::mt19937 random(8);
    for (int round = 0; round < 5; ++round) {
        replay::ContentHasher hasher;
        for (std::size_t at = 0; at < trace.activities.size();) {
            const std::size_t next = std::min(trace.activities.size(), at + random() % 3000);
            hasher.add(trace, at, next);
            at = next;
        }
        EXPECT_EQ(hasher.hex(), reference_hash(trace)) << "round " << round;
        EXPECT_EQ(hasher.totals().counts, trace.activity_totals().counts);
    }
    for (const char* file : {"h200/bloom_b1.json.gz", "h200/gpt2_train.json.gz"}) {
        replay::ParseOptions options;
        options.chunk_bytes = 64 << 10;  // many batches
        const replay::ParseResult parsed =
            replay::parse_kineto(replay::testing::trace_path(file), options);
        EXPECT_EQ(parsed.content_hash, reference_hash(parsed.trace)) << file;
        EXPECT_EQ(parsed.activity_totals.times, parsed.trace.activity_totals().times) << file;
    }
}

TEST(TraceHash, EmptyTraceHashesAsTheEmptyText) {
    EXPECT_EQ(replay::trace_content_hash(replay::Trace{}), replay::hash_hex(""));
}

// Whether any tensor slot of the recipe has a storage id, and a known reuse distance.
std::pair<bool, bool> has_ids(const replay::Recipe& recipe) {
    bool storage = false, reuse = false;
    replay::Recipe r = recipe;
    replay::visit_tensor_slots(r, [&](std::int64_t& s, std::int64_t& distance) {
        storage = storage || s >= 0;
        reuse = reuse || distance != replay::kReuseUnknown;
    });
    return {storage, reuse};
}

void expect_same_kernels(const std::vector<replay::UniqueKernel>& got,
                         const std::vector<replay::UniqueKernel>& want) {
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t i = 0; i < got.size(); ++i) {
        EXPECT_EQ(got[i].id, want[i].id) << i;
        EXPECT_EQ(got[i].nodes, want[i].nodes) << i;
        EXPECT_TRUE(got[i].recipe == want[i].recipe) << i << " " << got[i].name;
        EXPECT_EQ(got[i].recorded_us.sum, want[i].recorded_us.sum) << i;
    }
}

TEST(UniqueKernels, GroupedBesideTheReuseAnnotationAsAfterIt) {
    for (unsigned threads : {2u, 1u}) {
        replay::AnalysisOptions options;
        options.trace_path = replay::testing::trace_path("h200/bloom560m_fp16_b1_s5.json.gz");
        options.parse.threads = threads;
        const auto a = replay::analyze(options);
        expect_same_kernels(a->kernels, replay::unique_kernels(a->graph, a->recipes));
        // The inferred dataflow gives the first instances storage ids and reuse distances, which
        // the grouping alone leaves out.
        const auto grouped = replay::unique_kernels_by_decision(a->graph, a->recipes);
        std::size_t with_storages = 0, with_reuse = 0;
        for (std::size_t i = 0; i < grouped.size(); ++i) {
            EXPECT_EQ(has_ids(grouped[i].recipe), std::make_pair(false, false)) << i;
            const auto [storage, reuse] = has_ids(a->kernels[i].recipe);
            with_storages += storage;
            with_reuse += reuse;
        }
        EXPECT_GT(with_storages, 10u) << threads << " threads";
        EXPECT_GT(with_reuse, 10u) << threads << " threads";
    }
}

}  // namespace

// A trace big enough for the statistics to be split over two threads: the same kernels, counts
// and statistics as on one.
TEST(UniqueKernels, StatisticsOnTwoThreadsAreThoseOnOne) {
    std::mt19937 random(7);
    replay::Trace trace;
    std::vector<replay::NameId> names;
    for (int i = 0; i < 300; ++i)
        names.push_back(trace.names.intern("kernel_" + std::to_string(i)));
    for (std::size_t i = 0; i < 150000; ++i) {
        replay::GpuActivity a;
        // Kernels of very different counts, some in two speeds (two_groups() finds them).
        a.name = names[std::min<std::size_t>(random() % 400, random() % 300)];
        a.ts = static_cast<replay::Nanos>(i) * 10000;
        a.dur =
            1000 + static_cast<replay::Nanos>(random() % 5000) + (random() % 3 == 0 ? 40000 : 0);
        a.stream = 7;
        a.grid[0] = static_cast<std::int32_t>(a.name % 4) + 1;
        a.block[0] = 128;
        trace.activities.push_back(a);
    }
    const replay::KernelGraph graph = replay::KernelGraph::build(trace, 1);
    const replay::NodeRecipes recipes = replay::classify(graph);
    const auto one = replay::unique_kernels_by_decision(graph, recipes, 1);
    const auto two = replay::unique_kernels_by_decision(graph, recipes, 2);
    ASSERT_EQ(one.size(), two.size());
    ASSERT_EQ(one.size(), 300u);
    std::size_t two_speeds = 0;
    for (std::size_t i = 0; i < one.size(); ++i) {
        EXPECT_EQ(one[i].id, two[i].id) << i;
        EXPECT_EQ(one[i].nodes, two[i].nodes) << i;
        const replay::DurationStats &a = one[i].recorded_us, &b = two[i].recorded_us;
        EXPECT_EQ(std::tie(a.count, a.min, a.median, a.mean, a.max, a.sum, a.stddev, a.p95, a.p99),
                  std::tie(b.count, b.min, b.median, b.mean, b.max, b.sum, b.stddev, b.p95, b.p99))
            << i;
        ASSERT_EQ(one[i].recorded_groups.size(), two[i].recorded_groups.size()) << i;
        two_speeds += one[i].recorded_groups.size() == 2;
        for (std::size_t g = 0; g < one[i].recorded_groups.size(); ++g) {
            EXPECT_EQ(one[i].recorded_groups[g].median, two[i].recorded_groups[g].median) << i;
            EXPECT_EQ(one[i].recorded_groups[g].count, two[i].recorded_groups[g].count) << i;
        }
    }
    EXPECT_GT(two_speeds, 100u);
}
