// Integer lists as recorded in `Concrete Inputs` ("[1, 5, 1024]", "[]"): read and written the
// way Kineto writes them, for the code that changes recorded sizes (sweeps, --set-dims) and the
// dataflow's output shapes (and their float lists: upsampling's scales).
#pragma once

#include <charconv>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace replay {

// nullopt unless `text` is one integer and nothing else ("-1", as `Concrete Inputs` has a dim).
inline std::optional<std::int64_t> parse_int(std::string_view text) {
    std::int64_t v = 0;
    const auto r = std::from_chars(text.data(), text.data() + text.size(), v);
    if (text.empty() || r.ec != std::errc() || r.ptr != text.data() + text.size())
        return std::nullopt;
    return v;
}

namespace int_list_detail {
// nullopt unless `text` is "[" numbers separated by commas (spaces allowed) "]", each one that
// std::from_chars reads as a T.
template <typename T>
std::optional<std::vector<T>> parse_list(std::string_view text) {
    if (text.size() < 2 || text.front() != '[' || text.back() != ']') return std::nullopt;
    std::vector<T> out;
    std::size_t i = 1;
    const std::size_t end = text.size() - 1;
    const auto skip_spaces = [&] {
        while (i < end && text[i] == ' ') ++i;
    };
    skip_spaces();
    if (i == end) return out;
    while (true) {
        skip_spaces();
        T v{};
        auto r = std::from_chars(text.data() + i, text.data() + end, v);
        if (r.ec != std::errc()) return std::nullopt;
        out.push_back(v);
        i = static_cast<std::size_t>(r.ptr - text.data());
        skip_spaces();
        if (i == end) return out;
        if (text[i] != ',') return std::nullopt;
        ++i;
    }
}
}  // namespace int_list_detail

// nullopt unless `text` is "[" integers separated by commas (spaces allowed) "]".
inline std::optional<std::vector<std::int64_t>> parse_int_list(std::string_view text) {
    return int_list_detail::parse_list<std::int64_t>(text);
}

// The same for floats ("[2., 2.]": upsampling's scale factors).
inline std::optional<std::vector<double>> parse_float_list(std::string_view text) {
    return int_list_detail::parse_list<double>(text);
}

inline std::string format_int_list(const std::vector<std::int64_t>& values) {
    std::string out = "[";
    for (std::size_t i = 0; i < values.size(); ++i) {
        if (i) out += ", ";
        out += std::to_string(values[i]);
    }
    return out + "]";
}

}  // namespace replay
