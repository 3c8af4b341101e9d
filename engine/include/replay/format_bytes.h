// Byte counts as people read them in messages and reports' text: "16.0 GiB", "512 B".
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <iterator>
#include <string>
#include <string_view>

namespace replay {

inline std::string format_bytes(std::int64_t bytes) {
    static constexpr std::string_view kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    double value = static_cast<double>(bytes);
    std::size_t unit = 0;
    while (value >= 1024 && unit + 1 < std::size(kUnits)) value /= 1024, ++unit;
    char text[32];
    if (unit == 0)
        std::snprintf(text, sizeof text, "%lld B", static_cast<long long>(bytes));
    else
        std::snprintf(text, sizeof text, "%.1f %s", value, kUnits[unit].data());
    return text;
}

}  // namespace replay
