#include "replay/document_kind.h"

#include <vector>

#include "replay/source.h"

namespace replay {
namespace {

constexpr std::size_t kChunk = 64 << 10;
constexpr std::size_t kLongestKept = 256;  // member names and schema values longer are cut

// The bytes of a source one at a time, from chunks.
class Bytes {
  public:
    explicit Bytes(ByteSource& source) : source_(source), chunk_(kChunk) {}
    // -1 at the end.
    int next() {
        if (at_ == size_) {
            size_ = source_.read(chunk_);
            at_ = 0;
            if (size_ == 0) return -1;
        }
        ++offset_;
        return static_cast<unsigned char>(chunk_[at_++]);
    }
    int next_non_space() {
        int c = next();
        while (c == ' ' || c == '\t' || c == '\n' || c == '\r') c = next();
        return c;
    }
    std::uint64_t offset() const { return offset_; }  // bytes consumed

  private:
    ByteSource& source_;
    std::vector<char> chunk_;
    std::size_t at_ = 0, size_ = 0;
    std::uint64_t offset_ = 0;
};

// After the opening quote: the string's text (escapes kept as written, cut at kLongestKept);
// false when the input ends first.
bool read_string(Bytes& in, std::string& out) {
    out.clear();
    for (int c = in.next(); c != -1; c = in.next()) {
        if (c == '"') return true;
        if (c == '\\') {
            const int escaped = in.next();
            if (escaped == -1) return false;
            if (out.size() < kLongestKept) out += static_cast<char>(escaped);
            continue;
        }
        if (out.size() < kLongestKept) out += static_cast<char>(c);
    }
    return false;
}

// Skips one value whose first byte is `c`; returns the byte after it (-1 at the end), or -2 when
// the input ends inside it.
int skip_value(Bytes& in, int c) {
    std::string ignored;
    if (c == '"') return read_string(in, ignored) ? in.next_non_space() : -2;
    if (c != '{' && c != '[') {  // number, true, false, null
        while (c != -1 && c != ',' && c != '}' && c != ']' && c != ' ' && c != '\n' && c != '\r' &&
               c != '\t')
            c = in.next();
        return c == -1                                             ? -1
               : (c == ' ' || c == '\n' || c == '\r' || c == '\t') ? in.next_non_space()
                                                                   : c;
    }
    std::size_t depth = 1;
    while (depth > 0) {
        c = in.next();
        if (c == -1) return -2;
        if (c == '"' && !read_string(in, ignored)) return -2;
        if (c == '{' || c == '[') ++depth;
        if (c == '}' || c == ']') --depth;
    }
    return in.next_non_space();
}

Document not_json(const Bytes& in, const std::string& why) {
    Document d;
    d.kind = DocumentKind::NotJson;
    d.offset = in.offset() == 0 ? 0 : in.offset() - 1;
    d.why = why;
    return d;
}

}  // namespace

Document sniff_document(const std::string& path) {
    auto source = open_source(path);
    Bytes in(*source);
    int c = in.next_non_space();
    if (c == 0xEF) {  // a UTF-8 byte order mark
        in.next();
        in.next();
        c = in.next_non_space();
    }
    if (c == -1) return not_json(in, "empty file");
    if (c == '[') return Document{DocumentKind::Trace, {}, 0, {}};
    if (c != '{') return not_json(in, "neither a JSON object nor an array");
    std::string key, value;
    bool ended_early = false;
    for (c = in.next_non_space(); c != '}';) {
        if (c != '"') {
            if (c == -1)
                ended_early = true;
            else
                return not_json(in, "expected a member name");
            break;
        }
        if (!read_string(in, key)) {
            ended_early = true;
            break;
        }
        if (in.next_non_space() != ':') return not_json(in, "expected ':' after a member name");
        c = in.next_non_space();
        if (key == "traceEvents") return Document{DocumentKind::Trace, {}, 0, {}};
        if (key == "nodes" && c == '[')
            return Document{DocumentKind::ExecutionTrace,
                            {},
                            0,
                            "a PyTorch Execution Trace (a top-level \"nodes\" array)"};
        if (key == "schema" && c == '"') {
            if (!read_string(in, value)) {
                ended_early = true;
                break;
            }
            // Other JSON (an Execution Trace) has a "schema" of its own.
            if (value.starts_with("replay.")) return Document{DocumentKind::ToolFile, value, 0, {}};
            c = in.next_non_space();
        } else {
            c = skip_value(in, c);
            if (c == -2) {
                ended_early = true;
                break;
            }
        }
        if (c == ',')
            c = in.next_non_space();
        else if (c != '}') {
            if (c == -1)
                ended_early = true;
            else
                return not_json(in, "expected ',' or '}' after a member");
            break;
        }
    }
    Document d;
    d.why = ended_early ? "it ends before a \"schema\" or \"traceEvents\" member (truncated?)"
                        : "a JSON object without a \"schema\" of this tool or \"traceEvents\"";
    return d;
}

std::string misplaced_document(const std::string& path, DocumentKind wanted) {
    if (path == "-") return {};  // stdin was read already
    Document d;
    try {
        d = sniff_document(path);
    } catch (const InputError&) {
        return {};
    }
    if (d.kind == wanted) return {};
    switch (d.kind) {
        case DocumentKind::ExecutionTrace:
            return d.why +
                   ", not a Kineto trace: give it with --et, next to the Kineto trace of "
                   "the same run";
        case DocumentKind::Trace:
            return "a Kineto trace (a \"traceEvents\" array), not an Execution Trace: give it as "
                   "the trace argument";
        case DocumentKind::ToolFile:
            return "a file this tool wrote (schema \"" + d.schema + "\"), not a trace";
        case DocumentKind::Other:
        case DocumentKind::NotJson:
            break;
    }
    return {};
}

}  // namespace replay
