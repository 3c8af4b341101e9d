// The out-of-line simdjson value readers of json_values.h.
#include "kineto/json_values.h"

#include <cmath>

namespace replay::kineto {

[[gnu::noinline]] bool get_unescaped(od::value& value, std::string_view& out) {
    return !value.get_string().get(out);
}

[[gnu::noinline]] std::optional<std::int64_t> as_int_slow(od::value value) {
    od::number_type type;
    if (value.get_number_type().get(type)) return std::nullopt;
    switch (type) {
        case od::number_type::signed_integer: {
            std::int64_t v;
            if (!value.get_int64().get(v)) return v;
            return std::nullopt;
        }
        case od::number_type::unsigned_integer: {
            std::uint64_t v;
            if (!value.get_uint64().get(v)) return static_cast<std::int64_t>(v);
            return std::nullopt;
        }
        default: {
            // A float outside int64's range is not an id (casting it would be undefined).
            double v;
            if (!value.get_double().get(v) && std::isfinite(v) && v >= -9223372036854775808.0 &&
                v < 9223372036854775808.0)
                return static_cast<std::int64_t>(v);
            return std::nullopt;
        }
    }
}

bool read_dims(od::value value, std::vector<std::int64_t>& dims, std::vector<std::uint8_t>& ranks) {
    od::array array;
    if (value.get_array().get(array)) return false;
    for (auto element : array) {
        od::value v;
        if (element.get(v)) return false;
        od::json_type type;
        if (v.type().get(type)) return false;
        if (type == od::json_type::array) {  // TensorList: one nested list per tensor
            od::array inner;
            if (v.get_array().get(inner)) return false;
            std::uint8_t rank = 0;
            for (auto d : inner) {
                od::value dv;
                if (d.get(dv)) return false;
                auto n = as_int(dv);
                if (!n) return false;
                dims.push_back(*n);
                ++rank;
            }
            ranks.push_back(rank);
        } else {
            auto n = as_int(v);
            if (!n) return false;
            dims.push_back(*n);
        }
    }
    return true;
}

}  // namespace replay::kineto
