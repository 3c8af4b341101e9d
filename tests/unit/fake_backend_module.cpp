// Fake backend modules for the loader's tests (test_backend_loader.cpp), one source for three
// builds: a working module whose backend does nothing, one that claims another ABI version (a
// stale module), and a shared library without the entry point.
#include <memory>
#include <string>
#include <vector>

#include "replay/backend.h"
#include "replay/energy.h"

namespace {

class FakeBackend final : public replay::Backend {
  public:
    replay::Environment environment() const override {
        replay::Environment env;
        env.backend = "fake";
        return env;
    }
    replay::Prepared prepare(const replay::Recipe&) override {
        return {replay::Disposition::Skipped, "a fake backend runs nothing", 0};
    }
    void set_stream_count(int) override {}
    void issue(std::uint32_t, int, std::uint64_t) override {}
    void stream_wait(int, int) override {}
    void synchronize() override {}
    void flush_l2() override {}
    void warm_inputs(std::uint32_t, int, std::uint64_t) override {}
    std::vector<replay::TimedActivity> collect() override { return {}; }
    void set_phase(replay::Phase) override {}
    // What reached the backend through the loader's wrapper, for the tests to read back.
    std::vector<std::string> first_uses() override { return {"named: " + named_}; }
    void name_next_issue(const std::string& range) override { named_ = range; }
    std::unique_ptr<replay::EnergyMeter> energy_meter(std::string& why) override {
        why = "asked the fake module's backend";
        return nullptr;
    }
    std::string capture_blocker(std::uint32_t, int) override { return "a fake backend has no graphs"; }
    void begin_capture(int, bool) override {}
    std::uint32_t end_capture(std::string& why) override {
        why = "a fake backend has no graphs";
        return 0;
    }
    void launch_graph(std::uint32_t) override {}
    replay::Prepared relocated(std::uint32_t handle) override {
        return {replay::Disposition::Ready, "moved by the fake module's backend", handle + 100};
    }
    void release(std::uint32_t handle) override { named_ = "released " + std::to_string(handle); }
    bool runs_collectives() const override { return true; }
    std::vector<std::string> all_gather_text(const std::string& mine) override {
        return {"fake rank 0", mine};
    }

  private:
    std::string named_;
};

// Device -1 stands for a machine the backend cannot run on.
std::unique_ptr<replay::Backend> create_fake_backend(const replay::BackendOptions& options,
                                                     std::string& why) {
    if (options.device < 0) {
        why = "the fake backend has no device " + std::to_string(options.device);
        return nullptr;
    }
    return std::make_unique<FakeBackend>();
}

}  // namespace

#if defined(FAKE_MODULE_STALE)
extern "C" __attribute__((visibility("default"))) const replay::BackendModuleInfo*
replay_backend_module() {
    static constexpr replay::BackendModuleInfo info{
        replay::kBackendAbiVersion + 1, replay::backend_abi_layout(), "fake", &create_fake_backend};
    return &info;
}
#elif defined(FAKE_MODULE_WITHOUT_ENTRY)
// A library that exports something else than the entry point (here: a misspelt one).
extern "C" __attribute__((visibility("default"))) const replay::BackendModuleInfo*
replay_backend_modules() {
    static constexpr replay::BackendModuleInfo info{
        replay::kBackendAbiVersion, replay::backend_abi_layout(), "fake", &create_fake_backend};
    return &info;
}
#else
REPLAY_BACKEND_MODULE("fake", &create_fake_backend)
#endif
