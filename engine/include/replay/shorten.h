// Long text cut to a width for messages and tables: kernel names run to hundreds of characters
// of template arguments.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace replay {

// `text` itself when it fits in `width` characters, else its start and "..." in that width.
inline std::string shorten(std::string_view text, std::size_t width) {
    if (text.size() <= width) return std::string(text);
    if (width <= 3) return std::string(text.substr(0, width));
    return std::string(text.substr(0, width - 3)) + "...";
}

}  // namespace replay
