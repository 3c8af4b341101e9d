// The CUDA backend as `replay` gets it: through its module (CTest label `gpu`). On a GPU host the
// module must load and start, and run a copy and a tier-3 op through the libtorch it links; on a
// machine without a GPU the module still loads and the backend says why it cannot start.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "replay/backend.h"

namespace replay {
namespace {

TEST(CudaModule, LoadsAndStartsOrExplainsWhy) {
    std::string why;
    auto backend = make_cuda_backend(BackendOptions{}, why);
    if (!backend) {
        // The module itself loaded (libcudart, cuBLAS, CUPTI, libtorch found): only the machine
        // lacks a GPU or a driver.
        EXPECT_EQ(why.find("backend module"), std::string::npos) << why;
        GTEST_SKIP() << "no CUDA backend here: " << why;
    }
    const Environment env = backend->environment();
    EXPECT_EQ(env.backend, "cuda");
    EXPECT_TRUE(std::any_of(env.notes.begin(), env.notes.end(), [](const std::string& note) {
        return note.starts_with("backend module ") && note.ends_with("libreplay_backend_cuda.so");
    }));

    Recipe copy;
    copy.tier = Tier::Copy;
    copy.detail = CopyRecipe{false, CopyDirection::HostToDevice, true, 1 << 20, 0};
    const Prepared c = backend->prepare(copy);
    ASSERT_EQ(c.disposition, Disposition::Ready) << c.reason;

    Recipe relu;
    relu.tier = Tier::AtenOp;
    AtenRecipe op;
    op.op = "aten::relu";
    AtenArgument input;
    input.kind = ArgKind::Tensor;
    TensorSpec spec;
    spec.dims = {64, 64};
    spec.dtype = DType::Float32;
    input.tensors.push_back(spec);
    op.args.push_back(input);
    relu.detail = op;
    const Prepared r = backend->prepare(relu);
    if (env.libtorch_version.empty())
        EXPECT_EQ(r.disposition, Disposition::Skipped) << r.reason;
    else
        ASSERT_EQ(r.disposition, Disposition::Ready) << r.reason;

    backend->set_stream_count(1);
    backend->issue(c.handle, 0, 1);
    if (r.disposition == Disposition::Ready) backend->issue(r.handle, 0, 2);
    backend->synchronize();
    EXPECT_FALSE(backend->collect().empty());
}

}  // namespace
}  // namespace replay
