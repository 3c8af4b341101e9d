#include "replay/backend.h"

#include "replay/energy.h"

namespace replay {

const char* to_string(Disposition disposition) {
    switch (disposition) {
        case Disposition::Ready:
            return "ready";
        case Disposition::Skipped:
            return "skipped";
        case Disposition::Failed:
            return "failed";
    }
    return "?";
}

std::unique_ptr<EnergyMeter> Backend::energy_meter(std::string& why) {
    why = "the " + environment().backend + " backend measures no energy (no board energy counter)";
    return nullptr;
}

}  // namespace replay
