// CUDA backend tests (CTest label `gpu`). Each test that needs a GPU skips, with the factory's
// reason, on a machine without a driver or device; the argument-mapping tests run anywhere.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "aten_arguments.h"
#include "replay/backend.h"
#include "replay/cuda_backend.h"
#include "replay/cuda_gemm_args.h"
#include "replay/recipe.h"

namespace replay {
namespace {

#define ASSERT_CUDA(call) ASSERT_EQ((call), cudaSuccess) << #call

Recipe copy_recipe(CopyDirection direction, bool pinned, std::int64_t bytes, bool memset = false) {
    Recipe r;
    r.tier = Tier::Copy;
    CopyRecipe c;
    c.direction = direction;
    c.host_pinned = pinned;
    c.bytes = bytes;
    c.is_memset = memset;
    r.detail = c;
    return r;
}

// Row-major GEMM recipe as the classifier writes it: leading dims from the stored layout.
GemmRecipe gemm(const std::string& op, DType type, std::int64_t m, std::int64_t n, std::int64_t k,
                bool trans_a, bool trans_b, std::int64_t batch = 1, std::int64_t pad = 0) {
    GemmRecipe g;
    g.op = op;
    g.m = m, g.n = n, g.k = k, g.batch = batch;
    g.trans_a = trans_a, g.trans_b = trans_b;
    g.lda = (trans_a ? m : k) + pad;
    g.ldb = (trans_b ? k : n) + pad;
    g.ldc = n;
    g.stride_a = batch > 1 ? (trans_a ? k : m) * g.lda : 0;
    g.stride_b = batch > 1 ? (trans_b ? n : k) * g.ldb : 0;
    g.stride_c = batch > 1 ? m * n : 0;
    g.a_type = g.b_type = g.c_type = type;
    g.beta = 0.0;
    return g;
}

// A recorded fp16 tensor argument of an aten op.
AtenArgument half_tensor(std::vector<std::int64_t> dims, std::int64_t reuse_bytes = kReuseUnknown) {
    return test::tensor_argument(DType::Float16, std::move(dims), {}, reuse_bytes);
}

Recipe as_aten_recipe(AtenRecipe op) {
    Recipe r;
    r.tier = Tier::AtenOp;
    r.detail = std::move(op);
    return r;
}

// Runs tagged 1..2 x runs that alternate between two states: the median time of the runs with
// odd tags (the first state) and of those with even tags, warm-up reads left out.
std::pair<double, double> alternating_medians(std::vector<TimedActivity> activities, int runs) {
    std::vector<double> first, second;
    std::map<std::uint64_t, double> ns;
    for (const auto& a : activities)
        if (!a.warm_read && a.tag > 0) ns[a.tag] += static_cast<double>(a.end_ns - a.start_ns);
    for (const auto& [tag, total] : ns) ((tag - 1) % 2 == 0 ? first : second).push_back(total);
    EXPECT_EQ(first.size(), static_cast<std::size_t>(runs));
    EXPECT_EQ(second.size(), static_cast<std::size_t>(runs));
    if (first.empty() || second.empty()) return {NAN, NAN};
    std::sort(first.begin(), first.end());
    std::sort(second.begin(), second.end());
    return {first[first.size() / 2], second[second.size() / 2]};
}

Recipe as_recipe(const GemmRecipe& g) {
    Recipe r;
    r.tier = Tier::Gemm;
    r.detail = g;
    return r;
}

std::map<std::uint64_t, std::vector<TimedActivity>> by_tag(
    const std::vector<TimedActivity>& activities) {
    std::map<std::uint64_t, std::vector<TimedActivity>> out;
    for (const auto& a : activities) out[a.tag].push_back(a);
    return out;
}

// ---- no GPU needed -----------------------------------------------------------------------------

TEST(GemmArgs, RowMajorRecipeBecomesSwappedColumnMajorCall) {
    // y = x W^T + b with x [5, 1024] and W [3072, 1024]: B = W^T is stored column-major (trans_b).
    GemmRecipe g = gemm("aten::addmm", DType::Float16, 5, 3072, 1024, false, true);
    ASSERT_FALSE(cuda::normalize_gemm(g).has_value());
    const cuda::BlasArgs a = cuda::column_major_args(g);
    EXPECT_EQ(a.m, 3072);
    EXPECT_EQ(a.n, 5);
    EXPECT_EQ(a.k, 1024);
    EXPECT_TRUE(a.transa);  // cuBLAS's A is W, read transposed
    EXPECT_FALSE(a.transb);
    EXPECT_EQ(a.lda, 1024);
    EXPECT_EQ(a.ldb, 1024);
    EXPECT_EQ(a.ldc, 3072);
}

TEST(GemmArgs, DegenerateLeadingDimsAreAdjustedLikePyTorch) {
    GemmRecipe g = gemm("aten::mm", DType::Float32, 1, 8, 4, false, false);
    ASSERT_FALSE(cuda::normalize_gemm(g).has_value());
    const cuda::BlasArgs a = cuda::column_major_args(g);
    EXPECT_EQ(a.n, 1);
    EXPECT_EQ(a.ldc, 8);  // n <= 1: ldc = max(m, 1)
    EXPECT_EQ(a.ldb, 4);  // transb N and n <= 1: ldb = max(k, 1)
}

TEST(GemmArgs, UnsupportedRecipesSayWhy) {
    GemmRecipe g = gemm("aten::mm", DType::Int8, 4, 4, 4, false, false);
    EXPECT_TRUE(cuda::normalize_gemm(g).has_value());
    GemmRecipe empty = gemm("aten::mm", DType::Float16, 0, 4, 4, false, false);
    EXPECT_TRUE(cuda::normalize_gemm(empty).has_value());
}

// PyTorch's workspace sizes: the cuBLASLt one decides which kernels cuBLASLt's heuristic offers
// (split-K needs room), so the replay must take the size PyTorch took.
TEST(BlasWorkspaces, PyTorchsDefaultsAndItsEnvironmentVariables) {
    const char* names[] = {"CUBLAS_WORKSPACE_CONFIG", "CUBLASLT_WORKSPACE_SIZE",
                           "TORCH_CUBLASLT_UNIFIED_WORKSPACE"};
    std::map<std::string, std::string> saved;
    for (const char* name : names)
        if (const char* value = std::getenv(name)) saved[name] = value;
    auto set = [](const char* name, const char* value) {
        if (value == nullptr)
            unsetenv(name);
        else
            setenv(name, value, 1);
    };
    for (const char* name : names) set(name, nullptr);

    auto w = cuda::blas_workspaces_from_environment(9);  // Hopper
    EXPECT_EQ(w.cublas, 32u << 20);
    EXPECT_EQ(w.lt, 1u << 20);
    EXPECT_EQ(cuda::blas_workspaces_from_environment(8).cublas, 4096u * 1024 * 2 + 16 * 1024 * 8);
    set("CUBLAS_WORKSPACE_CONFIG", ":4096:2:16:8");
    EXPECT_EQ(cuda::blas_workspaces_from_environment(9).cublas, 4096u * 1024 * 2 + 16 * 1024 * 8);
    set("CUBLAS_WORKSPACE_CONFIG", "4096");  // unreadable: PyTorch keeps its default
    EXPECT_EQ(cuda::blas_workspaces_from_environment(9).cublas, 32u << 20);
    set("CUBLAS_WORKSPACE_CONFIG", ":1024:1");
    set("TORCH_CUBLASLT_UNIFIED_WORKSPACE", "1");
    EXPECT_EQ(cuda::blas_workspaces_from_environment(9).lt, 1u << 20);
    set("CUBLASLT_WORKSPACE_SIZE", "4096");
    w = cuda::blas_workspaces_from_environment(9);
    EXPECT_EQ(w.cublas, 1u << 20);
    EXPECT_EQ(w.lt, 4u << 20);

    for (const char* name : names) {
        auto it = saved.find(name);
        set(name, it == saved.end() ? nullptr : it->second.c_str());
    }
}

TEST(CudaBackendFactory, StartsOrExplainsWhy) {
    std::string why;
    auto backend = create_cuda_backend(BackendOptions{}, why);
    if (!backend) {
        EXPECT_FALSE(why.empty());
        std::printf("no CUDA backend here: %s\n", why.c_str());
        return;
    }
    EXPECT_EQ(backend->environment().backend, "cuda");
}

// ---- GPU
// -----------------------------------------------------------------------------------------

class CudaBackendTest : public ::testing::Test {
  protected:
    void SetUp() override {
        std::string why;
        backend_ = create_cuda_backend(options_, why);
        if (!backend_) {
            GTEST_SKIP() << "no CUDA backend: " << why;
        }
        timing_ = backend_->environment().timing;
    }
    void TearDown() override { backend_.reset(); }

