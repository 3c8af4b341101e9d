// What a JSON input is, told by parsing its top level as far as needed: a file of this tool by
// its "schema" member (report, regression, kernel signatures), a Kineto trace by its
// "traceEvents" member (or a Chrome trace's top-level array), PyTorch's Execution Trace by its
// "nodes" array. Plain, .gz or .zst alike; a trace
// is read only up to its "traceEvents", whatever its size.
#pragma once

#include <cstdint>
#include <string>

namespace replay {

enum class DocumentKind : std::uint8_t {
    ToolFile,        // an object with "schema": "replay.<what>/<version>"
    Trace,           // an object with "traceEvents", or a top-level array
    ExecutionTrace,  // an object with a "nodes" array (PyTorch's Execution Trace)
    Other,           // JSON, but neither of those (or too short to tell)
    NotJson,         // not JSON at all
};

struct Document {
    DocumentKind kind = DocumentKind::Other;
    std::string schema;        // ToolFile: the "schema" value, e.g. "replay.report/1"
    std::uint64_t offset = 0;  // NotJson: where it stopped being JSON
    std::string why;           // Other, NotJson: what was found instead
};

// Throws InputError when the file cannot be opened or decompressed.
Document sniff_document(const std::string& path);

// What `path` is, said for a user who gave it where `wanted` (a Kineto trace, an Execution Trace)
// was expected: empty when it is of the wanted kind, cannot be read, or is something else (the
// reader's own error then says more).
std::string misplaced_document(const std::string& path, DocumentKind wanted);

}  // namespace replay
