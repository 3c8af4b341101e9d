// Sweeps on the CPU: grid progressions, explicit lists, parts and SLURM arrays; configs in YAML
// and JSON; the CSV resumed after a kill (a torn last line); recipe dims. --set-dims:
// test_set_dims.cpp.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>

#include "replay/recipe_dims.h"
#include "replay/source.h"
#include "replay/sweep_config.h"
#include "replay/sweep_csv.h"
#include "replay/sweep_grid.h"
#include "test_support.h"

namespace replay {
namespace {

using Env = std::map<std::string, std::string>;
auto env_of(const Env& env) {
    return [env](const char* name) -> const char* {
        auto it = env.find(name);
        return it == env.end() ? nullptr : it->second.c_str();
    };
}

TEST(SweepGrid, ProgressionsMulAndAdd) {
    EXPECT_EQ(progression(1, 2, 16, Progression::Mul), (std::vector<std::int64_t>{1, 2, 4, 8, 16}));
    EXPECT_EQ(progression(1024, 512, 2600, Progression::Add), (std::vector<std::int64_t>{1024, 1536, 2048, 2560}));
    EXPECT_EQ(progression(3, 3, 3, Progression::Mul), (std::vector<std::int64_t>{3}));
    EXPECT_THROW(progression(1, 1, 16, Progression::Mul), std::invalid_argument);
    EXPECT_THROW(progression(0, 2, 16, Progression::Add), std::invalid_argument);
    EXPECT_THROW(progression(8, 2, 4, Progression::Add), std::invalid_argument);
}

TEST(SweepGrid, CartesianProductLastDimFastest) {
    const auto points = expand_grid({{"b", {1, 2}}, {"s", {5, 6, 7}}});
    ASSERT_EQ(points.size(), 6u);
    EXPECT_EQ(points[0], (std::vector<std::int64_t>{1, 5}));
    EXPECT_EQ(points[1], (std::vector<std::int64_t>{1, 6}));
    EXPECT_EQ(points[5], (std::vector<std::int64_t>{2, 7}));
    EXPECT_THROW(expand_grid({{"b", {1}}, {"b", {2}}}), std::invalid_argument);
    EXPECT_THROW(expand_grid({{"b", {1, 2, 3}}, {"s", {1, 2, 3}}}, 8), std::invalid_argument);
}

TEST(SweepGrid, PartsCoverTheGridOnceEach) {
    std::multiset<std::size_t> seen;
    for (int part = 1; part <= 3; ++part) {
        const auto mine = part_indices(10, choose_part(3, part, env_of({})));
        seen.insert(mine.begin(), mine.end());
        EXPECT_GE(mine.size(), 3u);
    }
    EXPECT_EQ(seen.size(), 10u);
    for (std::size_t i = 0; i < 10; ++i) EXPECT_EQ(seen.count(i), 1u);
    EXPECT_EQ(part_indices(5, choose_part(2, 2, env_of({}))), (std::vector<std::size_t>{1, 3}));
    EXPECT_THROW(choose_part(2, 3, env_of({})), std::invalid_argument);
    EXPECT_THROW(choose_part(2, 0, env_of({})), std::invalid_argument);  // --parts needs --part
}

TEST(SweepGrid, SlurmArrayTaskIdPicksThePart) {
    // --array=0-3: ids 0..3, part = id - min + 1; parts from the task count.
    GridPart p = choose_part(0, 0, env_of({{"SLURM_ARRAY_TASK_ID", "2"}, {"SLURM_ARRAY_TASK_MIN", "0"},
                                           {"SLURM_ARRAY_TASK_COUNT", "4"}}));
    EXPECT_EQ(p.parts, 4);
    EXPECT_EQ(p.part, 3);
    EXPECT_EQ(p.source, "SLURM_ARRAY_TASK_ID");
    // --array=1-4 with --parts 4.
    p = choose_part(4, 0, env_of({{"SLURM_ARRAY_TASK_ID", "4"}, {"SLURM_ARRAY_TASK_MIN", "1"}}));
    EXPECT_EQ(p.part, 4);
    // --part wins over the environment.
    p = choose_part(4, 1, env_of({{"SLURM_ARRAY_TASK_ID", "3"}}));
    EXPECT_EQ(p.part, 1);
    EXPECT_THROW(choose_part(2, 0, env_of({{"SLURM_ARRAY_TASK_ID", "7"}})), std::invalid_argument);
}

TEST(SweepConfig, YamlSeedStyleAndJsonListsMeanTheSame) {
    // The kernel-sampling style: a flow mapping with single quotes and comments.
    const std::string yaml = R"({
  # mp, b
  "kernels": {"names": ['layer_norm'], "tiers": [2]},
  "dims": ['arg0.d0', 'arg0.d1'],
  "starts": [1, 128],
  "steps": [2, 128],
  "ends": [4, 384],
  "operators": ['mul', 'add'],
  "runs": 7
})";
    const SweepConfig a = parse_sweep_config(yaml, "a.yml");
    ASSERT_EQ(a.sweeps.size(), 1u);
    EXPECT_EQ(a.sweeps[0].kernels.names, std::vector<std::string>{"layer_norm"});
    EXPECT_EQ(a.sweeps[0].kernels.tiers, std::vector<int>{2});
    EXPECT_EQ(a.sweeps[0].dims[0].values, (std::vector<std::int64_t>{1, 2, 4}));
    EXPECT_EQ(a.sweeps[0].dims[1].values, (std::vector<std::int64_t>{128, 256, 384}));
    EXPECT_EQ(a.runs, 7);
    const std::string json = R"({"runs": 7, "sweeps": [{"kernels": {"names": ["layer_norm"], "tiers": [2]},
        "dims": {"arg0.d0": [1, 2, 4], "arg0.d1": {"start": 128, "step": 128, "end": 384, "operator": "add"}}}]})";
    const SweepConfig b = parse_sweep_config(json, "b.json");
    ASSERT_EQ(b.sweeps.size(), 1u);
    EXPECT_EQ(b.sweeps[0].dims[0].values, a.sweeps[0].dims[0].values);
    EXPECT_EQ(b.sweeps[0].dims[1].values, a.sweeps[0].dims[1].values);
    const std::string block = "kernels:\n  ids: [abc]\ndims:\n  m: [1, 2]\n  n: {start: 64, step: 4, end: 256}\n";
    const SweepConfig c = parse_sweep_config(block, "c.yaml");
    EXPECT_EQ(c.sweeps[0].dims[1].values, (std::vector<std::int64_t>{64, 256}));
}

