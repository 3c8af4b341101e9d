// The other host's CPU speed from two hand-made traces: the median of the per-name duration
// ratios, blind to GPU-bound calls, rare names and a few outliers; too little overlap refused.
#include <gtest/gtest.h>

#include <string>

#include "replay/host_scale.h"
#include "replay/input_error.h"

namespace {

using replay::HostScale;
using replay::Nanos;
using replay::Trace;

// `count` ops (or runtime calls) named `name`, each `us` long.
void add(Trace& trace, const std::string& name, int count, double us, bool call = false) {
    const auto id = trace.names.intern(name);
    for (int i = 0; i < count; ++i) {
        const Nanos ts = static_cast<Nanos>(trace.cpu_ops.size() + trace.runtime_calls.size()) * 100000;
        const Nanos dur = static_cast<Nanos>(us * 1000.0);
        if (call) {
            replay::RuntimeCall c;
            c.name = id;
            c.ts = ts;
            c.dur = dur;
            trace.runtime_calls.push_back(c);
        } else {
            replay::CpuOp op;
            op.name = id;
            op.ts = ts;
            op.dur = dur;
            trace.cpu_ops.push_back(op);
        }
    }
}

// Five ops and a launch call, each `factor` times as long on the reference host; `outlier`
// (a shape-dependent op) 10x there, a sync 100x (it waited for a slower GPU).
void fill(Trace& trace, double factor, bool reference) {
    add(trace, "aten::view", 20, 1.0 * factor);
    add(trace, "aten::empty", 10, 3.0 * factor);
    add(trace, "aten::t", 10, 4.0 * factor);
    add(trace, "aten::add", 10, 12.0 * factor);
    add(trace, "aten::linear", 10, 40.0 * factor * (reference ? 5.0 : 1.0));
    add(trace, "cudaLaunchKernel", 30, 5.0 * factor, true);
    add(trace, "cudaStreamSynchronize", 6, reference ? 500.0 : 5.0, true);
    add(trace, "aten::rare", 3, 9.0 * factor * (reference ? 50.0 : 1.0));
}

TEST(HostScale, MedianRatioOfSharedNamesIsTheScale) {
    Trace here, there;
    fill(here, 1.0, false);
    fill(there, 2.0, true);
    const HostScale h = replay::estimate_host_scale(here, there, "there.json");
    // view, empty, t, add, linear (ops) and cudaLaunchKernel: the sync waits for the GPU, the
    // rare op has too few instances.
    ASSERT_EQ(h.names.size(), 6u);
    EXPECT_DOUBLE_EQ(h.scale, 2.0);  // linear's 10x does not move the median
    for (const auto& r : h.names) {
        EXPECT_NE(r.name, "cudaStreamSynchronize");
        EXPECT_NE(r.name, "aten::rare");
        EXPECT_EQ(r.runtime_call, r.name == "cudaLaunchKernel");
    }
    EXPECT_DOUBLE_EQ(h.ratio_p25, 2.0);
    EXPECT_GT(h.ratio_p75, 2.0 - 1e-12);

    // The reverse direction is the inverse; a trace against itself is 1.
    EXPECT_DOUBLE_EQ(replay::estimate_host_scale(there, here, "here.json").scale, 0.5);
    EXPECT_DOUBLE_EQ(replay::estimate_host_scale(here, here, "here.json").scale, 1.0);
}

TEST(HostScale, TooFewSharedNamesAreRefusedNamingTheReference) {
    Trace here, there;
    fill(here, 1.0, false);
    add(there, "aten::view", 20, 2.0);
    add(there, "aten::empty", 20, 6.0);
    add(there, "aten::t", 2, 8.0);  // too few instances
    add(there, "cudaStreamSynchronize", 20, 8.0, true);
    try {
        replay::estimate_host_scale(here, there, "other_host.json.gz");
        FAIL() << "expected an InputError";
    } catch (const replay::InputError& e) {
        EXPECT_EQ(e.file(), "other_host.json.gz");
        EXPECT_NE(std::string(e.what()).find("share 2 "), std::string::npos) << e.what();
    }
}

}  // namespace
