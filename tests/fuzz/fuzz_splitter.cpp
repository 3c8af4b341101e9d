// libFuzzer target for EventSplitter.
//
// The first input byte picks a chunk size; the rest is the document. The document is split twice,
// in one buffer and in chunks of that size (carrying the unfinished item over as parse_kineto
// does), and both runs must agree on everything: the items (absolute offsets), the error, the
// damaged text skipped, and the end state. Items must lie inside the input, in order, without
// overlap; events must start with '{' and end with '}', other items in traceEvents must be whole
// JSON values. For a bare array of events ('[' first) without anything unusual (values, damage,
// nested text that looks like an event start) the event spans are checked against a plain
// byte-by-byte reference. Set REPLAY_SPLITTER_ISA=generic or avx2 to fuzz the other block indexers
// (the default is the best one the CPU has).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "json_grammar.h"
#include "replay/event_splitter.h"

namespace {

struct Item {
    std::uint64_t begin, length;
    bool metadata;
    std::uint64_t key_begin, key_length;
    bool operator==(const Item&) const = default;
};

struct Outcome {
    std::vector<Item> items;
    bool error = false;
    std::uint64_t error_offset = 0;
    std::string error_expected;
    bool complete = false;
    std::uint64_t last_complete_end = 0;
    std::uint64_t stray_bytes = 0;
    std::uint64_t first_stray = 0;
    bool saw_events = false;
    std::uint64_t damaged_places = 0, damaged_bytes = 0, first_damage = 0, first_resumed = 0;
    bool ended_in_damage = false;
    bool operator==(const Outcome&) const = default;
};

[[noreturn]] void fail(const char* what) {
    std::fprintf(stderr, "fuzz_splitter: %s\n", what);
    std::abort();
}

// Splits `doc` reading `step` new bytes per scan() call, like parse_kineto's reader. The items
// a failing call appended before it threw are kept too.
Outcome split(const std::string& doc, std::size_t step) {
    Outcome out;
    replay::EventSplitter splitter;
    std::string carry;
    std::size_t offset = 0;
    std::vector<replay::Span> spans;
    std::uint64_t base = 0;
    std::size_t size = 0;
    auto collect = [&]() {
        for (const replay::Span& s : spans) {
            if (static_cast<std::uint64_t>(s.begin) + s.length > size)
                fail("span past the end of the buffer");
            if (s.metadata && static_cast<std::uint64_t>(s.key_begin) + s.key_length > size)
                fail("metadata key past the end of the buffer");
            out.items.push_back(Item{base + s.begin, s.length, s.metadata,
                                     s.metadata ? base + s.key_begin : 0,
                                     s.metadata ? s.key_length : 0});
        }
        spans.clear();
    };
    try {
        while (true) {
            const std::size_t n = std::min(step, doc.size() - offset);
            const bool eof = offset + n == doc.size();
            // Exactly size + 64 bytes, so that ASan sees any read past the promised padding; the
            // padding holds JSON-significant bytes so that results may not depend on it.
            std::vector<char> buf(carry.size() + n + 64);
            std::memcpy(buf.data(), carry.data(), carry.size());
            std::memcpy(buf.data() + carry.size(), doc.data() + offset, n);
            for (std::size_t i = carry.size() + n; i < buf.size(); ++i) buf[i] = "\"{}]\\["[i % 6];
            size = carry.size() + n;
            offset += n;
            base = splitter.base_offset();
            const std::size_t keep = splitter.scan(buf.data(), size, eof, spans);
            if (keep > size) fail("keep past the end of the buffer");
            collect();
            if (!eof && splitter.base_offset() != base + keep)
                fail("base_offset does not follow keep");
            carry.assign(buf.data() + keep, size - keep);
            if (eof) break;
        }
    } catch (const replay::EventSplitter::SplitError& e) {
        collect();
        out.error = true;
        out.error_offset = e.offset;
        out.error_expected = e.expected;
    }
    out.complete = splitter.complete();
    out.last_complete_end = splitter.last_complete_end();
    if (!out.error) {  // after an error the parse fails: the stray counts are never reported
        out.stray_bytes = splitter.stray_bytes();
        out.first_stray = splitter.first_stray_offset();
    }
    out.saw_events = splitter.saw_events_array();
    if (!out.error) {
        out.damaged_places = splitter.damaged_places();
        out.damaged_bytes = splitter.damaged_bytes();
        out.first_damage = splitter.first_damage_offset();
        out.first_resumed = splitter.first_damage_resumed();
        out.ended_in_damage = splitter.ended_in_damage();
    }
    return out;
}

void print(const char* label, const Outcome& o) {
    std::fprintf(stderr,
                 "%s: %zu items, error %d at %llu (%s), complete %d, last end %llu, stray %llu "
                 "first %llu, events %d, damaged %llu places %llu bytes from %llu to %llu, "
                 "ended in damage %d\n",
                 label, o.items.size(), o.error, static_cast<unsigned long long>(o.error_offset),
                 o.error_expected.c_str(), o.complete,
                 static_cast<unsigned long long>(o.last_complete_end),
                 static_cast<unsigned long long>(o.stray_bytes),
                 static_cast<unsigned long long>(o.first_stray), o.saw_events,
                 static_cast<unsigned long long>(o.damaged_places),
                 static_cast<unsigned long long>(o.damaged_bytes),
                 static_cast<unsigned long long>(o.first_damage),
                 static_cast<unsigned long long>(o.first_resumed), o.ended_in_damage);
    for (const Item& i : o.items)
        std::fprintf(stderr, "  [%llu +%llu] %s\n", static_cast<unsigned long long>(i.begin),
                     static_cast<unsigned long long>(i.length), i.metadata ? "metadata" : "event");
}

bool is_space(char c) {
    return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

// The splitter's event start (event_splitter.cpp), written again from its description: a '{'
// after at most 64 blanks and one of , [ ] }, before at most 64 blanks, a quoted event member name,
// at most 64 blanks and ':'.
bool looks_like_event_start(const std::string& doc, std::size_t at) {
    std::size_t i = at, blanks = 0;
    while (i > 0 && is_space(doc[i - 1]) && blanks <= 64) --i, ++blanks;
    if (i == 0 || blanks > 64 || std::string_view(",[]}").find(doc[i - 1]) == std::string::npos)
        return false;
    std::size_t j = at + 1;
    for (blanks = 0; j < doc.size() && is_space(doc[j]) && blanks <= 64; ++j) ++blanks;
    if (j >= doc.size() || blanks > 64 || doc[j] != '"') return false;
    const std::size_t close = doc.find('"', j + 1);
    if (close == std::string::npos) return false;
    const std::string name = doc.substr(j + 1, close - j - 1);
    static const char* const kNames[] = {"ph", "name", "cat",  "pid", "tid",
                                         "ts", "dur",  "args", "id"};
    if (std::find(std::begin(kNames), std::end(kNames), name) == std::end(kNames)) return false;
    std::size_t k = close + 1;
    for (blanks = 0; k < doc.size() && is_space(doc[k]) && blanks <= 64; ++k) ++blanks;
    return k < doc.size() && blanks <= 64 && doc[k] == ':';
}

// Event spans of a bare array `[ {...}, {...} ]` of plain events, byte by byte; nullopt where the
// reference and the splitter may legitimately differ: not a bare array, or anything unusual (a
// value or any other byte between events, a '}' there, a brace in a string or a nested object
// that looks like an event start), which the splitter reads as malformed events or damage.
struct Reference {
    std::vector<Item> events;
    bool closed = false;
};
std::optional<Reference> reference_bare_array(const std::string& doc) {
    std::size_t i = 0;
    while (i < doc.size() && is_space(doc[i])) ++i;
    if (i >= doc.size() || doc[i] != '[') return std::nullopt;
    Reference ref;
    bool in_string = false, escaped = false;
    std::int64_t depth = 0;
    std::size_t begin = 0;
    for (++i; i < doc.size(); ++i) {
        const char c = doc[i];
        // As in simdjson's stage 1 (and the splitter), a backslash escapes the next byte wherever
        // it is, also outside strings (not JSON anyway), and escaping only matters for quotes.
        const bool is_escaped = escaped;
        escaped = c == '\\' && !is_escaped;
        if (c == '{' && (in_string || depth > 0) && looks_like_event_start(doc, i))
            return std::nullopt;
        if (c == '"' && is_escaped) continue;
        if (in_string) {
            if (c == '"') in_string = false;
            continue;
        }
        if (depth == 0 && c != '{' && c != ']' && c != ',' && !is_space(c)) return std::nullopt;
        if (c == '"') {
            in_string = true;
        } else if (c == '{') {
            if (depth++ == 0) begin = i;
        } else if (c == '}') {
            if (--depth == 0) ref.events.push_back(Item{begin, i + 1 - begin, false, 0, 0});
        } else if (c == ']' && depth == 0) {
            // Text after the end may hold an event start, which takes the splitter back to events.
            for (++i; i < doc.size(); ++i)
                if (!is_space(doc[i])) return std::nullopt;
            ref.closed = true;
            return ref;
        }
    }
    // An event cut short at the end is damage or a truncation, as its text so far is valid JSON
    // or not: the splitter checks that, the reference does not.
    if (depth > 0 || in_string) return std::nullopt;
    return ref;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) return 0;
    static const std::size_t kSteps[] = {1,   2,   3,   7,   31,  63,   64,  65,
                                         100, 127, 128, 200, 255, 1000, 4096};
    const std::string doc(reinterpret_cast<const char*>(data) + 1, size - 1);
    // At most ~256 scan() calls: an unfinished item is rescanned from its start on every call,
    // so tiny steps on a long input would spend the time budget on one input.
    const std::size_t step =
        std::max(kSteps[data[0] % (sizeof kSteps / sizeof kSteps[0])], doc.size() / 256);

    const Outcome whole = split(doc, doc.size() + 1);
    const Outcome chunked = split(doc, step);
    if (!(whole == chunked)) {
        print("one buffer", whole);
        std::fprintf(stderr, "chunks of %zu bytes:\n", step);
        print("chunked", chunked);
        fail("the result depends on the chunk size");
    }

    std::uint64_t end = 0;
    for (const Item& item : whole.items) {
        if (item.begin < end) fail("items overlap or go backwards");
        end = item.begin + item.length;
        if (end > doc.size()) fail("item past the end of the input");
        // An empty metadata value ("key": ,) is tolerated: parse_kineto skips what it cannot read.
        if (!item.metadata && (item.length < 2 || doc[item.begin] != '{' || doc[end - 1] != '}')) {
            replay::JsonGrammar grammar;
            if (grammar.feed(doc.data() + item.begin, item.length, true) !=
                    replay::JsonGrammar::Status::Complete ||
                grammar.consumed() != item.length)
                fail("an item in traceEvents is neither {...} nor one whole JSON value");
        }
        if (item.metadata && item.key_begin + item.key_length > doc.size())
            fail("key past the end of the input");
    }
    if (whole.last_complete_end > doc.size()) fail("last_complete_end past the end");
    if (whole.stray_bytes > doc.size()) fail("more stray bytes than input");
    if (whole.damaged_bytes > doc.size()) fail("more damaged bytes than input");

    if (auto ref = reference_bare_array(doc)) {
        std::vector<Item> events;
        for (const Item& item : whole.items)
            if (!item.metadata) events.push_back(item);
        if (whole.error) fail("bare array: an error where the reference has none");
        if (whole.damaged_places != 0) fail("bare array: damage where the reference has none");
        if (events != ref->events) {
            print("splitter", whole);
            std::fprintf(stderr, "reference: %zu events\n", ref->events.size());
            for (const Item& i : ref->events)
                std::fprintf(stderr, "  [%llu +%llu]\n", static_cast<unsigned long long>(i.begin),
                             static_cast<unsigned long long>(i.length));
            fail("bare array: event spans differ from the reference");
        }
        if (ref->closed != whole.complete) fail("bare array: completeness differs");
    }
    return 0;
}
