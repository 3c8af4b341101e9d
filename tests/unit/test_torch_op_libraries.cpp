// Custom ops (vLLM's, SGLang's, ...): a recipe of an op that no loaded library registers is
// skipped with a reason naming the op and the library to load; once REPLAY_TORCH_LIBRARIES names
// that library, the same recipe binds and replays like an aten op.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <string>

#include "op_libraries.h"
#include "recipe_builders.h"
#include "replay/torch_ops.h"

namespace replay {
namespace {

AtenRecipe scaled_add() {
    return testing::op(
        "replay_test::scaled_add",
        {testing::tensor(testing::spec({4, 8}, DType::Float32)),
         testing::tensor(testing::spec({4, 8}, DType::Float32)), testing::scalar("0.5")});
}

bool has_note(const std::vector<std::string>& notes, const std::string& prefix) {
    return std::any_of(notes.begin(), notes.end(),
                       [&](const std::string& n) { return n.starts_with(prefix); });
}

TEST(OpLibraries, ACustomOpReplaysOnceItsLibraryIsLoaded) {
    ::unsetenv("REPLAY_TORCH_LIBRARIES");
    TorchOpRunner before(TorchDevice{TorchDevice::Kind::Cpu, 0}, 1, false);
    const Prepared missing = before.prepare(scaled_add());
    EXPECT_EQ(missing.disposition, Disposition::Skipped);
    EXPECT_NE(missing.reason.find("replay_test::scaled_add is a custom op"), std::string::npos)
        << missing.reason;
    EXPECT_NE(missing.reason.find("REPLAY_TORCH_LIBRARIES"), std::string::npos) << missing.reason;

    const std::string absent = "/nonexistent/libops.so";
    ::setenv("REPLAY_TORCH_LIBRARIES", (absent + ":" + REPLAY_TEST_OP_LIBRARY).c_str(), 1);
    TorchOpRunner after(TorchDevice{TorchDevice::Kind::Cpu, 0}, 1, false);
    const auto notes = after.notes();
    EXPECT_TRUE(has_note(notes, std::string("loaded custom-op library ") + REPLAY_TEST_OP_LIBRARY));
    EXPECT_TRUE(has_note(notes, "could not load custom-op library " + absent + ": "));
    const Prepared p = after.prepare(scaled_add());
    ASSERT_EQ(p.disposition, Disposition::Ready) << p.reason;
    EXPECT_EQ(after.run(p.handle), "");
    ::unsetenv("REPLAY_TORCH_LIBRARIES");
}

TEST(OpLibraries, MissingOpsNameWhatWouldProvideThem) {
    using torch_detail::missing_op_reason;
    EXPECT_NE(missing_op_reason("aten::_grouped_mm").find("has no aten::_grouped_mm"),
              std::string::npos);
    EXPECT_NE(missing_op_reason("vllm::moe_forward").find("vLLM custom op"), std::string::npos);
    EXPECT_NE(missing_op_reason("_moe_C::topk_softmax").find("vllm/_moe_C.abi3.so"),
              std::string::npos);
    EXPECT_NE(missing_op_reason("sgl_kernel::moe_fused_gate").find("sgl_kernel/common_ops"),
              std::string::npos);
}

}  // namespace
}  // namespace replay
