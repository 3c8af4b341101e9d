// A small streaming JSON writer for the files the tool emits (reports, signatures, Chrome
// traces). simdjson only reads, so this is the one piece of JSON we write by hand.
#pragma once

#include <cstdint>
#include <ostream>
#include <string_view>
#include <vector>

namespace replay {

class JsonWriter {
  public:
    explicit JsonWriter(std::ostream& out, bool pretty = true) : out_(out), pretty_(pretty) {}
    JsonWriter& begin_object();
    JsonWriter& end_object();
    JsonWriter& begin_array();
    JsonWriter& end_array();
    JsonWriter& key(std::string_view name);
    JsonWriter& value(std::string_view text);
    JsonWriter& value(const char* text) { return value(std::string_view(text)); }
    JsonWriter& value(double number);  // NaN/inf are written as null
    JsonWriter& value(std::int64_t number);
    JsonWriter& value(std::uint64_t number);
    JsonWriter& value(int number) { return value(static_cast<std::int64_t>(number)); }
    JsonWriter& value(unsigned number) { return value(static_cast<std::uint64_t>(number)); }
    JsonWriter& value(long long number) { return value(static_cast<std::int64_t>(number)); }
    JsonWriter& value(unsigned long long number) {
        return value(static_cast<std::uint64_t>(number));
    }
    JsonWriter& value(bool flag);
    JsonWriter& null();
    template <typename T>
    JsonWriter& field(std::string_view name, const T& v) {
        key(name);
        return value(v);
    }
    // "name": [values...] of any range (a vector, a std::array of dims).
    template <typename Range>
    JsonWriter& array(std::string_view name, const Range& values) {
        key(name).begin_array();
        for (const auto& v : values) value(v);
        return end_array();
    }
    // "name": [ {...}, ... ]: one object per row, `fill(row)` writing its members.
    template <typename Rows, typename Fill>
    JsonWriter& objects(std::string_view name, const Rows& rows, Fill&& fill) {
        key(name).begin_array();
        for (const auto& row : rows) {
            begin_object();
            fill(row);
            end_object();
        }
        return end_array();
    }
    static void escape(std::ostream& out, std::string_view text);

  private:
    void before_value();
    void newline();
    std::ostream& out_;
    bool pretty_;
    std::vector<bool> first_;  // per open container: no element written yet
    bool after_key_ = false;
};

}  // namespace replay
