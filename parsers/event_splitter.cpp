// The event splitter's state machine: the top-level members, the traceEvents array event by event
// (from the block index, block_index.h), values that are not events, and damaged text.
//
// Damaged text and how reading gets back in step. One byte lost, added or changed in the middle
// of a trace must cost the events around it, not the rest of the trace; only what ends the input
// is a truncation. The block scanner follows strings and braces, so a lost quote turns every
// string after it inside out, and a lost brace puts every later event one level too deep: both
// would otherwise read to the end of the input as one unfinished event. Reading gets back in step
// at an event start:
//
//   a '{' preceded (across at most kContext blanks) by ',', '[', ']' or '}', and followed (across
//   at most kContext blanks) by a quoted event member name ("ph", "name", "cat", "pid", "tid",
//   "ts", "dur", "args", "id") and ':'.
//
// That is what starts every event in every writer we know (Kineto's ",\n  {\n    \"ph\": ",
// json.dumps' ", {\"name\": "). A string cannot fool it: inside a valid string a '"' is always
// escaped, so the bytes {"ph": cannot be inside one (escaped quotes and braces in names, as in
// "k{\"}\\", never match). Where such bytes lie inside a string by the scanner's count of quotes,
// that count is wrong: the text is damaged, from the start of the current event up to this event
// start. Outside strings, an object that is an element of an array nested in an event may start
// the same way; there the event's text so far is checked with a strict JSON grammar
// (json_grammar.h): valid, with an array open, it is a nested object; otherwise (a lost '}' leaves
// an object open, a lost quote leaves invalid text) the event is damaged. Between events, anything
// but blanks, commas and events is either one JSON value (an array or a scalar: an item of its
// own, which the parser counts as a malformed event) or damaged text, skipped byte by byte up to
// the next event start; there a byte right after the damaged one also counts as a separator (an
// added byte in front of an event). A syntax error among the top-level members after traceEvents
// was closed means its ']' was damage, and reading goes back to the events. Each decision looks
// at a bounded window of bytes and waits for more input when the window is not all there, so that
// the result never depends on where chunks end.
#include "replay/event_splitter.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <string_view>

#include "block_index.h"
#include "json_grammar.h"

