// The event members the parser reads ("ph", "cat", "name", "pid", "tid", "ts", "dur", "args"),
// told apart by length and word compares, or from one 8-byte load where the name is written the
// usual way.
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>

#include "kineto/scanner.h"

namespace replay::kineto {

// The members of an event that the parser reads.
enum class EventKey : std::uint8_t { Other, Ph, Cat, Name, Pid, Tid, Ts, Dur, Args };

inline EventKey event_key(std::string_view key) {
    switch (key.size()) {
        case 2:
            return is(key, "ph") ? EventKey::Ph : is(key, "ts") ? EventKey::Ts : EventKey::Other;
        case 3:
            return is(key, "cat")   ? EventKey::Cat
                   : is(key, "pid") ? EventKey::Pid
                   : is(key, "tid") ? EventKey::Tid
                   : is(key, "dur") ? EventKey::Dur
                                    : EventKey::Other;
        case 4:
            return is(key, "name")   ? EventKey::Name
                   : is(key, "args") ? EventKey::Args
                                     : EventKey::Other;
        default:
            return EventKey::Other;
    }
}

// An event member name written the usual way ("ph": with no blank before the ':'), recognised
// from one 8-byte load: p moves past the ':' and its blanks. Other for anything else, with p
// unchanged, for the general reader.
[[gnu::always_inline]] inline EventKey known_event_key(const char*& p, const char* end) {
    if (end - p < 9) return EventKey::Other;
    std::uint64_t word;
    std::memcpy(&word, p, 8);
    // `pattern` is the name, its quotes and the ':' (length bytes); the usual single blank after
    // it is matched in the same compare.
    const auto match = [&](std::uint64_t pattern, std::size_t length, EventKey key)
        __attribute__((always_inline)) {
        const std::uint64_t with_blank = pattern | (std::uint64_t{' '} << (8 * length));
        const std::uint64_t mask = length + 1 == 8 ? ~0ULL : (1ULL << (8 * (length + 1))) - 1;
        if ((word & mask) == with_blank && static_cast<unsigned char>(p[length + 1]) > ' ') {
            p += length + 1;
            return key;
        }
        if ((word & (mask >> 8)) != pattern) return EventKey::Other;
        p = skip_space(p + length, end);
        return key;
    };
    switch (p[1]) {
        case 'p':
            return p[2] == 'h' ? match(text_word("\"ph\":"), 5, EventKey::Ph)
                               : match(text_word("\"pid\":"), 6, EventKey::Pid);
        case 't':
            return p[2] == 's' ? match(text_word("\"ts\":"), 5, EventKey::Ts)
                               : match(text_word("\"tid\":"), 6, EventKey::Tid);
        case 'c':
            return match(text_word("\"cat\":"), 6, EventKey::Cat);
        case 'd':
            return match(text_word("\"dur\":"), 6, EventKey::Dur);
        case 'n':
            return match(text_word("\"name\":"), 7, EventKey::Name);
        case 'a':
            return match(text_word("\"args\":"), 7, EventKey::Args);
        default:
            return EventKey::Other;
    }
}

}  // namespace replay::kineto
