// trace_content_hash (engine/signatures.cpp) feeds each repeated kernel name to FNV-1a as one
// multiply-add worked out once per name and low byte of the state: the value must be exactly
// that of FNV-1a over the text itself ("name:dur:stream;" per activity, the text so far replaced
// by its own hash each time it grows past 1 MiB), which archived baselines are found by.
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "replay/signatures.h"
#include "replay/trace_model.h"

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

TEST(TraceHash, EmptyTraceHashesAsTheEmptyText) {
    EXPECT_EQ(replay::trace_content_hash(replay::Trace{}), replay::hash_hex(""));
}

}  // namespace