namespace replay {
namespace {

constexpr std::size_t kContext = 64;  // blanks allowed on each side of an event start's '{'

bool is_space(char c) {
    return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

bool is_event_member(std::string_view name) {
    return name == "ph" || name == "name" || name == "cat" || name == "pid" || name == "tid" ||
           name == "ts" || name == "dur" || name == "args" || name == "id";
}

enum class Answer { No, Yes, NeedMore };

// Whether buf[at] == '{' starts an event by the rule above. `separator_at` is a position whose
// byte also counts as a separator (the first damaged byte), or SIZE_MAX.
Answer event_start_at(const char* buf, std::size_t at, std::size_t size, bool eof,
                      std::size_t separator_at = SIZE_MAX) {
    std::size_t i = at;
    while (i > 0 && is_space(buf[i - 1]))
        if (at - --i > kContext) return Answer::No;
    if (i == 0) return Answer::No;
    const char left = buf[i - 1];
    if (left != ',' && left != '[' && left != ']' && left != '}' && i - 1 != separator_at)
        return Answer::No;
    const auto more = [&] { return eof ? Answer::No : Answer::NeedMore; };
    std::size_t j = at + 1;
    while (j < size && is_space(buf[j]))
        if (++j - at > kContext + 1) return Answer::No;
    if (j >= size) return more();
    if (buf[j] != '"') return Answer::No;
    const std::size_t name = j + 1;
    std::size_t k = name;
    while (k < size && k - name <= 4 && buf[k] != '"') ++k;  // the names are 2 to 4 bytes
    if (k >= size) return more();
    if (buf[k] != '"' || !is_event_member(std::string_view(buf + name, k - name)))
        return Answer::No;
    const std::size_t quote = k;
    for (++k; k < size && is_space(buf[k]); ++k)
        if (k - quote > kContext) return Answer::No;
    if (k >= size) return more();
    return buf[k] == ':' ? Answer::Yes : Answer::No;
}

// An object starting at `at` inside the event that starts at `begin` is nested in an array of
// it, as valid JSON: not the start of the next event.
bool nested_in_array(const char* buf, std::size_t begin, std::size_t at) {
    JsonGrammar grammar;
    return grammar.feed(buf + begin, at - begin) == JsonGrammar::Status::Valid &&
           grammar.expects_array_element();
}

// Finds the end of a JSON string starting at buf[i] == '"'; returns the index just past the
// closing quote, or 0 when the buffer ends first.
std::size_t string_end(const char* buf, std::size_t i, std::size_t size) {
    for (++i; i < size; ++i) {
        if (buf[i] == '\\') {
            ++i;
        } else if (buf[i] == '"') {
            return i + 1;
        }
    }
    return 0;
}

// Finds the end of any JSON value starting at buf[i]; 0 when the buffer ends first.
std::size_t value_end(const char* buf, std::size_t i, std::size_t size) {
    if (buf[i] == '"') return string_end(buf, i, size);
    if (buf[i] == '{' || buf[i] == '[') {
        std::int64_t depth = 0;
        while (i < size) {
            const char c = buf[i];
            if (c == '"') {
                i = string_end(buf, i, size);
                if (i == 0) return 0;
                continue;
            }
            if (c == '{' || c == '[') ++depth;
            if (c == '}' || c == ']') {
                if (--depth == 0) return i + 1;
            }
            ++i;
        }
        return 0;
    }
    while (i < size && buf[i] != ',' && buf[i] != '}' && buf[i] != ']' && !is_space(buf[i])) ++i;
    return i < size ? i : 0;
}

// Between events, a gap of this many bytes at most is checked inline.
constexpr std::size_t kShortGap = 64;

bool blanks_and_commas(const char* buf, std::size_t from, std::size_t to) {
    for (std::size_t i = from; i < to; ++i)
        if (!is_space(buf[i]) && buf[i] != ',') return false;
    return true;
}

// The '{' at `at` follows a ':' (and at most one blank): an object as a member's value, which
// never starts an event.
inline bool after_colon(const char* buf, std::size_t at) {
    const char before = buf[at - 1];
    return before == ':' || (before == ' ' && at >= 2 && buf[at - 2] == ':');
}

// Bits [from, 64) of a 64-bit mask (from <= 64).
inline std::uint64_t bits_from(std::size_t from) {
    return from >= 64 ? 0 : ~0ULL << from;
}

}  // namespace

std::size_t EventSplitter::scan(const char* buf, std::size_t size, bool eof,
                                std::vector<Span>& out) {
    while (state_ == State::Events   ? scan_events(buf, size, eof, out)
           : state_ == State::Resync ? scan_resync(buf, size, eof)
                                     : scan_top(buf, size, eof, out)) {
    }
    if (eof) {
        finish(buf, size);
        return size;
    }
    std::size_t keep = pos_;
    if (state_ == State::Events) keep = std::min(keep, depth_ > 0 ? event_begin_ : gap_begin_);
    if (state_ == State::RootColon || state_ == State::RootValue) keep = key_begin_ - 1;
    // From the events on, the blanks and separator before a '{' still to be looked at, should it
    // be an event start (event_start_at()).
    if (saw_events_) keep = std::min(keep, pos_ > kContext + 1 ? pos_ - kContext - 1 : 0);
    pos_ -= keep;
    if (event_begin_ >= keep) event_begin_ -= keep;
    if (gap_begin_ >= keep) gap_begin_ -= keep;
    if (key_begin_ >= keep) key_begin_ -= keep;
    base_ += keep;
    return keep;
}

void EventSplitter::finish(const char* buf, std::size_t size) {
    if (state_ == State::Events && depth_ > 0) {
        // The input ends inside an event: cut short if its text so far is valid JSON (a
        // truncation), else damaged up to the end.
        JsonGrammar grammar;
        if (grammar.feed(buf + event_begin_, size - event_begin_) == JsonGrammar::Status::Invalid) {
            record_damage(base_ + event_begin_, base_ + size);
            ended_in_damage_ = true;
        }
    } else if (state_ == State::Resync && after_document_) {
        // No event after the end of the document: what followed it was stray text.
        if (pending_stray_ != 0 && stray_bytes_ == 0) first_stray_ = first_pending_stray_;
        stray_bytes_ += pending_stray_;
        state_ = State::Done;
    } else if (state_ == State::Resync) {
        record_damage(damage_begin_, base_ + size);
        ended_in_damage_ = true;
    }
}

void EventSplitter::record_damage(std::uint64_t begin, std::uint64_t end) {
    if (damaged_places_++ == 0) {
        first_damage_ = begin;
        first_resumed_ = end;
    }
    damaged_bytes_ += end - begin;
}

void EventSplitter::too_large(std::uint64_t offset, const char* what) const {
    throw SplitError{offset, what, SplitError::Kind::TooLarge};
}

// Blanks from `from` to `to`: only so many in a row, or an endless input of blanks would never
// end. A run that reaches the end of the buffer goes on in the next one.
void EventSplitter::check_blanks(std::size_t from, std::size_t to, std::size_t size) {
    const std::uint64_t start = in_blanks_ ? blanks_since_ : base_ + from;
    if (base_ + to - start > max_item_bytes_) too_large(start, "a run of blanks");
    in_blanks_ = to == size;
    blanks_since_ = start;
}

bool EventSplitter::top_error(std::size_t at, const char* expected) {
    if (!events_closed_) throw SplitError{base_ + at, expected};
    // The ']' that closed traceEvents was damage (a byte changed into it, or a quote lost before
    // it): back to the events, at the next event start.
    damage_begin_ = close_abs_;
    events_closed_ = false;
    state_ = State::Resync;
    pos_ = at;
    return true;
}

void EventSplitter::close_events(std::size_t at) {
    last_end_abs_ = base_ + at + 1;
    close_abs_ = base_ + at;
    events_closed_ = true;
    pos_ = at + 1;
    state_ = bare_array_ ? State::Done : State::RootComma;
}

void EventSplitter::start_resync(std::size_t garbage) {
    damage_begin_ = base_ + garbage;
    state_ = State::Resync;
    pos_ = garbage + 1;
}

// Returns false when more input is needed.
bool EventSplitter::scan_top(const char* buf, std::size_t size, bool eof, std::vector<Span>& out) {
    while (true) {
        const std::size_t blanks = pos_;
        while (pos_ < size && is_space(buf[pos_])) ++pos_;
        if (pos_ > blanks || in_blanks_) check_blanks(blanks, pos_, size);
        if (pos_ >= size) {
            if (eof && state_ == State::Start)
                throw SplitError{base_ + pos_, "a JSON object or array (the input is empty)"};
            return false;
        }
        const char c = buf[pos_];
        switch (state_) {
            case State::Start:
                if (c == '{') {
                    state_ = State::RootKey;
                } else if (c == '[') {
                    bare_array_ = true;
                    saw_events_ = true;
                    state_ = State::Events;
                    gap_begin_ = pos_ + 1;
                    ++pos_;
                    return true;
                } else {
                    throw SplitError{base_ + pos_, "'{' or '[' at the start of a JSON trace"};
                }
                ++pos_;
                break;
            case State::RootKey: {
                if (c == '}') {
                    state_ = State::Done;
                    ++pos_;
                    break;
                }
                if (c != '"') return top_error(pos_, "a member name or '}'");
                const std::size_t end = string_end(buf, pos_, size);
                // At the end of the input a member cut short is a truncation (the profiler died
                // while writing it), reported as such by the caller: complete() stays false.
                if (end == 0) {
                    if (size - pos_ > max_item_bytes_) too_large(base_ + pos_, "a member name");
                    return false;
                }
                key_begin_ = pos_ + 1;
                key_length_ = end - pos_ - 2;
                pos_ = end;
                state_ = State::RootColon;
                break;
            }
            case State::RootColon:
                if (c != ':') return top_error(pos_, "':' after a member name");
                ++pos_;
                state_ = State::RootValue;
                break;
            case State::RootValue: {
                const std::string_view key(buf + key_begin_, key_length_);
                if (key == "traceEvents") {
                    if (c != '[') return top_error(pos_, "'[' after \"traceEvents\":");
                    saw_events_ = true;
                    state_ = State::Events;
                    depth_ = 0;
                    prev_in_string_ = 0;
                    prev_escaped_ = 0;
                    gap_begin_ = pos_ + 1;
                    ++pos_;
                    return true;
                }
                const std::size_t end = value_end(buf, pos_, size);
                if (end == 0) {
                    if (eof) return false;  // cut short: a truncation, as above
                    if (size - pos_ > max_item_bytes_)
                        too_large(base_ + pos_, "the value of a top-level member");
                    pos_ = key_begin_ - 1;
                    state_ = State::RootKey;
                    return false;
                }
                if (end - pos_ > max_item_bytes_)
                    too_large(base_ + pos_, "the value of a top-level member");
                Span span;
                span.begin = static_cast<std::uint32_t>(pos_);
                span.length = static_cast<std::uint32_t>(end - pos_);
                span.metadata = true;
                span.key_begin = static_cast<std::uint32_t>(key_begin_);
                span.key_length = static_cast<std::uint32_t>(key_length_);
                out.push_back(span);
                last_end_abs_ = base_ + end;
                pos_ = end;
                state_ = State::RootComma;
                break;
            }
            case State::RootComma:
                if (c == ',') {
                    state_ = State::RootKey;
                } else if (c == '}') {
                    state_ = State::Done;
                } else {
                    return top_error(pos_, "',' or '}' between top-level members");
                }
                ++pos_;
                break;
            case State::Done:
                // Text after the document is skipped and counted as stray (but not its blanks,
                // so that the count does not depend on where chunks end), not fatal; unless an
                // event starts in it: then the ']' that closed traceEvents was damage.
                if (events_closed_) {
                    damage_begin_ = close_abs_;
                    after_document_ = true;
                    state_ = State::Resync;
                    return true;
                }
                for (; pos_ < size; ++pos_) {
                    if (is_space(buf[pos_])) continue;
                    if (stray_bytes_++ == 0) first_stray_ = base_ + pos_;
                }
                return false;
            case State::Events:
            case State::Resync:
                return true;
        }
    }
}

bool EventSplitter::scan_resync(const char* buf, std::size_t size, bool eof) {
    const std::size_t separator_at =
        damage_begin_ >= base_ ? static_cast<std::size_t>(damage_begin_ - base_) : SIZE_MAX;
    // After the document, what is passed over is stray unless an event start follows.
    const auto pass_to = [&](std::size_t to) {
        if (after_document_) {
            for (std::size_t i = pos_; i < to; ++i) {
                if (is_space(buf[i])) continue;
                if (pending_stray_++ == 0) first_pending_stray_ = base_ + i;
            }
        }
        pos_ = to;
    };
    while (pos_ < size) {
        const void* brace = std::memchr(buf + pos_, '{', size - pos_);
        if (brace == nullptr) {
            pass_to(size);
            break;
        }
        const std::size_t at = static_cast<std::size_t>(static_cast<const char*>(brace) - buf);
        switch (event_start_at(buf, at, size, eof, separator_at)) {
            case Answer::Yes:
                record_damage(damage_begin_, base_ + at);
                state_ = State::Events;
                events_closed_ = after_document_ = false;
                pending_stray_ = 0;
                depth_ = 0;
                pos_ = gap_begin_ = at;
                prev_in_string_ = prev_escaped_ = 0;
                return true;
            case Answer::NeedMore:
                pass_to(at);
                return false;
            case Answer::No:
                pass_to(at + 1);
                break;
        }
    }
    if (base_ + pos_ - damage_begin_ > max_item_bytes_)
        too_large(damage_begin_, "damaged text without an event start after it");
    return false;
}

EventSplitter::Gap EventSplitter::check_gap(const char* buf, std::size_t to, std::size_t size,
                                            bool eof, std::vector<Span>& out) {
    std::size_t at = gap_begin_;
    while (at < to && (is_space(buf[at]) || buf[at] == ',')) ++at;
    if (at - gap_begin_ > max_item_bytes_) too_large(base_ + gap_begin_, "a run of blanks");
    if (at >= to) return Gap::Clean;
    // A value where an event should be (an array, a string, a number, a literal): an item of its
    // own, when what follows it is what may follow an element of the array.
    JsonGrammar grammar;
    const JsonGrammar::Status status = grammar.feed(buf + at, size - at, eof);
    if (status == JsonGrammar::Status::Valid) {
        if (size - at > max_item_bytes_) too_large(base_ + at, "a value in traceEvents");
        gap_begin_ = at;
        pos_ = eof ? size : at;  // at the end of the input: cut short inside it
        return Gap::Pause;
    }
    if (status == JsonGrammar::Status::Complete) {
        const std::size_t end = at + grammar.consumed();
        std::size_t next = end;
        while (next < size && is_space(buf[next])) ++next;
        if (next >= size && !eof) {
            gap_begin_ = pos_ = at;
            return Gap::Pause;
        }
        if (next >= size || buf[next] == ',' || buf[next] == ']' || buf[next] == '{') {
            if (end - at > max_item_bytes_) too_large(base_ + at, "a value in traceEvents");
            out.push_back(Span{static_cast<std::uint32_t>(at), static_cast<std::uint32_t>(end - at),
                               false, 0, 0});
            last_end_abs_ = base_ + end;
            gap_begin_ = pos_ = end;
            return Gap::Restart;
        }
    }
    start_resync(at);
    return Gap::Resync;
}

bool EventSplitter::scan_events(const char* buf, std::size_t size, bool eof,
                                std::vector<Span>& out) {
    constexpr std::size_t kRun = 64;  // blocks indexed per call (4 KiB)
    BlockIndex index[kRun];
    alignas(64) char tail[64];
    StringState strings{prev_in_string_, prev_escaped_};
    // Stops at `at`, where the string state is `in_string` ('{' is never escaped in a way that
    // matters, so the escape carry is clear): scanning goes on from there, after more input
    // (false) or at once, from a fresh start (true, after a value or damaged text).
    const auto stop_at = [&](std::size_t at, bool in_string, bool go_on) {
        pos_ = at;
        prev_in_string_ = in_string ? ~0ULL : 0;
        prev_escaped_ = 0;
        return go_on;
    };
    // The text between events up to `to`: nullopt when it is blanks and commas, else what
    // scan_events() returns.
    const auto gap = [&](std::size_t to) -> std::optional<bool> {
        switch (check_gap(buf, to, size, eof, out)) {
            case Gap::Clean:
                return std::nullopt;
            case Gap::Restart:
                return stop_at(pos_, false, true);
            case Gap::Pause:
                return stop_at(pos_, false, false);
            case Gap::Resync:
                return true;
        }
        return std::nullopt;
    };
    // Between events, the text up to a brace at `at`, where `closing` (bits relative to pos_) marks
    // the ']' in the block before it: the first one closes the array, whatever the brace is (also
    // a '{' in a string after it, which the block index may show in the same block as the ']' or
    // in the next one, as chunks end). nullopt: the text is blanks and commas, go on with the brace.
    const auto up_to_brace = [&](std::uint64_t closing, std::size_t at) -> std::optional<bool> {
        const std::size_t next =
            closing != 0 ? pos_ + static_cast<std::size_t>(__builtin_ctzll(closing)) : at;
        if (next - gap_begin_ > kShortGap || !blanks_and_commas(buf, gap_begin_, next)) {
            if (const auto stop = gap(next)) return *stop;
        }
        if (closing == 0) return std::nullopt;
        close_events(next);
        return true;
    };
    while (pos_ < size) {
        std::size_t blocks = std::min<std::size_t>((size - pos_) / 64, kRun);
        std::size_t valid = 64;
        if (blocks == 0) {
            if (!eof) break;
            valid = size - pos_;
            std::memset(tail, ' ', sizeof tail);
            std::memcpy(tail, buf + pos_, valid);
            index_blocks(tail, 1, index, strings);
            blocks = 1;
        } else {
            // Hardware prefetchers stop at page boundaries: ask for the run after next while
            // this one is indexed.
            const std::size_t ahead = pos_ + 2 * kRun * 64;
            for (std::size_t at = ahead; at < std::min(size, ahead + kRun * 64); at += 64)
                __builtin_prefetch(buf + at);
            index_blocks(buf + pos_, blocks, index, strings);
        }
        for (std::size_t b = 0; b < blocks; ++b, pos_ += valid) {
            const std::uint64_t in_strings = index[b].string_braces;  // rare
            const std::uint64_t brackets = index[b].brackets;
            std::uint64_t marks = index[b].braces | in_strings;
            std::size_t zero_from = depth_ == 0 ? 0 : 64;  // depth is 0 from this bit on
            while (marks != 0) {
                const std::size_t bit = static_cast<std::size_t>(__builtin_ctzll(marks));
                const std::size_t at = pos_ + bit;
                marks &= marks - 1;
                if (in_strings != 0 && ((in_strings >> bit) & 1) != 0) [[unlikely]] {
                    // A brace in a string: nothing, unless a '{' there starts an event, which a
                    // string cannot hold (the rule above): damaged text up to it.
                    if (buf[at] != '{') continue;
                    // Between events only after a value or damaged text, which the gap check
                    // deals with, unless a ']' before it closed the array.
                    if (depth_ == 0) {
                        const std::uint64_t closing =
                            brackets & bits_from(zero_from) & ~bits_from(bit);
                        if (const auto stop = up_to_brace(closing, at)) return *stop;
                        continue;
                    }
                    const Answer start = event_start_at(buf, at, size, eof);
                    if (start == Answer::NeedMore) return stop_at(at, true, false);
                    if (start == Answer::Yes) {
                        record_damage(base_ + event_begin_, base_ + at);
                        depth_ = 0;
                        gap_begin_ = at;
                        return stop_at(at, false, true);
                    }
                    continue;
                }
                if (depth_ == 0) {
                    // Between events: ']' closes the array, '{' starts an event; first the text
                    // before it, which is nearly always a few blanks and a comma.
                    const std::uint64_t closing =
                        brackets & bits_from(zero_from) & ~bits_from(bit);
                    if (const auto stop = up_to_brace(closing, at)) return *stop;
                    if (buf[at] == '}') {  // a stray '}': damaged text
                        start_resync(at);
                        return true;
                    }
                    event_begin_ = at;
                    depth_ = 1;
                    continue;
                }
                if (buf[at] == '}') {
                    if (--depth_ == 0) {
                        if (at + 1 - event_begin_ > max_item_bytes_)
                            too_large(base_ + event_begin_, "an event");
                        out.push_back(Span{static_cast<std::uint32_t>(event_begin_),
                                           static_cast<std::uint32_t>(at + 1 - event_begin_), false,
                                           0, 0});
                        gap_begin_ = at + 1;
                        last_end_abs_ = base_ + at + 1;
                        zero_from = bit + 1;
                    }
                    continue;
                }
                // A '{' inside an event: nearly always an "args" object, after ':'; else a nested
                // object, or the start of the next event after damaged text.
                if (!after_colon(buf, at)) {
                    const Answer start = event_start_at(buf, at, size, eof);
                    if (start == Answer::NeedMore) return stop_at(at, false, false);
                    if (start == Answer::Yes && !nested_in_array(buf, event_begin_, at)) {
                        record_damage(base_ + event_begin_, base_ + at);
                        depth_ = 0;
                        gap_begin_ = at;
                        return stop_at(at, false, true);
                    }
                }
                ++depth_;
            }
            if (depth_ == 0) {
                if (const std::uint64_t rest = brackets & bits_from(zero_from)) {
                    const std::size_t next = pos_ + static_cast<std::size_t>(__builtin_ctzll(rest));
                    if (const auto stop = gap(next)) return *stop;
                    close_events(next);
                    return true;
                }
            }
        }
    }
    prev_in_string_ = strings.in_string;
    prev_escaped_ = strings.escaped;
    if (depth_ > 0) {
        if (size - event_begin_ > max_item_bytes_) too_large(base_ + event_begin_, "an event");
        return false;
    }
    // The text after the last event so far (up to where the blocks were looked at): a value or
    // damaged text in it is dealt with now; a run of blanks is only so long.
    if (const auto stop = gap(pos_)) return *stop;
    return false;
}

}  // namespace replay
