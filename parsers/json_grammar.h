// A strict JSON grammar checker, byte by byte, for the few places where the event splitter's block
// scanner cannot decide alone: where one value at the top of traceEvents ends (an array or a
// scalar instead of an event object), and whether the text of an event so far is valid JSON
// (to tell a damaged event from one that is only cut short, or from a nested object that merely
// looks like the start of an event). It checks structure, not meaning: string contents are
// anything up to an unescaped quote, as in the splitter.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace replay {

class JsonGrammar {
  public:
    enum class Status {
        Valid,     // every byte so far continues valid JSON; the value is not complete yet
        Complete,  // a whole value has been read (feed() stopped just after it)
        Invalid,   // the byte at error_at() cannot continue valid JSON
    };
    // Containers nested deeper than this are Invalid (simdjson's own default limit).
    static constexpr std::size_t kMaxDepth = 1024;

    // Reads bytes until the value is complete or invalid, or the bytes run out. A number is
    // complete only at the byte after it, which is not consumed; with `at_end` the end of the
    // bytes completes it.
    Status feed(const char* p, std::size_t n, bool at_end = false);
    // Bytes consumed by feed() so far (the end of a complete value, or where it stopped).
    std::uint64_t consumed() const { return consumed_; }
    std::uint64_t error_at() const { return consumed_; }
    // True when the innermost open container is an array and a new element may start here:
    // what the text before the '{' of an object nested in an array looks like.
    bool expects_array_element() const;

  private:
    enum class Expect : std::uint8_t {
        Value,         // a value (the start, or after ':')
        ElementOrEnd,  // after '[': a value or ']'
        Element,       // after ',' in an array
        KeyOrEnd,      // after '{': a member name or '}'
        Key,           // after ',' in an object
        Colon,         // after a member name
        CommaOrEnd,    // after a value inside a container
        InString,      // inside a string (value or member name)
        InNumber,      // inside a number (number_ tells where)
        InLiteral,     // inside true / false / null
    };
    bool step(char c);
    bool after_value();  // a value ended: where the grammar goes next
    bool start_value(char c);

    std::vector<char> stack_;  // '[' or '{' per open container
    Expect expect_ = Expect::Value;
    bool key_ = false;      // the string being read is a member name
    bool escaped_ = false;  // the previous string byte was an unescaped backslash
    std::uint8_t number_ = 0;
    const char* literal_ = nullptr;  // the rest of the literal being read
    bool complete_ = false;
    std::uint64_t consumed_ = 0;
};

}  // namespace replay
