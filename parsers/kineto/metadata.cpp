// Reading the top-level metadata members (metadata.h).
#include "kineto/metadata.h"

#include "kineto/json_values.h"

namespace replay::kineto {

void parse_metadata(od::parser& parser, TraceMetadata& meta, std::string_view key, const char* json,
                    std::size_t length) {
    std::string padded(json, length);
    padded.append(simdjson::SIMDJSON_PADDING, ' ');
    od::document doc;
    if (parser.iterate(padded.data(), length, padded.size()).get(doc)) return;
    if (key == "baseTimeNanoseconds") {
        std::int64_t v;
        if (!doc.get_int64().get(v)) meta.base_time_ns = v;
    } else if (key == "displayTimeUnit") {
        std::string_view v;
        if (!doc.get_string().get(v)) meta.display_time_unit = v;
    } else if (key == "record_shapes") {
        std::int64_t v;
        if (!doc.get_int64().get(v)) meta.record_shapes = v != 0;
    } else if (key == "cuda_runtime_version" || key == "hip_runtime_version" ||
               key == "cuda_driver_version" || key == "hip_driver_version") {
        std::string_view token;
        if (doc.raw_json_token().get(token)) return;
        if (!token.empty() && token.front() == '"') {
            std::string_view quoted;
            if (!doc.get_string().get(quoted)) token = quoted;
        }
        while (!token.empty() && (token.back() == ' ' || token.back() == '\n'))
            token.remove_suffix(1);
        (key.find("driver") != std::string_view::npos ? meta.driver_version
                                                      : meta.runtime_version) = token;
        if (key.substr(0, 3) == "hip") meta.is_hip = true;
    } else if (key == "roctracer_version") {
        meta.is_hip = true;
    } else if (key == "distributedInfo") {
        od::object object;
        if (doc.get_object().get(object)) return;
        for (auto field : object) {
            std::string_view k;
            if (field.unescaped_key().get(k)) return;
            od::value v;
            if (field.value().get(v)) return;
            if (k == "rank") meta.rank = static_cast<int>(as_int(v).value_or(-1));
            if (k == "world_size") meta.world_size = static_cast<int>(as_int(v).value_or(-1));
            if (k == "backend") {
                std::string_view s;
                if (!v.get_string().get(s)) meta.distributed_backend = s;
            }
        }
    } else if (key == "deviceProperties") {
        od::array array;
        if (doc.get_array().get(array)) return;
        for (auto element : array) {
            od::object object;
            if (element.get_object().get(object)) return;
            DeviceInfo device;
            for (auto field : object) {
                std::string_view k;
                if (field.unescaped_key().get(k)) return;
                od::value v;
                if (field.value().get(v)) return;
                if (k == "id")
                    device.id = as_int(v).value_or(0);
                else if (k == "name") {
                    std::string_view s;
                    if (!v.get_string().get(s)) device.name = s;
                } else if (k == "totalGlobalMem")
                    device.total_global_mem = as_int(v).value_or(0);
                else if (k == "computeMajor")
                    device.compute_major = static_cast<int>(as_int(v).value_or(0));
                else if (k == "computeMinor")
                    device.compute_minor = static_cast<int>(as_int(v).value_or(0));
                else if (k == "numSms")
                    device.num_sms = static_cast<int>(as_int(v).value_or(0));
            }
            meta.devices.push_back(std::move(device));
        }
    }
}

}  // namespace replay::kineto
