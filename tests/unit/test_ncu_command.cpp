// The Nsight hooks: NVTX range names and the ncu command line of `replay ncu-cmd`.
#include <gtest/gtest.h>

#include "replay/ncu_command.h"

namespace {

TEST(NcuCommand, FunctionNameAsNsightComputeShowsIt) {
    using replay::kernel_function_name;
    EXPECT_EQ(kernel_function_name(
                  "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::Half, "
                  "float>(int, float, c10::Half const*, c10::Half const*, c10::Half const*, float*, "
                  "float*, c10::Half*)"),
              "vectorized_layer_norm_kernel");
    EXPECT_EQ(kernel_function_name("nvjet_sm90_hsh_64x8_64x16_4x1_v_bz_bias_TNT"),
              "nvjet_sm90_hsh_64x8_64x16_4x1_v_bz_bias_TNT");
    EXPECT_EQ(kernel_function_name(
                  "void cutlass::Kernel2<cutlass_75_wmma_tensorop_f16_s161616gemm_f16_32x32_128x2_"
                  "tn_align8>(cutlass_75_wmma_tensorop_f16_s161616gemm_f16_32x32_128x2_tn_align8::"
                  "Params)"),
              "Kernel2");
    EXPECT_EQ(kernel_function_name(
                  "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
                  "at::detail::Array<char*, 1> >(int, at::native::FillFunctor<float>, "
                  "at::detail::Array<char*, 1>)"),
              "vectorized_elementwise_kernel");
    EXPECT_EQ(kernel_function_name("void (anonymous namespace)::softmax_warp_forward<c10::Half, "
                                   "c10::Half, float, 10, false, false>(c10::Half*, c10::Half "
                                   "const*, int, int, int, bool const*, int, bool)"),
              "softmax_warp_forward");
    EXPECT_EQ(kernel_function_name("void gemv2T_kernel_val<int, int, __half, 128, 16, 4, 4, false, "
                                   "false>(cublasGemvParamsEx<int, cublasGemvTensorStridedBatched<"
                                   "__half const>, float>, float, float)"),
              "gemv2T_kernel_val");
    EXPECT_EQ(kernel_function_name("kernel_k(float*) const"), "kernel_k");
}

TEST(NcuCommand, ShellQuotingAndRegexEscaping) {
    EXPECT_EQ(replay::shell_quote("traces/a.json.gz"), "traces/a.json.gz");
    EXPECT_EQ(replay::shell_quote("a b"), "'a b'");
    EXPECT_EQ(replay::shell_quote("it's"), "'it'\\''s'");
    EXPECT_EQ(replay::shell_quote(""), "''");
    EXPECT_EQ(replay::regex_escape("f<int>(a.b)*"), "f<int>\\(a\\.b\\)\\*");
}

TEST(NcuCommand, RangeNameAndCommandLine) {
    EXPECT_EQ(replay::nvtx_range_name("00ff", "gemm_k", 3), "00ff gemm_k (iteration 3)");
    replay::NcuTarget t;
    t.kernel_id = "96700cb4f2569b91";
    t.kernel_name = "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::Half, "
                    "float>(int, float)";
    t.replay = "/opt/replay/bin/replay";
    t.source_args = {"traces/h200/bloom.json.gz", "--et", "my et.json"};
    t.out_dir = "ncu_out";
    t.report = "ncu_96700cb4f2569b91";
    EXPECT_EQ(replay::ncu_command(t),
              "ncu --nvtx --nvtx-include '96700cb4f2569b91 void at::native::(anonymous "
              "namespace)::vectorized_layer_norm_kernel<c10::Half, float>(int, float) (iteration "
              "1)/' -k regex:vectorized_layer_norm_kernel -c 1 -o ncu_96700cb4f2569b91 "
              "/opt/replay/bin/replay traces/h200/bloom.json.gz --et 'my et.json' --mode unique "
              "--only 96700cb4f2569b91 --warmup 0 --runs 1 --no-sequential-check --nvtx --backend "
              "cuda --out ncu_out");
}

}  // namespace
