// The top-level members around traceEvents (device properties, distributed info, runtime
// versions, base time): small, parsed whole when their batch is committed.
#pragma once

#include <simdjson.h>

#include <cstddef>
#include <string_view>

#include "replay/trace_model.h"

namespace replay::kineto {

// Reads the member `key` whose value is json[0, length) (readable up to `capacity`) into `meta`;
// members it does not know, and values of the wrong type, are passed over.
void parse_metadata(simdjson::ondemand::parser& parser, TraceMetadata& meta, std::string_view key,
                    const char* json, std::size_t length, std::size_t capacity);

}  // namespace replay::kineto
