// The CPU backend: replays recipes with libtorch's CPU kernels, synchronously, timed with the
// host's steady clock. It needs no GPU, so traces can be checked and their op mix timed anywhere;
// the timings say how the CPU runs the work, not how the recorded GPU did.
//
// Intra-op threads are libtorch's default (one per core, or OMP_NUM_THREADS): the backend does not
// pick a count, so that the environment, not the code, decides; environment() reports it.
#include "replay/cpu_backend.h"

#include <ATen/Parallel.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <utility>
#include <variant>

#include "collectives.h"
#include "replay/backend.h"
#include "replay/tensor_budget.h"
#include "replay/torch_ops.h"

namespace replay {
namespace {

std::size_t last_level_cache_bytes() {
    long llc = sysconf(_SC_LEVEL3_CACHE_SIZE);
    if (llc <= 0) llc = sysconf(_SC_LEVEL2_CACHE_SIZE);
    return llc > 0 ? static_cast<std::size_t>(llc) : std::size_t{32} << 20;
}

std::int64_t now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

std::string cpu_model() {
    std::ifstream in("/proc/cpuinfo");
    for (std::string line; std::getline(in, line);) {
        if (!line.starts_with("model name")) continue;
        const auto colon = line.find(':');
        if (colon == std::string::npos) break;
        const auto first = line.find_first_not_of(" \t", colon + 1);
        return first == std::string::npos ? std::string() : line.substr(first);
    }
    return "unknown CPU";
}

// The BLAS libtorch's CPU GEMMs landed on: Debian's libtorch uses whatever libblas.so.3 the
// alternatives system selects, and the reference (netlib) BLAS is some 30x slower than OpenBLAS.
std::string blas_note() {
    std::ifstream maps("/proc/self/maps");
    for (std::string line; std::getline(maps, line);) {
        const auto slash = line.find('/');
        if (slash == std::string::npos) continue;
        const std::string path = line.substr(slash);
        const std::string file = path.substr(path.rfind('/') + 1);
        if (file.find("blas") == std::string::npos && file.find("mkl_core") == std::string::npos)
            continue;
        std::string note = "BLAS: " + path;
        if (path.find("/blas/libblas.so") != std::string::npos)
            note +=
                " (the reference BLAS: CPU GEMMs some 30x slower than OpenBLAS's; on Debian, "
                "apt-get install libopenblas0-openmp selects OpenBLAS)";
        return note;
    }
    return {};
}

class CpuBackend final : public Backend {
  public:
    explicit CpuBackend(const BackendOptions& options)
        : runner_(TorchDevice{TorchDevice::Kind::Cpu, 0}, options.seed, options.dataflow),
          max_tensor_bytes_(options.max_tensor_bytes),
          memory_cap_(resident_memory() + available_host_memory() / 4 * 3) {
        if (options.distributed.world_size > 1)
            comm_ = std::make_unique<Communicator>(options.distributed);
    }

    Environment environment() const override {
        Environment env;
        env.backend = "cpu";
        env.device_name = cpu_model();
        env.libtorch_version = TorchOpRunner::libtorch_version();
        env.timing = "host-clock";
        const long pages = sysconf(_SC_PHYS_PAGES), page_size = sysconf(_SC_PAGESIZE);
        if (pages > 0 && page_size > 0)
            env.total_memory = static_cast<std::int64_t>(pages) * page_size;
        env.notes.push_back("intra-op threads: " + std::to_string(at::get_num_threads()) +
                            " (libtorch default)");
        env.notes.push_back("timings are whole ops on the host clock, including dispatch overhead");
        if (auto blas = blas_note(); !blas.empty()) env.notes.push_back(std::move(blas));
        for (auto& note : runner_.notes()) env.notes.push_back(std::move(note));
        if (comm_) env.notes.push_back("collectives: " + comm_->description());
        if (failed_runs_ > 0)
            env.notes.push_back(std::to_string(failed_runs_) +
                                " issued runs failed; first: " + first_failure_);
        return env;
    }

    Prepared prepare(const Recipe& recipe) override {
        Prepared result;
        // A quarter of the RAM available at the start stays free, whatever the prepared steps
        // already hold: prepare writes every byte it allocates, and the kernel kills a process
        // that overcommits instead of failing its allocation.
        const TensorBudget budget = host_memory_budget(max_tensor_bytes_, memory_cap_,
                                                       resident_memory(), available_host_memory());
        if (auto why = over_budget(recipe, budget)) {
            result.reason = std::move(*why);
            return result;
        }
        switch (recipe.tier) {
            case Tier::Copy:
                if (const auto* copy = std::get_if<CopyRecipe>(&recipe.detail))
                    return runner_.prepare_copy(*copy);
                break;
            case Tier::Gemm:
                if (const auto* gemm = std::get_if<GemmRecipe>(&recipe.detail))
                    return runner_.prepare_gemm(*gemm);
                break;
            case Tier::AtenOp:
                if (const auto* aten = std::get_if<AtenRecipe>(&recipe.detail))
                    return runner_.prepare(*aten);
                break;
            case Tier::Collective:
                if (const auto* c = std::get_if<CollectiveRecipe>(&recipe.detail);
                    c != nullptr && comm_) {
                    result = comm_->prepare(*c);
                    result.handle |= kCollectiveHandle;
                    return result;
                }
                result.reason = "collectives need several processes";
                return result;
            case Tier::Triton:
                result.reason = "Triton kernels run only on a GPU (the CUDA backend)";
                return result;
            case Tier::NotReplayable:
                result.reason = recipe.reason.empty() ? "not replayable" : recipe.reason;
                return result;
        }
        result.disposition = Disposition::Failed;
        result.reason =
            std::string("tier ") + to_string(recipe.tier) + " recipe without its details";
        return result;
    }