    std::uint32_t prepare_ready(const Recipe& recipe) {
        const Prepared p = backend_->prepare(recipe);
        EXPECT_EQ(p.disposition, Disposition::Ready) << p.reason;
        return p.handle;
    }

    BackendOptions options_;
    std::unique_ptr<Backend> backend_;
    std::string timing_;
};

TEST_F(CudaBackendTest, EnvironmentDescribesTheDevice) {
    const Environment e = backend_->environment();
    EXPECT_FALSE(e.device_name.empty());
    EXPECT_GE(e.compute_major, 7);
    EXPECT_GT(e.total_memory, 0);
    EXPECT_FALSE(e.driver_version.empty());
    EXPECT_FALSE(e.cuda_runtime_version.empty());
    EXPECT_FALSE(e.cublas_version.empty());
    EXPECT_TRUE(e.timing == "cupti" || e.timing == "cuda-events") << e.timing;
    std::printf(
        "%s sm_%d%d, driver %s, runtime %s, cuBLAS %s, timing %s, SM %d/%d MHz, mem %d MHz\n",
        e.device_name.c_str(), e.compute_major, e.compute_minor, e.driver_version.c_str(),
        e.cuda_runtime_version.c_str(), e.cublas_version.c_str(), e.timing.c_str(), e.sm_clock_mhz,
        e.max_sm_clock_mhz, e.memory_clock_mhz);
    for (const auto& note : e.notes) std::printf("  note: %s\n", note.c_str());
}

TEST_F(CudaBackendTest, CopiesAndMemsetsRun) {
    constexpr std::int64_t kBytes = 1 << 20;
    const std::vector<Recipe> recipes = {
        copy_recipe(CopyDirection::HostToDevice, true, kBytes),
        copy_recipe(CopyDirection::HostToDevice, false, kBytes),
        copy_recipe(CopyDirection::DeviceToHost, true, kBytes),
        copy_recipe(CopyDirection::DeviceToDevice, false, kBytes),
        copy_recipe(CopyDirection::Device, false, 4 * kBytes, /*memset=*/true),
    };
    std::vector<std::uint32_t> handles;
    for (const auto& r : recipes) handles.push_back(prepare_ready(r));
    for (std::size_t i = 0; i < handles.size(); ++i) backend_->issue(handles[i], 0, 100 + i);
    backend_->synchronize();
    const auto tags = by_tag(backend_->collect());
    for (std::size_t i = 0; i < handles.size(); ++i) {
        const auto it = tags.find(100 + i);
        ASSERT_NE(it, tags.end()) << "no activity for copy " << i;
        for (const auto& a : it->second) {
            EXPECT_GE(a.end_ns, a.start_ns);
            EXPECT_FALSE(a.name.empty());
            std::printf("tag %llu: %s %lld ns\n", static_cast<unsigned long long>(a.tag),
                        a.name.c_str(), static_cast<long long>(a.end_ns - a.start_ns));
        }
    }
    if (timing_ == "cupti") {
        EXPECT_NE(tags.at(100).front().name.find("HtoD (Pinned"), std::string::npos)
            << tags.at(100).front().name;
        EXPECT_NE(tags.at(101).front().name.find("HtoD (Pageable"), std::string::npos)
            << tags.at(101).front().name;
        EXPECT_NE(tags.at(104).front().name.find("Memset"), std::string::npos)
            << tags.at(104).front().name;
    }
}

TEST_F(CudaBackendTest, Fp16GemmWithBiasReportsItsKernel) {
    GemmRecipe g = gemm("aten::addmm", DType::Float16, 5, 3072, 1024, false, true);
    g.bias = true;
    g.bias_type = DType::Float16;
    g.beta = 1.0;
    const std::uint32_t handle = prepare_ready(as_recipe(g));
    CudaGemmBuffers buffers;
    ASSERT_TRUE(cuda_gemm_buffers(*backend_, handle, buffers));
    std::printf("addmm fp16 5x3072x1024 + bias via %s\n", buffers.api.c_str());
    EXPECT_EQ(buffers.api, "cublasLt");
    for (std::uint64_t tag = 1; tag <= 3; ++tag) backend_->issue(handle, 0, tag);
    backend_->synchronize();
    const auto activities = backend_->collect();
    ASSERT_FALSE(activities.empty());
    bool kernel_seen = false;
    for (const auto& a : activities) {
        std::printf("tag %llu: %s %lld ns\n", static_cast<unsigned long long>(a.tag),
                    a.name.c_str(), static_cast<long long>(a.end_ns - a.start_ns));
        if (!a.name.empty() && a.end_ns > a.start_ns) kernel_seen = true;
        if (timing_ == "cupti") {
            EXPECT_TRUE(a.per_kernel);
        }
    }
    EXPECT_TRUE(kernel_seen);
    // Kernel names come from CUPTI; with the CUDA-event fallback the notes say why CUPTI failed.
    EXPECT_EQ(timing_, "cupti") << [&] {
        std::string notes;
        for (const auto& note : backend_->environment().notes) notes += note + "; ";
        return notes;
    }();
}

TEST_F(CudaBackendTest, BatchedBaddbmmRuns) {
    GemmRecipe g = gemm("aten::baddbmm", DType::Float16, 5, 5, 64, false, true, 16);
    g.beta = 1.0;
    g.alpha = 0.125;
    const std::uint32_t handle = prepare_ready(as_recipe(g));
    CudaGemmBuffers buffers;
    ASSERT_TRUE(cuda_gemm_buffers(*backend_, handle, buffers));
    EXPECT_EQ(buffers.api, "cublas strided batched");
    backend_->issue(handle, 0, 7);
    backend_->synchronize();
    const auto activities = backend_->collect();
    ASSERT_FALSE(activities.empty());
    for (const auto& a : activities) {
        EXPECT_EQ(a.tag, 7u);
        EXPECT_GE(a.end_ns, a.start_ns);
        std::printf("baddbmm: %s %lld ns\n", a.name.c_str(),
                    static_cast<long long>(a.end_ns - a.start_ns));
    }
}

struct Fp32Case {
    const char* name;
    const char* op;
    bool trans_a, trans_b;
    std::int64_t batch;
    bool bias;
    double alpha, beta;
};

class Fp32GemmTest : public CudaBackendTest, public ::testing::WithParamInterface<Fp32Case> {};

TEST_P(Fp32GemmTest, MatchesCpuReference) {
    const Fp32Case& c = GetParam();
    GemmRecipe g = gemm(c.op, DType::Float32, 7, 9, 33, c.trans_a, c.trans_b, c.batch, /*pad=*/3);
    g.alpha = c.alpha;
    g.beta = c.beta;
    g.bias = c.bias;
    if (c.bias) g.bias_type = DType::Float32;
    const std::uint32_t handle = prepare_ready(as_recipe(g));
    CudaGemmBuffers buffers;
    ASSERT_TRUE(cuda_gemm_buffers(*backend_, handle, buffers));
    std::printf("%s via %s\n", c.name, buffers.api.c_str());

    std::mt19937 rng(42);
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    auto random = [&](std::int64_t n) {
        std::vector<float> v(static_cast<std::size_t>(n));
        for (auto& x : v) x = uniform(rng);
        return v;
    };
    const auto a = random(buffers.a_elements), b = random(buffers.b_elements),
               c0 = random(buffers.c_elements);
    const auto bias = random(std::max<std::int64_t>(buffers.bias_elements, 1));
    ASSERT_CUDA(cudaMemcpy(buffers.a, a.data(), a.size() * sizeof(float), cudaMemcpyHostToDevice));
    ASSERT_CUDA(cudaMemcpy(buffers.b, b.data(), b.size() * sizeof(float), cudaMemcpyHostToDevice));
    ASSERT_CUDA(
        cudaMemcpy(buffers.c, c0.data(), c0.size() * sizeof(float), cudaMemcpyHostToDevice));
    if (c.bias) {
        ASSERT_CUDA(
            cudaMemcpy(buffers.bias, bias.data(), 9 * sizeof(float), cudaMemcpyHostToDevice));
    }
    ASSERT_CUDA(cudaDeviceSynchronize());

    backend_->issue(handle, 0, 1);
    backend_->synchronize();
    std::vector<float> out(c0.size());
    ASSERT_CUDA(
        cudaMemcpy(out.data(), buffers.c, out.size() * sizeof(float), cudaMemcpyDeviceToHost));

    // Reference in double, in the recipe's row-major terms.
    double err2 = 0, ref2 = 0;
    for (std::int64_t p = 0; p < g.batch; ++p)
        for (std::int64_t i = 0; i < g.m; ++i)
            for (std::int64_t j = 0; j < g.n; ++j) {
                double sum = 0;
                for (std::int64_t l = 0; l < g.k; ++l) {
                    const double x =
                        a[p * g.stride_a + (g.trans_a ? l * g.lda + i : i * g.lda + l)];
                    const double y =
                        b[p * g.stride_b + (g.trans_b ? j * g.ldb + l : l * g.ldb + j)];
                    sum += x * y;
                }
                const std::int64_t at = p * g.stride_c + i * g.ldc + j;
                const double expected = c.alpha * sum + (c.bias ? bias[j] : c.beta * c0[at]);
                err2 += (out[at] - expected) * (out[at] - expected);
                ref2 += expected * expected;
            }
    const double relative = std::sqrt(err2 / ref2);
    EXPECT_LT(relative, 1e-5) << c.name;
    std::printf("%s: relative error %.3g\n", c.name, relative);
}

INSTANTIATE_TEST_SUITE_P(
    Layouts, Fp32GemmTest,
    ::testing::Values(Fp32Case{"mm_nn", "aten::mm", false, false, 1, false, 1.0, 0.0},
                      Fp32Case{"mm_tn", "aten::mm", true, false, 1, false, 1.0, 0.0},
                      Fp32Case{"mm_nt", "aten::mm", false, true, 1, false, 1.0, 0.0},
                      Fp32Case{"mm_tt", "aten::mm", true, true, 1, false, 1.0, 0.0},
                      Fp32Case{"addmm_bias_lt", "aten::addmm", false, true, 1, true, 0.5, 1.0},
                      Fp32Case{"addmm_beta", "aten::addmm", true, false, 1, false, 2.0, 0.5},
                      Fp32Case{"bmm_nt", "aten::bmm", false, true, 3, false, 1.0, 0.0},
                      Fp32Case{"baddbmm_tn", "aten::baddbmm", true, false, 4, false, 0.25, 1.0}),
    [](const auto& info) { return std::string(info.param.name); });

TEST_F(CudaBackendTest, StreamsWaitAndFlush) {
    backend_->set_stream_count(2);
    GemmRecipe g = gemm("aten::mm", DType::BFloat16, 256, 1024, 1024, false, false);
    const std::uint32_t handle = prepare_ready(as_recipe(g));
    backend_->issue(handle, 0, 1);
    backend_->stream_wait(1, 0);
    backend_->issue(handle, 1, 2);
    backend_->flush_l2();
    backend_->issue(handle, 0, 3);
    backend_->synchronize();
    const auto tags = by_tag(backend_->collect());
    ASSERT_EQ(tags.count(1), 1u);
    ASSERT_EQ(tags.count(2), 1u);
    ASSERT_EQ(tags.count(3), 1u);
    std::int64_t end1 = 0, start2 = INT64_MAX;
    for (const auto& a : tags.at(1)) end1 = std::max(end1, a.end_ns);
    for (const auto& a : tags.at(2)) {
        start2 = std::min(start2, a.start_ns);
        EXPECT_EQ(a.stream, 1);
    }
    EXPECT_GE(start2, end1) << "stream 1 did not wait for stream 0";
    std::printf("gap between the waited GEMMs: %lld ns\n", static_cast<long long>(start2 - end1));
}

TEST_F(CudaBackendTest, SkipsWhatItCannotRun) {
    EXPECT_EQ(backend_->prepare(as_recipe(gemm("aten::mm", DType::Int8, 8, 8, 8, false, false)))
                  .disposition,
              Disposition::Skipped);
    EXPECT_EQ(backend_->prepare(copy_recipe(CopyDirection::HostToDevice, true, 0)).disposition,
              Disposition::Skipped);
    Recipe collective;
    collective.tier = Tier::Collective;
    collective.detail = CollectiveRecipe{};
    EXPECT_EQ(backend_->prepare(collective).disposition, Disposition::Skipped);
    Recipe none;
    EXPECT_EQ(backend_->prepare(none).disposition, Disposition::Skipped);
    EXPECT_THROW(backend_->issue(12345, 0, 1), std::out_of_range);
}

TEST_F(CudaBackendTest, AtenOpsNeedLibtorch) {
    AtenRecipe op;
    op.op = "aten::relu";
    op.args.push_back(half_tensor({4, 8}));
    const Prepared p = backend_->prepare(as_aten_recipe(op));
    if (backend_->environment().libtorch_version.empty()) {
        EXPECT_EQ(p.disposition, Disposition::Skipped);
        EXPECT_NE(p.reason.find("libtorch"), std::string::npos) << p.reason;
    } else {
        std::printf("aten::relu through libtorch: %s %s\n", to_string(p.disposition),
                    p.reason.c_str());
        if (p.disposition == Disposition::Ready) {
            backend_->issue(p.handle, 0, 9);
            backend_->synchronize();
            EXPECT_FALSE(backend_->collect().empty());
        }
    }
}

// A libtorch op runs once outside any capture before its trial capture: libtorch keeps the
// cuDNN plan of an op's first run, and one planned inside a capture can be a fallback (a UNet's
// persistent convolutions launched 126 CTAs instead of 128 and ran 1.3x slow in every graph
// after). The trial itself records nothing that runs; the first run leaves a kernel record.
TEST_F(CudaBackendTest, ALibtorchOpRunsOutsideACaptureBeforeItsTrialCapture) {
    if (backend_->environment().libtorch_version.empty()) GTEST_SKIP() << "no libtorch";
    AtenRecipe op;
    op.op = "aten::relu";
    op.args.push_back(half_tensor({64, 1024}));
    const std::uint32_t handle = prepare_ready(as_aten_recipe(op));
    backend_->synchronize();
    backend_->collect();
    EXPECT_EQ(backend_->capture_blocker(handle, 0), "");
    backend_->synchronize();
    const auto first = backend_->collect();
    ASSERT_EQ(first.size(), 1u) << "the op's first run, outside the trial capture";
    EXPECT_NE(first.front().name.find("elementwise"), std::string::npos) << first.front().name;
    // Once is enough: a second trial runs nothing.
    EXPECT_EQ(backend_->capture_blocker(handle, 0), "");
    backend_->synchronize();
    EXPECT_TRUE(backend_->collect().empty());
}

// Unique mode's --context recorded and sequential mode read into L2 the inputs the recording had
// cached: an elementwise add over two 8 MiB activations, both just written in the recording,
// runs measurably faster after warm_inputs than after an L2 flush alone.
TEST_F(CudaBackendTest, WarmedInputsAreServedFromL2) {
    if (backend_->environment().libtorch_version.empty()) GTEST_SKIP() << "no libtorch";
    AtenRecipe add;
    add.op = "aten::add";
    add.overload = "Tensor";
    for (int i = 0; i < 2; ++i) add.args.push_back(half_tensor({4096, 1024}, 0));  // just written
    add.args.push_back(test::scalar_argument("1"));                                // alpha
    const std::uint32_t handle = prepare_ready(as_aten_recipe(add));
    // A GEMM's operands can be warmed too (A: an activation, B: a first-touch weight).
    GemmRecipe g = gemm("aten::mm", DType::Float16, 256, 1024, 1024, false, false);
    g.a_reuse_bytes = 1 << 20;
    g.b_reuse_bytes = kReuseFirstTouch;
    backend_->warm_inputs(prepare_ready(as_recipe(g)), 0, 0);

    constexpr int kRuns = 30;
    for (int run = 0; run < 2 * kRuns; ++run) {
        backend_->flush_l2();
        if (run % 2 == 1) backend_->warm_inputs(handle, 0, 0);
        backend_->issue(handle, 0, static_cast<std::uint64_t>(run) + 1);
    }
    backend_->synchronize();
    const auto [cold_median, warm_median] = alternating_medians(backend_->collect(), kRuns);
    std::printf("add of two 8 MiB fp16 tensors: %.0f ns after a flush, %.0f ns warmed (%.2fx)\n",
                cold_median, warm_median, cold_median / warm_median);
    EXPECT_LT(warm_median, 0.95 * cold_median);
}

// Unique mode's --instruction-cache cold: after evict_instruction_caches() a kernel fetches its
// code again. The reduction Mixtral's decode records at 4.0 us (aten::sum of [1, 2, 1024] float
// over dim 1, reduce_kernel<128, 4>), timed after an L2 eviction alone (its code still in the SMs
// from the run before) and after the eviction and the emptied instruction caches (in unique
// replays on the H200: 1.8 us warm, 4.1 cold).
TEST_F(CudaBackendTest, EmptiedInstructionCachesMakeASmallKernelFetchItsCode) {
    if (backend_->environment().libtorch_version.empty()) GTEST_SKIP() << "no libtorch";
    AtenRecipe sum;
    sum.op = "aten::sum";
    sum.overload = "dim_IntList";
    sum.args = {test::tensor_argument(DType::Float32, {1, 2, 1024}),
                test::scalar_argument("[1]", ArgKind::ScalarList), test::scalar_argument("False"),
                AtenArgument{}};
    sum.args.back().kind = ArgKind::None;
    const std::uint32_t handle = prepare_ready(as_aten_recipe(sum));
    constexpr int kRuns = 40;
    for (int run = 0; run < 2 * kRuns; ++run) {
        backend_->flush_l2();
        if (run % 2 == 1) backend_->evict_instruction_caches();
        backend_->issue(handle, 0, static_cast<std::uint64_t>(run) + 1);
    }
    backend_->synchronize();
    const auto [warm_median, cold_median] = alternating_medians(backend_->collect(), kRuns);
    const double ratio = cold_median / warm_median;
    std::printf(
        "sum of [1, 2, 1024] float over dim 1: %.0f ns with its code in the SMs, %.0f ns "
        "fetched again (%.2fx)\n",
        warm_median, cold_median, ratio);
    EXPECT_GT(ratio, 1.2);
}

TEST(CudaBackendEvents, EventTimingWhenCuptiIsOff) {
    BackendOptions options;
    options.use_cupti = false;
    std::string why;
    auto backend = create_cuda_backend(options, why);
    if (!backend) {
        GTEST_SKIP() << "no CUDA backend: " << why;
    }
    EXPECT_EQ(backend->environment().timing, "cuda-events");
    const Prepared p =
        backend->prepare(as_recipe(gemm("aten::mm", DType::Float16, 128, 256, 512, false, false)));
    ASSERT_EQ(p.disposition, Disposition::Ready) << p.reason;
    backend->issue(p.handle, 0, 5);
    backend->issue(p.handle, 0, 6);
    backend->synchronize();
    const auto activities = backend->collect();
    ASSERT_EQ(activities.size(), 2u);
    for (const auto& a : activities) {
        EXPECT_FALSE(a.per_kernel);
        EXPECT_GT(a.end_ns, a.start_ns);
        EXPECT_FALSE(a.name.empty());
    }
}

}  // namespace
}  // namespace replay
