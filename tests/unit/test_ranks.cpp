// Multi-rank replay's parts without a communication library (replay/ranks.h): the launcher's
// environment, per-rank trace paths, collective names and nccl-tests' bus bandwidth.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "replay/ranks.h"

namespace replay {
namespace {

GetEnv env_of(std::map<std::string, std::string> vars) {
    return [vars = std::move(vars)](const char* name) -> const char* {
        auto it = vars.find(name);
        return it == vars.end() ? nullptr : it->second.c_str();
    };
}

TEST(DiscoverRank, NoLauncherIsNoRank) { EXPECT_FALSE(discover_rank(env_of({})).has_value()); }

TEST(DiscoverRank, Torchrun) {
    auto env = discover_rank(env_of({{"RANK", "3"}, {"WORLD_SIZE", "8"}, {"LOCAL_RANK", "1"},
                                     {"MASTER_ADDR", "node7"}, {"MASTER_PORT", "29123"}}));
    ASSERT_TRUE(env);
    EXPECT_EQ(env->launcher, "torchrun");
    EXPECT_EQ(env->rank, 3);
    EXPECT_EQ(env->world_size, 8);
    EXPECT_EQ(env->local_rank, 1);
    EXPECT_EQ(env->master_addr, "node7");
    EXPECT_EQ(env->master_port, 29123);
    EXPECT_FALSE(env->agent_store);
    auto elastic = discover_rank(env_of({{"RANK", "0"}, {"WORLD_SIZE", "2"},
                                         {"TORCHELASTIC_USE_AGENT_STORE", "True"}}));
    ASSERT_TRUE(elastic);
    EXPECT_TRUE(elastic->agent_store);
    EXPECT_EQ(elastic->master_port, 29501);  // beside torchrun's own store
}

TEST(DiscoverRank, MpirunAndSrunWithDefaultRendezvous) {
    auto mpi = discover_rank(env_of({{"OMPI_COMM_WORLD_RANK", "5"}, {"OMPI_COMM_WORLD_SIZE", "6"},
                                     {"OMPI_COMM_WORLD_LOCAL_RANK", "2"}}));
    ASSERT_TRUE(mpi);
    EXPECT_EQ(mpi->launcher, "mpirun");
    EXPECT_EQ(mpi->rank, 5);
    EXPECT_EQ(mpi->local_rank, 2);
    EXPECT_EQ(mpi->master_addr, "127.0.0.1");
    EXPECT_EQ(mpi->master_port, 29500);
    auto slurm = discover_rank(
        env_of({{"SLURM_PROCID", "1"}, {"SLURM_NTASKS", "2"}, {"SLURM_LOCALID", "0"}}));
    ASSERT_TRUE(slurm);
    EXPECT_EQ(slurm->launcher, "srun");
    EXPECT_EQ(slurm->world_size, 2);
}

TEST(DiscoverRank, BadValuesAreErrors) {
    EXPECT_THROW(discover_rank(env_of({{"RANK", "8"}, {"WORLD_SIZE", "8"}})),
                 std::invalid_argument);
    EXPECT_THROW(discover_rank(env_of({{"RANK", "x"}, {"WORLD_SIZE", "8"}})),
                 std::invalid_argument);
    EXPECT_THROW(discover_rank(env_of({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_PORT", "0"}})),
                 std::invalid_argument);
}

TEST(RankTracePath, PatternFolderAndSingleFile) {
    EXPECT_EQ(rank_trace_path("t/rank{rank}.json.gz", 12, 16), "t/rank12.json.gz");
    EXPECT_EQ(rank_trace_path("one.json", 3, 4), "one.json");
    const auto dir = std::filesystem::temp_directory_path() / "replay_test_ranks";
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    for (const char* name : {"worker10.json", "worker2.json.gz", "worker1.json.zst", "notes.txt"})
        std::ofstream(dir / name) << "{}";
    // Natural order: worker1, worker2, worker10; the .txt is no trace.
    EXPECT_EQ(std::filesystem::path(rank_trace_path(dir.string(), 2, 3)).filename(),
              "worker10.json");
    EXPECT_EQ(std::filesystem::path(rank_trace_path(dir.string(), 1, 3)).filename(),
              "worker2.json.gz");
    EXPECT_THROW(rank_trace_path(dir.string(), 0, 4), std::runtime_error);
    std::filesystem::remove_all(dir);
}

TEST(CanonicalCollective, KernelArgsAndAnnotationNames) {
    EXPECT_EQ(canonical_collective("AllReduce"), "all_reduce");
    EXPECT_EQ(canonical_collective("allreduce"), "all_reduce");
    EXPECT_EQ(canonical_collective("all_to_all"), "all_to_all");
    EXPECT_EQ(canonical_collective("_allgather_base"), "all_gather");
    EXPECT_EQ(canonical_collective("all_gather_into_tensor"), "all_gather");
    EXPECT_EQ(canonical_collective("ReduceScatter"), "reduce_scatter");
    EXPECT_EQ(canonical_collective("reduce_scatter_tensor"), "reduce_scatter");
    EXPECT_EQ(canonical_collective("Reduce"), "reduce");
    EXPECT_EQ(canonical_collective("SendRecv"), "send_recv");
    EXPECT_EQ(canonical_collective("unknown"), "");
}

TEST(BusBandwidth, NcclTestsDefinitions) {
    CollectiveRecipe r;
    r.dtype = DType::Float32;
    r.in_nelems = r.out_nelems = 1 << 20;  // 4 MiB
    // all_reduce over 8: algbw = 4 MiB / 1 ms, busbw = algbw * 2 * 7 / 8.
    const double algbw = 4.0 * (1 << 20) / 1e-3 / 1e9;
    EXPECT_NEAR(bus_bandwidth_gbps(r, "all_reduce", 8, 1000), algbw * 1.75, 1e-9);
    EXPECT_NEAR(bus_bandwidth_gbps(r, "all_to_all", 8, 1000), algbw * 7 / 8, 1e-9);
    EXPECT_NEAR(bus_bandwidth_gbps(r, "broadcast", 8, 1000), algbw, 1e-9);
    // all_gather's size is the gathered output: from out_nelems, or in x ranks.
    CollectiveRecipe g = r;
    g.out_nelems = 8 << 20;
    EXPECT_EQ(algorithm_bytes(g, "all_gather", 8), std::int64_t{32} << 20);
    g.out_nelems = -1;
    EXPECT_EQ(algorithm_bytes(g, "all_gather", 8), std::int64_t{32} << 20);
    // reduce_scatter's is the input.
    CollectiveRecipe s = r;
    s.in_nelems = 8 << 20;
    s.out_nelems = 1 << 20;
    EXPECT_EQ(algorithm_bytes(s, "reduce_scatter", 8), std::int64_t{32} << 20);
    EXPECT_EQ(bus_bandwidth_gbps(r, "all_reduce", 8, 0), 0);
    EXPECT_EQ(bus_bandwidth_factor("all_reduce", 1), 0);
}

}  // namespace
}  // namespace replay
