#include "replay/content_hash.h"

#include <charconv>
#include <cstdio>

namespace replay {
namespace {

constexpr std::uint64_t kFnvPrime = 1099511628211ULL;
constexpr std::uint64_t kFnvBasis = 1469598103934665603ULL;
// An add term that does not occur in practice marks one not yet worked out (one that does occur
// is then only worked out again each time).
constexpr std::uint64_t kUnknown = ~std::uint64_t{0};

std::uint64_t fnv1a(std::uint64_t h, std::string_view bytes) {
    for (unsigned char c : bytes) {
        h ^= c;
        h *= kFnvPrime;
    }
    return h;
}

std::string hex_of(std::uint64_t h) {
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
    return buf;
}

}  // namespace

std::string hash_hex(std::string_view text) {
    return hex_of(fnv1a(kFnvBasis, text));
}

// A step (h ^ c) * P adds ((h ^ c) - h) * P to h * P, and that term depends on h's low byte alone
// (the xor touches no other bits), as does the low byte of the next state (a product's low byte is
// that of its factors' low bytes). So feeding an n-byte text maps h to h * P^n + add(text, h &
// 0xFF), exactly: the term is worked out once per text and low byte that occur (the low bytes a
// text meets are spread over all 256, so several per text).
std::uint64_t ContentHasher::feed_name(std::uint64_t h, NameId id, std::string_view text) {
    if (id >= power_.size()) power_.resize(std::size_t{id} + 1, 0);
    std::uint64_t& power = power_[id];
    if (power == 0) {  // P^n is odd, never 0
        power = 1;
        for (std::size_t i = 0; i < text.size(); ++i) power *= kFnvPrime;
    }
    const std::uint64_t low = h & 0xFF;
    const auto key = static_cast<std::int64_t>(std::uint64_t{id} << 8 | low);
    std::uint64_t& add = add_.at(key, kUnknown);
    if (add == kUnknown) add = fnv1a(low, text) - low * power;  // from the state `low` itself
    return h * power + add;
}

void ContentHasher::add(const Trace& trace, std::size_t first, std::size_t last) {
    char digits[24];
    const auto number = [&](std::int64_t value) {
        const char* end = std::to_chars(digits, digits + sizeof digits, value).ptr;
        return std::string_view(digits, static_cast<std::size_t>(end - digits));
    };
    std::uint64_t h = state_;
    for (std::size_t i = first; i < last; ++i) {
        const GpuActivity& a = trace.activities[i];
        const auto kind = static_cast<std::size_t>(a.kind);
        ++totals_.counts[kind];
        totals_.times[kind] += a.dur;
        const std::string_view name = trace.names.view(a.name);
        h = feed_name(h, a.name, name);
        h = fnv1a(h, ":");
        const std::string_view dur = number(a.dur);
        h = fnv1a(h, dur);
        h = fnv1a(h, ":");
        const std::string_view stream = number(a.stream);
        h = fnv1a(h, stream);
        h = fnv1a(h, ";");
        length_ += name.size() + dur.size() + stream.size() + 3;
        if (length_ > (1u << 20)) {
            const std::string rolled = hex_of(h);
            h = fnv1a(kFnvBasis, rolled);
            length_ = rolled.size();
        }
    }
    state_ = h;
}

std::string ContentHasher::hex() const {
    return hex_of(state_);
}

std::string trace_content_hash(const Trace& trace, ActivityTotals* totals) {
    ContentHasher hasher;
    hasher.add(trace, 0, trace.activities.size());
    if (totals != nullptr) *totals = hasher.totals();
    return hasher.hex();
}

}  // namespace replay
