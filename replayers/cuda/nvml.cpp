#include "nvml.h"

#include <dlfcn.h>

#include <chrono>
#include <cmath>

#include "replay/energy.h"

namespace replay::cuda {
namespace {

// The few NVML declarations used here (nvml.h, NVML API version 12 and later).
using nvmlReturn_t = int;
constexpr nvmlReturn_t NVML_SUCCESS = 0;
using nvmlDevice_t = void*;
enum nvmlClockType_t : int {
    NVML_CLOCK_GRAPHICS = 0,
    NVML_CLOCK_SM = 1,
    NVML_CLOCK_MEM = 2,
    NVML_CLOCK_VIDEO = 3
};
constexpr unsigned kVersionBufferSize = 80;  // NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE

template <typename F>
bool resolve(void* library, const char* name, F& out) {
    out = reinterpret_cast<F>(dlsym(library, name));
    return out != nullptr;
}

}  // namespace

struct Nvml::Api {
    nvmlReturn_t (*init)() = nullptr;
    nvmlReturn_t (*shutdown)() = nullptr;
    const char* (*error_string)(nvmlReturn_t) = nullptr;
    nvmlReturn_t (*handle_by_index)(unsigned, nvmlDevice_t*) = nullptr;
    nvmlReturn_t (*handle_by_pci_bus_id)(const char*, nvmlDevice_t*) = nullptr;
    nvmlReturn_t (*clock_info)(nvmlDevice_t, nvmlClockType_t, unsigned*) = nullptr;
    nvmlReturn_t (*max_clock_info)(nvmlDevice_t, nvmlClockType_t, unsigned*) = nullptr;
    nvmlReturn_t (*driver_version)(char*, unsigned) = nullptr;
    nvmlReturn_t (*total_energy)(nvmlDevice_t, unsigned long long*) = nullptr;
    nvmlReturn_t (*power_usage)(nvmlDevice_t, unsigned*) = nullptr;
    nvmlReturn_t (*power_limit)(nvmlDevice_t, unsigned*) = nullptr;
    nvmlReturn_t (*clock_event_reasons)(nvmlDevice_t, unsigned long long*) = nullptr;
    nvmlReturn_t (*temperature)(nvmlDevice_t, int, unsigned*) = nullptr;
};

std::unique_ptr<Nvml> Nvml::open(const std::string& pci_bus_id, int index, std::string& why) {
    void* library = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (library == nullptr) {
        const char* error = dlerror();
        why = std::string("cannot load libnvidia-ml.so.1: ") +
              (error != nullptr ? error : "unknown error");
        return nullptr;
    }
    auto api = std::make_unique<Api>();
    const bool required = resolve(library, "nvmlInit_v2", api->init) &&
                          resolve(library, "nvmlShutdown", api->shutdown) &&
                          resolve(library, "nvmlDeviceGetHandleByIndex_v2", api->handle_by_index) &&
                          resolve(library, "nvmlDeviceGetClockInfo", api->clock_info) &&
                          resolve(library, "nvmlDeviceGetMaxClockInfo", api->max_clock_info) &&
                          resolve(library, "nvmlSystemGetDriverVersion", api->driver_version);
    if (!required) {
        why = "libnvidia-ml.so.1 lacks an expected entry point";
        dlclose(library);
        return nullptr;
    }
    resolve(library, "nvmlErrorString", api->error_string);
    resolve(library, "nvmlDeviceGetHandleByPciBusId_v2", api->handle_by_pci_bus_id);
    resolve(library, "nvmlDeviceGetTotalEnergyConsumption", api->total_energy);
    resolve(library, "nvmlDeviceGetPowerUsage", api->power_usage);
    resolve(library, "nvmlDeviceGetEnforcedPowerLimit", api->power_limit);
    resolve(library, "nvmlDeviceGetTemperature", api->temperature);
    // Renamed in CUDA 12.2's NVML (same signature and bits); older drivers have only the first.
    if (!resolve(library, "nvmlDeviceGetCurrentClocksEventReasons", api->clock_event_reasons))
        resolve(library, "nvmlDeviceGetCurrentClocksThrottleReasons", api->clock_event_reasons);

    auto error = [&](nvmlReturn_t status) -> std::string {
        const char* text = api->error_string != nullptr ? api->error_string(status) : nullptr;
        return text != nullptr ? text : "NVML error " + std::to_string(status);
    };
    if (const nvmlReturn_t status = api->init(); status != NVML_SUCCESS) {
        why = "nvmlInit_v2: " + error(status);
        dlclose(library);
        return nullptr;
    }
    nvmlDevice_t device = nullptr;
    nvmlReturn_t status = -1;
    if (api->handle_by_pci_bus_id != nullptr && !pci_bus_id.empty())
        status = api->handle_by_pci_bus_id(pci_bus_id.c_str(), &device);
    if (status != NVML_SUCCESS)
        status = api->handle_by_index(static_cast<unsigned>(index), &device);
    if (status != NVML_SUCCESS) {
        why = "no NVML device for " + pci_bus_id + ": " + error(status);
        api->shutdown();
        dlclose(library);
        return nullptr;
    }
    return std::unique_ptr<Nvml>(new Nvml(library, std::move(api), device));
}

Nvml::Nvml(void* library, std::unique_ptr<Api> api, void* device)
    : library_(library), api_(std::move(api)), device_(device) {}

Nvml::~Nvml() {
    api_->shutdown();
    dlclose(library_);
}

std::string Nvml::driver_version() const {
    char text[kVersionBufferSize] = {};
    if (api_->driver_version(text, kVersionBufferSize) != NVML_SUCCESS) return {};
    return text;
}

namespace {
std::optional<int> clock(const Nvml::Api& api, nvmlDevice_t device, bool max,
                         nvmlClockType_t type) {
    unsigned mhz = 0;
    const nvmlReturn_t status =
        max ? api.max_clock_info(device, type, &mhz) : api.clock_info(device, type, &mhz);
    if (status != NVML_SUCCESS) return std::nullopt;
    return static_cast<int>(mhz);
}
}  // namespace

std::optional<int> Nvml::sm_clock_mhz() const {
    return clock(*api_, device_, false, NVML_CLOCK_SM);
}
std::optional<int> Nvml::memory_clock_mhz() const {
    return clock(*api_, device_, false, NVML_CLOCK_MEM);
}
std::optional<int> Nvml::max_sm_clock_mhz() const {
    return clock(*api_, device_, true, NVML_CLOCK_SM);
}

std::optional<std::uint64_t> Nvml::total_energy_mj() const {
    unsigned long long mj = 0;
    if (api_->total_energy == nullptr || api_->total_energy(device_, &mj) != NVML_SUCCESS)
        return std::nullopt;
    return static_cast<std::uint64_t>(mj);
}

std::optional<unsigned> Nvml::power_mw() const {
    unsigned mw = 0;
    if (api_->power_usage == nullptr || api_->power_usage(device_, &mw) != NVML_SUCCESS)
        return std::nullopt;
    return mw;
}

std::optional<std::uint64_t> Nvml::clock_event_reasons() const {
    unsigned long long reasons = 0;
    if (api_->clock_event_reasons == nullptr ||
        api_->clock_event_reasons(device_, &reasons) != NVML_SUCCESS)
        return std::nullopt;
    return static_cast<std::uint64_t>(reasons);
}

std::optional<int> Nvml::temperature_c() const {
    constexpr int kGpuSensor = 0;  // NVML_TEMPERATURE_GPU
    unsigned celsius = 0;
    if (api_->temperature == nullptr ||
        api_->temperature(device_, kGpuSensor, &celsius) != NVML_SUCCESS)
        return std::nullopt;
    return static_cast<int>(celsius);
}

std::optional<unsigned> Nvml::power_limit_mw() const {
    unsigned mw = 0;
    if (api_->power_limit == nullptr || api_->power_limit(device_, &mw) != NVML_SUCCESS)
        return std::nullopt;
    return mw;
}

namespace {

class NvmlMeter final : public EnergyMeter {
  public:
    explicit NvmlMeter(const Nvml& nvml) : nvml_(nvml) {}
    std::string method() const override { return "nvmlDeviceGetTotalEnergyConsumption"; }
    std::optional<MeterReading> energy() override {
        const auto mj = nvml_.total_energy_mj();
        if (!mj) return std::nullopt;
        return MeterReading{static_cast<double>(*mj), now_s()};
    }
    std::optional<MeterReading> power() override {
        const auto mw = nvml_.power_mw();
        if (!mw) return std::nullopt;
        return MeterReading{*mw / 1000.0, now_s()};
    }
    double power_limit_w() const override {
        const auto mw = nvml_.power_limit_mw();
        return mw ? *mw / 1000.0 : NAN;
    }
    std::optional<std::uint32_t> clock_limits() override {
        const auto reasons = nvml_.clock_event_reasons();
        if (!reasons) return std::nullopt;
        // nvml.h's nvmlClocksEventReason* bits (the same values as the older ThrottleReason*).
        constexpr std::uint64_t kSwPowerCap = 0x4, kHwSlowdown = 0x8, kSwThermal = 0x20,
                                kHwThermal = 0x40, kHwPowerBrake = 0x80;
        std::uint32_t limits = 0;
        if (*reasons & kSwPowerCap) limits |= kClockPowerCap;
        if (*reasons & (kSwThermal | kHwThermal)) limits |= kClockThermal;
        if (*reasons & (kHwSlowdown | kHwPowerBrake)) limits |= kClockHardware;
        return limits;
    }
    std::optional<BoardState> board_state() override {
        const auto mhz = nvml_.sm_clock_mhz();
        const auto celsius = nvml_.temperature_c();
        if (!mhz && !celsius) return std::nullopt;
        return BoardState{mhz ? *mhz : NAN, celsius ? *celsius : NAN};
    }

  private:
    static double now_s() {
        return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
            .count();
    }
    const Nvml& nvml_;
};

}  // namespace

std::unique_ptr<EnergyMeter> make_nvml_meter(const Nvml& nvml, std::string& why) {
    if (!nvml.total_energy_mj()) {
        why =
            "nvmlDeviceGetTotalEnergyConsumption is not supported on this GPU (Volta or newer "
            "needed) or by this driver";
        return nullptr;
    }
    return std::make_unique<NvmlMeter>(nvml);
}

}  // namespace replay::cuda
