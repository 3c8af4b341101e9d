// NVML, loaded at run time (libnvidia-ml.so.1 comes with the driver; there is no header or
// import library in the toolkit): clocks, driver version and, for energy, the board's counter.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace replay {
class EnergyMeter;
}

namespace replay::cuda {

class Nvml {
  public:
    // Loads NVML and finds the GPU with this PCI bus id ("0000:3b:00.0"), falling back to
    // `index`. Returns nullptr with `why` when NVML or the device is not available.
    static std::unique_ptr<Nvml> open(const std::string& pci_bus_id, int index, std::string& why);
    ~Nvml();
    Nvml(const Nvml&) = delete;
    Nvml& operator=(const Nvml&) = delete;

    std::string driver_version() const;  // "580.159.04", or "" when unknown
    std::optional<int> sm_clock_mhz() const;
    std::optional<int> memory_clock_mhz() const;
    std::optional<int> max_sm_clock_mhz() const;
    // Energy used by the board since the driver loaded, in millijoules (Volta and newer).
    std::optional<std::uint64_t> total_energy_mj() const;
    // Board power as the driver last read it, and the enforced limit, in milliwatts.
    std::optional<unsigned> power_mw() const;
    std::optional<unsigned> power_limit_mw() const;
    // Why the clocks are below their maximum now (nvmlClocksEventReasons bits; the throttle
    // reasons of older drivers), or nullopt where the driver cannot say.
    std::optional<std::uint64_t> clock_event_reasons() const;
    // The GPU die's temperature (NVML_TEMPERATURE_GPU), degrees Celsius.
    std::optional<int> temperature_c() const;

    struct Api;  // the resolved entry points

  private:
    Nvml(void* library, std::unique_ptr<Api> api, void* device);
    void* library_;
    std::unique_ptr<Api> api_;
    void* device_;
};

// The board's energy counter and power reading (energy.h) through `nvml`, which must outlive it;
// nullptr with `why` when this GPU has no energy counter (before Volta) or NVML lacks the calls.
std::unique_ptr<EnergyMeter> make_nvml_meter(const Nvml& nvml, std::string& why);

}  // namespace replay::cuda