TEST(SweepConfig, MistakesNameTheKeyAndWhere) {
    const auto message = [](const std::string& text) {
        try {
            parse_sweep_config(text, "bad.yaml");
        } catch (const InputError& e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    EXPECT_NE(message("dims: {m: [1]}\n").find("'kernels'"), std::string::npos);
    EXPECT_NE(message("kernels: {names: [x]}\ndims: [m]\nstarts: [1]\nsteps: [1]\nends: [4]\noperators: [mul]\n")
                  .find("mul step"),
              std::string::npos);
    EXPECT_NE(message("kernels: {names: [x]}\ndims: [m, n]\nstarts: [1]\nsteps: [2]\nends: [4]\noperators: [mul]\n")
                  .find("starts has 1 entries for 2 dims"),
              std::string::npos);
    EXPECT_NE(message("kernels: {names: [x]}\ndims: {m: [1, a]}\n").find("expected an integer"), std::string::npos);
    EXPECT_NE(message("kernels: {names: [x]}\ndims: {m: [1]}\nbogus: 1\n").find("unknown key 'bogus'"),
              std::string::npos);
    EXPECT_NE(message("kernels: [\n").find("bad.yaml"), std::string::npos);
}

std::string temp_csv(const std::string& name) {
    return (std::filesystem::temp_directory_path() /
            ("replay_sweep_" + std::to_string(::getpid()) + "_" + name))
        .string();
}

TEST(SweepCsv, ResumesAfterAKillWithATornLastLine) {
    const std::string path = temp_csv("resume.csv");
    std::filesystem::remove(path);
    {
        SweepCsvWriter w(path, {"m", "n"});
        for (std::int64_t m : {1, 2}) {
            SweepRow row;
            row.dims = {m, 8};
            row.samples = 3;
            row.median_us = 1.5 * static_cast<double>(m);
            row.flops = 100;
            row.bytes = 1000;
            w.append(row);
        }
    }
    {  // the kill: half a row, no newline
        std::ofstream out(path, std::ios::app);
        out << "3,8,100,10";
    }
    const SweepTable torn = read_sweep_csv(path);
    EXPECT_TRUE(torn.torn);
    EXPECT_EQ(torn.rows.size(), 2u);
    {
        SweepCsvWriter w(path, {"m", "n"});
        EXPECT_TRUE(w.repaired());
        EXPECT_EQ(w.rows_at_open(), 2u);
        EXPECT_TRUE(w.done({1, 8}));
        EXPECT_TRUE(w.done({2, 8}));
        EXPECT_FALSE(w.done({3, 8}));
        SweepRow row;
        row.dims = {3, 8};
        row.status = "skipped: over budget, really";
        w.append(row);
    }
    const SweepTable back = read_sweep_csv(path);
    EXPECT_FALSE(back.torn);
    EXPECT_EQ(back.malformed, 0u);
    ASSERT_EQ(back.rows.size(), 3u);
    EXPECT_EQ(back.rows[2][0], "3");
    EXPECT_EQ(back.rows[2][back.column("status", path)], "skipped: over budget; really");
    EXPECT_EQ(back.rows[0][back.column("gflops_per_s", path)], "0.067");  // 100 flop / 1.5 us
    EXPECT_EQ(back.columns, sweep_csv_columns({"m", "n"}));
    // Another sweep's dims in the same file is refused.
    EXPECT_THROW(SweepCsvWriter(path, {"k"}), InputError);
    std::filesystem::remove(path);
}

TEST(RecipeDims, GemmLeadingDimsFollowTightOnesAndKeepPaddedOnes) {
    Recipe r;
    r.tier = Tier::Gemm;
    GemmRecipe g;
    g.op = "aten::baddbmm";
    g.m = 5, g.n = 5, g.k = 64, g.batch = 16;
    g.trans_b = true;
    g.lda = 3072, g.ldb = 3072, g.ldc = 5;  // q, k: slices of a fused projection
    g.stride_a = 192, g.stride_b = 192, g.stride_c = 25;
    g.a_type = g.b_type = g.c_type = DType::Float16;
    r.detail = g;
    const Recipe big = with_dims(r, {{"m", 128}, {"n", 128}, {"batch", 64}});
    const auto& b = std::get<GemmRecipe>(big.detail);
    EXPECT_EQ(b.lda, 3072);
    EXPECT_EQ(b.stride_a, 192);
    EXPECT_EQ(b.ldc, 128);
    EXPECT_EQ(b.stride_c, 128 * 128);
    EXPECT_DOUBLE_EQ(recipe_work(big).flops, 2.0 * 128 * 128 * 64 * 64);
    EXPECT_DOUBLE_EQ(recipe_work(r).padded_elements, 5.0 * 8 * 16);  // m x pow2(n) x batch
    EXPECT_THROW(with_dims(r, {{"q", 1}}), std::invalid_argument);
    EXPECT_THROW(with_dims(r, {{"m", 0}}), std::invalid_argument);
    EXPECT_EQ(varying_fields({r, big}), (std::vector<std::string>{"m", "n", "batch"}));
    EXPECT_EQ(recipe_family(r, {"m", "n", "batch"}), recipe_family(big, {"m", "n", "batch"}));
    EXPECT_NE(recipe_family(r, {"m"}), recipe_family(big, {"m"}));
}

TEST(RecipeDims, OpDimsAreTiedToEqualDims) {
    Recipe r;
    r.tier = Tier::AtenOp;
    AtenRecipe a;
    a.op = "aten::native_layer_norm";
    AtenArgument x{ArgKind::Tensor, "c10::Half", {TensorSpec{{1, 5, 1024}, {5120, 1024, 1}, DType::Float16}}, ""};
    AtenArgument shape{ArgKind::ScalarList, "ScalarList", {}, "[1024]"};
    AtenArgument w{ArgKind::Tensor, "c10::Half", {TensorSpec{{1024}, {1}, DType::Float16}}, ""};
    a.args = {x, shape, w};
    r.detail = a;
    EXPECT_EQ(recipe_dim_names(r), (std::vector<std::string>{"arg0.d0", "arg0.d1", "arg0.d2", "arg1.d0", "arg2.d0"}));
    const Recipe wide = with_dims(r, {{"arg0.d1", 7}, {"arg0.d2", 2048}});
    const auto& out = std::get<AtenRecipe>(wide.detail);
    EXPECT_EQ(out.args[0].tensors[0].dims, (std::vector<std::int64_t>{1, 7, 2048}));
    EXPECT_EQ(out.args[0].tensors[0].strides, (std::vector<std::int64_t>{7 * 2048, 2048, 1}));
    EXPECT_EQ(out.args[1].value, "[2048]");
    EXPECT_EQ(out.args[2].tensors[0].dims, (std::vector<std::int64_t>{2048}));
    EXPECT_EQ(recipe_dtype_label(r), "fp16");
    EXPECT_EQ(recipe_short_name(r), "native_layer_norm");
    // Ties follow the recorded values, not a value another named dim was just set to: 1024 rows
    // of 256, not [1, 256, 256] (16 points of the H200 layer-norm sweep were measured so).
    const Recipe rows = with_dims(r, {{"arg0.d1", 1024}, {"arg0.d2", 256}});
    const auto& tall = std::get<AtenRecipe>(rows.detail);
    EXPECT_EQ(tall.args[0].tensors[0].dims, (std::vector<std::int64_t>{1, 1024, 256}));
    EXPECT_EQ(tall.args[1].value, "[256]");
    EXPECT_EQ(tall.args[2].tensors[0].dims, (std::vector<std::int64_t>{256}));
    EXPECT_DOUBLE_EQ(recipe_work(rows).elements, 1024.0 * 256);
    EXPECT_DOUBLE_EQ(recipe_work(rows).padded_elements, 1024.0 * 256);
    // The padded elements: each row of the largest tensor padded to a power of two.
    const Recipe odd = with_dims(r, {{"arg0.d1", 7}, {"arg0.d2", 1025}});
    EXPECT_DOUBLE_EQ(recipe_work(odd).elements, 7.0 * 1025);
    EXPECT_DOUBLE_EQ(recipe_work(odd).padded_elements, 7.0 * 2048);
    EXPECT_EQ(next_power_of_two(1), 1);
    EXPECT_EQ(next_power_of_two(5), 8);
    EXPECT_EQ(next_power_of_two(1024), 1024);
    EXPECT_EQ(next_power_of_two(0), 0);
}

TEST(RecipeDims, RestrideKeepsOrderAndGaps) {
    EXPECT_EQ(restride({2, 3}, {3, 1}, {4, 5}), (std::vector<std::int64_t>{5, 1}));
    // A head slice of a fused [s, 16, 3, 64] projection: [16, s, 64] with strides [192, 3072, 1].
    EXPECT_EQ(restride({16, 5, 64}, {192, 3072, 1}, {64, 128, 64}), (std::vector<std::int64_t>{192, 12288, 1}));
    EXPECT_EQ(restride({16, 5, 5}, {5, 0, 1}, {64, 128, 128}), (std::vector<std::int64_t>{128, 0, 1}));
}

}  // namespace
}  // namespace replay
