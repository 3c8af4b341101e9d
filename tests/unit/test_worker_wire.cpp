// The worker process's wire (replayers/worker_wire.h): every recipe of bundled traces, the
// environment and timed activities reach the worker bit for bit, and a message cut short is an
// error, not a read past its end.
#include <gtest/gtest.h>

#include <string>

#include "replay/analysis.h"
#include "test_support.h"
#include "worker_wire.h"

namespace replay {
namespace {

using detail::Command;
using detail::Decoder;
using detail::Encoder;

// The message without its length prefix, as the receiver sees it.
std::string body(Encoder e) {
    return e.take().substr(detail::kFrameHeader);
}

std::string encoded(const Recipe& r) {
    Encoder e(Command::Prepare);
    detail::encode(e, r);
    return body(std::move(e));
}

TEST(WorkerWire, RecipesOfBundledTracesRoundTripExactly) {
    const std::pair<const char*, const char*> traces[] = {
        {"h200/bloom560m_fp16_b1_s5.json.gz", "h200/bloom560m_fp16_b1_s5.et.json.gz"},
        {"h200/mixtral_prefill.json.gz", ""},
        {"h200/bert_infer_tf32.json.gz", ""},  // GEMMs that ran on TF32
        {"h200/gpt2_train_with_et.json.gz", "h200/gpt2_train_with_et.et.json.gz"},
    };
    std::size_t recipes = 0, with_storage = 0, tf32 = 0;
    for (const auto& [trace, et] : traces) {
        AnalysisOptions options;
        options.trace_path = testing::trace_path(trace);
        if (*et != '\0') options.execution_trace_path = testing::trace_path(et);
        const auto a = analyze(options);
        for (std::size_t n = 0; n < a->recipes.size(); ++n) {
            const Recipe r = a->recipes.recipe(n);  // with the node's own storage ids
            const std::string bytes = encoded(r);
            Decoder d(bytes);
            ASSERT_EQ(d.command(), Command::Prepare);
            const Recipe back = detail::decode_recipe(d);
            ASSERT_EQ(encoded(back), bytes) << trace << ": " << r.instance_key();
            ASSERT_EQ(back.instance_key(), r.instance_key());
            ASSERT_EQ(back.detail.index(), r.detail.index());
            ++recipes;
            with_storage += back.instance_key() != back.key();
            if (const auto* g = std::get_if<replay::GemmRecipe>(&back.detail))
                tf32 += g->tf32_recorded;
        }
    }
    EXPECT_GT(recipes, 1000u);
    EXPECT_GT(with_storage, 0u);  // storage ids (from the Execution Traces) crossed too
    EXPECT_EQ(tf32, 74u);         // and BERT's TF32 GEMMs kept their math
}

// Triton launches from --inductor-cache cross with their compiled image: the worker has no cache.
TEST(WorkerWire, TritonRecipesCrossWithTheirImage) {
    AnalysisOptions options;
    options.trace_path = testing::trace_path("h200/mlp_compiled.json.gz");
    options.inductor_cache = testing::trace_path("h200/mlp_compiled.inductor.tar.gz");
    const auto a = analyze(options);
    std::size_t triton = 0;
    for (const Recipe& r : a->recipes.table()) {
        const auto* t = std::get_if<TritonRecipe>(&r.detail);
        if (t == nullptr) continue;
        ASSERT_FALSE(t->cubin.empty());
        const std::string bytes = encoded(r);
        Decoder d(bytes);
        ASSERT_EQ(d.command(), Command::Prepare);
        EXPECT_EQ(detail::decode_recipe(d), r);
        ++triton;
    }
    EXPECT_GT(triton, 0u);
}

TEST(WorkerWire, EnvironmentAndActivitiesRoundTrip) {
    Environment env;
    env.backend = "cuda";
    env.device_name = "NVIDIA H200";
    env.device_uuid = "GPU-0a1b2c3d-0000-1111-2222-333344445555";
    env.timing = "cupti";
    env.sm_clock_mhz = 1980;
    env.total_memory = 150'000'000'000;
    env.compute_major = 9;
    env.notes = {"one", "two"};
    TimedActivity a;
    a.tag = 1ull << 40;
    a.name = "nvjet_sm90_tst";
    a.start_ns = -5;
    a.end_ns = 1'000'000'000'123;
    a.stream = 3;
    a.per_kernel = true;
    a.warm_read = true;
    a.lane = 17;  // a library's own stream
    Encoder e(Command::Ready);
    detail::encode(e, env);
    detail::encode(e, a);
    const std::string bytes = body(std::move(e));
    Decoder d(bytes);
    const Environment env2 = detail::decode_environment(d);
    const TimedActivity a2 = detail::decode_activity(d);
    EXPECT_EQ(env2.device_name, env.device_name);
    EXPECT_EQ(env2.device_uuid, env.device_uuid);
    EXPECT_EQ(env2.timing, env.timing);
    EXPECT_EQ(env2.total_memory, env.total_memory);
    EXPECT_EQ(env2.compute_major, 9);
    EXPECT_EQ(env2.notes, env.notes);
    EXPECT_EQ(a2.tag, a.tag);
    EXPECT_EQ(a2.name, a.name);
    EXPECT_EQ(a2.start_ns, a.start_ns);
    EXPECT_EQ(a2.end_ns, a.end_ns);
    EXPECT_TRUE(a2.per_kernel);
    EXPECT_TRUE(a2.warm_read);
    EXPECT_EQ(a2.stream, 3);
    EXPECT_EQ(a2.lane, 17);
}

TEST(WorkerWire, AShortMessageIsAnError) {
    Recipe r;
    r.tier = Tier::Copy;
    r.detail = CopyRecipe{};
    const std::string bytes = encoded(r);
    for (std::size_t cut = 1; cut < bytes.size(); ++cut) {
        Decoder d(std::string_view(bytes).substr(0, cut));
        EXPECT_THROW(detail::decode_recipe(d), detail::WireError) << cut;
    }
    // A list longer than what is left is refused before anything is allocated.
    const std::string huge = body(std::move(Encoder(Command::Synced).u32(0xffffffffu)));
    Decoder d(huge);
    EXPECT_THROW(d.count(), detail::WireError);
}

TEST(WorkerWire, FramesArriveWholeWhateverTheReadsCut) {
    // Three thousand frames of different sizes, received in reads of 7 bytes: each comes out
    // once, whole and in order, however the reads split them.
    std::string stream;
    for (int i = 0; i < 3000; ++i)
        stream += Encoder(Command::Issue)
                      .u32(static_cast<std::uint32_t>(i))
                      .str(std::string(i % 50, 'x'))
                      .take();
    detail::FrameBuffer buffer;
    int next = 0;
    for (std::size_t at = 0; at < stream.size(); at += 7) {
        buffer.append(stream.data() + at, std::min<std::size_t>(7, stream.size() - at));
        for (std::string_view frame; !(frame = buffer.next()).empty(); ++next) {
            Decoder d(frame);
            ASSERT_EQ(d.command(), Command::Issue);
            ASSERT_EQ(d.u32(), static_cast<std::uint32_t>(next));
            ASSERT_EQ(d.str().size(), static_cast<std::size_t>(next % 50));
        }
    }
    EXPECT_EQ(next, 3000);
    // A length no frame has is an error.
    detail::FrameBuffer bad;
    const char zero[8] = {};
    bad.append(zero, sizeof zero);
    EXPECT_THROW(bad.next(), detail::WireError);
}

}  // namespace
}  // namespace replay
