// A backend that passes every call to another one. Wrappers (the owner of a loaded module, the
// tests' fault injectors) derive from it and override only what they change, so that a method
// added to Backend reaches the wrapped backend without every wrapper having to list it: the
// module wrapper once dropped energy_meter() and name_next_issue() that way, and --energy and
// --nvtx silently measured and named nothing.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "replay/backend.h"
#include "replay/energy.h"

namespace replay {

class ForwardingBackend : public Backend {
  public:
    explicit ForwardingBackend(std::unique_ptr<Backend> inner) : inner_(std::move(inner)) {}

    Environment environment() const override { return inner_->environment(); }
    Prepared prepare(const Recipe& recipe) override { return inner_->prepare(recipe); }
    void set_stream_count(int count) override { inner_->set_stream_count(count); }
    void issue(std::uint32_t handle, int stream, std::uint64_t tag) override {
        inner_->issue(handle, stream, tag);
    }
    void stream_wait(int waiter, int producer) override { inner_->stream_wait(waiter, producer); }
    void synchronize() override { inner_->synchronize(); }
    void flush_l2() override { inner_->flush_l2(); }
    void evict_instruction_caches() override { inner_->evict_instruction_caches(); }
    void warm_inputs(std::uint32_t handle, int stream, std::uint64_t tag) override {
        inner_->warm_inputs(handle, stream, tag);
    }
    void name_next_issue(const std::string& range) override { inner_->name_next_issue(range); }
    void submit() override { inner_->submit(); }
    void set_recording(bool on) override { inner_->set_recording(on); }
    void start_device_clock(int stream) override { inner_->start_device_clock(stream); }
    void hold_after(int stream, std::int64_t after_ns) override {
        inner_->hold_after(stream, after_ns);
    }
    std::vector<TimedActivity> collect() override { return inner_->collect(); }
    std::unique_ptr<EnergyMeter> energy_meter(std::string& why) override {
        return inner_->energy_meter(why);
    }
    void set_phase(Phase phase) override { inner_->set_phase(phase); }
    std::vector<std::string> first_uses() override { return inner_->first_uses(); }
    std::string capture_blocker(std::uint32_t handle, int stream) override {
        return inner_->capture_blocker(handle, stream);
    }
    void begin_capture(int home, bool all_streams) override {
        inner_->begin_capture(home, all_streams);
    }
    std::uint32_t end_capture(std::string& why) override { return inner_->end_capture(why); }
    void launch_graph(std::uint32_t graph) override { inner_->launch_graph(graph); }
    Prepared relocated(std::uint32_t handle) override { return inner_->relocated(handle); }
    void release(std::uint32_t handle) override { inner_->release(handle); }
    void set_recorded_ns(std::uint32_t handle, std::int64_t ns) override {
        inner_->set_recorded_ns(handle, ns);
    }
    FaultReport take_faults() override { return inner_->take_faults(); }
    bool runs_collectives() const override { return inner_->runs_collectives(); }
    std::vector<std::string> all_gather_text(const std::string& mine) override {
        return inner_->all_gather_text(mine);
    }

  protected:
    Backend& inner() { return *inner_; }
    // Destroys the wrapped backend now (a wrapper whose members must outlive it).
    void release_inner() { inner_.reset(); }

  private:
    std::unique_ptr<Backend> inner_;
};

}  // namespace replay
