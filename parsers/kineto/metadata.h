// The top-level members around traceEvents (device properties, distributed info, runtime
// versions, base time): small, parsed whole when their batch is committed.
#pragma once

#include <simdjson.h>

#include <cstddef>
#include <string>
#include <string_view>

#include "replay/trace_model.h"

namespace replay::kineto {

// Reads the member `key` whose value is json[0, length) into `meta`; members it does not know,
// and values of the wrong type, are passed over. Reads nothing past json + length (a padded copy:
// what follows the value in a chunk depends on where the chunks end).
void parse_metadata(simdjson::ondemand::parser& parser, TraceMetadata& meta, std::string_view key,
                    const char* json, std::size_t length);

}  // namespace replay::kineto
