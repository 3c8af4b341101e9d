// What a JSON input is, told by parsing its top level as far as needed: a file of this tool by
// its "schema" member (report, regression, kernel signatures), a Kineto trace by its
// "traceEvents" member (or a Chrome trace's top-level array). Plain, .gz or .zst alike; a trace
// is read only up to its "traceEvents", whatever its size.
#pragma once

#include <cstdint>
#include <string>

namespace replay {

enum class DocumentKind : std::uint8_t {
    ToolFile,  // an object with "schema": "replay.<what>/<version>"
    Trace,     // an object with "traceEvents", or a top-level array
    Other,     // JSON, but neither of those (or too short to tell)
    NotJson,   // not JSON at all
};

struct Document {
    DocumentKind kind = DocumentKind::Other;
    std::string schema;        // ToolFile: the "schema" value, e.g. "replay.report/1"
    std::uint64_t offset = 0;  // NotJson: where it stopped being JSON
    std::string why;           // Other, NotJson: what was found instead
};

// Throws InputError when the file cannot be opened or decompressed.
Document sniff_document(const std::string& path);

}  // namespace replay