    void set_stream_count(int /*count*/) override {
    }  // one host thread runs every stream in issue order

    void issue(std::uint32_t handle, int stream, std::uint64_t tag) override {
        if (handle & kCollectiveHandle) {
            // A failed collective is fatal to the replay: it throws to the driver.
            const std::uint32_t h = handle & ~kCollectiveHandle;
            const std::int64_t start = now_ns();
            comm_->run(h);
            activities_.push_back(
                TimedActivity{tag, comm_->label(h), start, now_ns(), stream, false, false});
            return;
        }
        const std::int64_t start = now_ns();
        const std::string error = runner_.run(handle);
        const std::int64_t end = now_ns();
        if (!error.empty()) {
            // A failed run has no meaningful duration: count it and report it in environment().
            if (failed_runs_++ == 0) first_failure_ = runner_.label(handle) + ": " + error;
            return;
        }
        activities_.push_back(
            TimedActivity{tag, runner_.label(handle), start, end, stream, false, false});
    }

    // Work runs synchronously in issue order, so every wait is already satisfied.
    void stream_wait(int /*waiter*/, int /*producer*/) override {}
    void synchronize() override {}

    // The last-level cache plays the GPU's L2: inputs the recording had cached are read once,
    // timed like an issue.
    void warm_inputs(std::uint32_t handle, int stream, std::uint64_t tag) override {
        const std::int64_t start = now_ns();
        unsigned char acc = 0;
        bool any = false;
        for (const InputRegion& in : runner_.inputs(handle)) {
            if (!cached_in_recording(in, cache_bytes_)) continue;
            any = true;
            const auto* p = static_cast<const volatile unsigned char*>(in.data);
            for (std::size_t i = 0; i < in.bytes; i += 64) acc ^= p[i];
        }
        touched_ ^= acc;
        if (any)
            activities_.push_back(
                TimedActivity{tag, "warm-up read", start, now_ns(), stream, false, true});
    }

    // Cold caches: writing a buffer twice the last-level cache evicts what the replay left there.
    void flush_l2() override {
        if (flush_buffer_.empty())
            flush_buffer_.resize(std::clamp<std::size_t>(2 * cache_bytes_, 8u << 20, 1u << 30));
        std::memset(flush_buffer_.data(), ++flush_value_, flush_buffer_.size());
    }

    // libtorch's CPU allocator does not cache: every op allocates its outputs again, in the Timed
    // phase too, and its first calls happen in prepare's trial runs. Nothing else is made late.
    void set_phase(Phase) override {}
    std::vector<std::string> first_uses() override { return {}; }

    std::string capture_blocker(std::uint32_t, int) override {
        return "the cpu backend runs each op on the host as it is issued: there is no graph to "
               "capture";
    }
    void begin_capture(int, bool) override { throw std::logic_error(capture_blocker(0, 0)); }
    std::uint32_t end_capture(std::string& why) override {
        why = capture_blocker(0, 0);
        return 0;
    }
    void launch_graph(std::uint32_t) override { throw std::logic_error(capture_blocker(0, 0)); }

    std::vector<TimedActivity> collect() override { return std::exchange(activities_, {}); }

    bool runs_collectives() const override { return comm_ != nullptr; }
    std::vector<std::string> all_gather_text(const std::string& mine) override {
        return comm_ ? comm_->all_gather_text(mine) : std::vector<std::string>{mine};
    }

  private:
    static constexpr std::uint32_t kCollectiveHandle = 0x80000000u;
    std::unique_ptr<Communicator> comm_;
    TorchOpRunner runner_;
    std::int64_t max_tensor_bytes_ = 0;
    std::int64_t memory_cap_ = 0;  // host_memory_budget()'s cap, fixed at the start
    std::vector<TimedActivity> activities_;
    std::vector<unsigned char> flush_buffer_;
    unsigned char flush_value_ = 0;
    std::size_t cache_bytes_ = last_level_cache_bytes();
    unsigned char touched_ = 0;  // keeps warm_inputs' reads from being optimised away
    std::size_t failed_runs_ = 0;
    std::string first_failure_;
};

}  // namespace

std::unique_ptr<Backend> create_cpu_backend(const BackendOptions& options, std::string& why) {
    try {
        return std::make_unique<CpuBackend>(options);
    } catch (const std::exception& e) {
        why = std::string("cannot start the CPU backend: ") + e.what();
        return nullptr;
    }
}

}  // namespace replay
