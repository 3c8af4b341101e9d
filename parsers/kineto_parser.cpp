#include "replay/kineto_parser.h"

#include <simdjson.h>

#include <charconv>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <mutex>
#include <optional>
#include <thread>

#include "replay/event_splitter.h"

namespace replay {
namespace {

namespace od = simdjson::ondemand;

enum class Category : std::uint8_t {
    Kernel, Memcpy, Memset, CpuOp, Annotation, PythonFunction, Runtime, Driver, Sync, Other, Missing
};

bool iequals(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i) {
        char x = a[i], y = b[i];
        if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
        if (x != y) return false;
    }
    return true;
}

Category categorize(std::string_view cat) {
    if (iequals(cat, "kernel")) return Category::Kernel;
    if (iequals(cat, "cpu_op") || iequals(cat, "operator")) return Category::CpuOp;
    if (iequals(cat, "cuda_runtime") || iequals(cat, "runtime")) return Category::Runtime;
    if (iequals(cat, "gpu_memcpy") || iequals(cat, "memcpy")) return Category::Memcpy;
    if (iequals(cat, "gpu_memset") || iequals(cat, "memset")) return Category::Memset;
    if (iequals(cat, "cuda_driver")) return Category::Driver;
    if (iequals(cat, "user_annotation")) return Category::Annotation;
    if (iequals(cat, "python_function")) return Category::PythonFunction;
    if (iequals(cat, "cuda_sync")) return Category::Sync;
    return Category::Other;
}

// A malformed event: why, and where inside the event.
struct Malformed {
    std::string reason;
};

// Integers may be written as floats ("device": 0.0) or exceed int64 (ids above 2^63 keep their bits).
std::optional<std::int64_t> as_int(od::value value) {
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
            double v;
            if (!value.get_double().get(v) && std::isfinite(v)) return static_cast<std::int64_t>(v);
            return std::nullopt;
        }
    }
}

// pid/tid: a number, a numeric string, "stream 7", or a label ("Traces", "Spans").
std::int64_t id_from(od::value value, StringPool& pool) {
    od::json_type type;
    if (value.type().get(type)) return 0;
    if (type == od::json_type::number) return as_int(value).value_or(0);
    std::string_view text;
    if (type != od::json_type::string || value.get_string().get(text)) return 0;
    std::string_view digits = text;
    if (digits.substr(0, 7) == "stream ") digits.remove_prefix(7);
    std::int64_t v = 0;
    auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
    if (ec == std::errc() && ptr == digits.data() + digits.size()) return v;
    // Labels get stable negative ids so that they never collide with real thread ids.
    return -1 - static_cast<std::int64_t>(pool.intern(text));
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

// Applies one list-valued record_shapes key to the per-input arguments.
template <typename Fn>
bool for_each_input(od::value value, std::vector<OpArgument>& inputs, Fn&& fn) {
    od::array array;
    if (value.get_array().get(array)) return false;
    std::size_t i = 0;
    for (auto element : array) {
        od::value v;
        if (element.get(v)) return false;
        if (inputs.size() <= i) inputs.resize(i + 1);
        if (!fn(v, inputs[i])) return false;
        ++i;
    }
    return true;
}

class EventParser {
public:
    EventParser(Trace& trace, ParseStats& stats) : trace_(trace), stats_(stats) {}

    void metadata(std::string_view key, const char* json, std::size_t length, std::size_t capacity);
    // Returns an empty optional on success, else why the event was skipped.
    std::optional<Malformed> event(const char* json, std::size_t length, std::size_t capacity,
                                   std::uint64_t offset);

private:
    std::optional<Malformed> parse_args(od::object args, Category category, std::size_t index);
    Trace& trace_;
    ParseStats& stats_;
    od::parser parser_;
    od::parser args_parser_;
};

std::optional<Malformed> EventParser::event(const char* json, std::size_t length,
                                            std::size_t capacity, std::uint64_t offset) {
    od::document doc;
    if (parser_.iterate(json, length, capacity).get(doc)) return Malformed{"not valid JSON"};
    od::object object;
    if (doc.get_object().get(object)) return Malformed{"an event is not a JSON object"};

    std::string_view ph, cat, name;
    bool has_cat = false;
    Category category = Category::Missing;
    std::int64_t pid = 0, tid = 0, ts = 0, dur = -1;
    bool has_ts = false, has_name = false;
    bool args_deferred = false;
    std::size_t index = kNoIndex;

    // Creates the typed record as soon as the category and phase are known, so that "args" can be
    // parsed in the same pass in the usual field order.
    auto ensure_record = [&]() {
        if (index != kNoIndex || ph != "X") return;
        switch (category) {
            case Category::Kernel:
            case Category::Memcpy:
            case Category::Memset:
                index = trace_.activities.size();
                trace_.activities.emplace_back();
                trace_.activities.back().kind = category == Category::Kernel   ? ActivityKind::Kernel
                                                : category == Category::Memcpy ? ActivityKind::Memcpy
                                                                               : ActivityKind::Memset;
                trace_.activities.back().byte_offset = offset;
                break;
            case Category::CpuOp:
            case Category::Annotation:
                index = trace_.cpu_ops.size();
                trace_.cpu_ops.emplace_back();
                trace_.cpu_ops.back().category = category == Category::CpuOp ? 0 : 1;
                break;
            case Category::Runtime:
            case Category::Driver:
            case Category::Sync:
                index = trace_.runtime_calls.size();
                trace_.runtime_calls.emplace_back();
                trace_.runtime_calls.back().is_driver = category == Category::Driver;
                break;
            default: break;
        }
    };
    auto discard_record = [&]() {
        if (index == kNoIndex) return;
        switch (category) {
            case Category::Kernel:
            case Category::Memcpy:
            case Category::Memset: trace_.activities.pop_back(); break;
            case Category::CpuOp:
            case Category::Annotation:
                if (trace_.cpu_ops.back().shapes != kNoIndex) trace_.op_shapes.pop_back();
                trace_.cpu_ops.pop_back();
                break;
            default: trace_.runtime_calls.pop_back(); break;
        }
    };
    auto fail = [&](std::string reason) {
        discard_record();
        return Malformed{std::move(reason)};
    };

    for (auto field : object) {
        std::string_view key;
        if (field.unescaped_key().get(key)) return fail("unreadable member name");
        od::value value;
        if (field.value().get(value)) return fail("unreadable value of \"" + std::string(key) + "\"");
        if (key == "ph") {
            if (value.get_string().get(ph)) return fail("\"ph\" is not a string");
            ensure_record();
        } else if (key == "cat") {
            if (value.get_string().get(cat)) return fail("\"cat\" is not a string");
            has_cat = true;
            category = categorize(cat);
            ensure_record();
        } else if (key == "name") {
            if (value.get_string().get(name)) return fail("\"name\" is not a string");
            has_name = true;
        } else if (key == "pid") {
            pid = id_from(value, trace_.names);
        } else if (key == "tid") {
            tid = id_from(value, trace_.names);
        } else if (key == "ts" || key == "dur") {
            const std::string_view token = value.raw_json_token();
            std::int64_t ns = 0;
            if (!micros_to_nanos(token, ns)) return fail("\"" + std::string(key) + "\" is not a number");
            (key == "ts" ? ts : dur) = ns;
            if (key == "ts") has_ts = true;
        } else if (key == "args") {
            if (index != kNoIndex) {
                od::object args;
                if (value.get_object().get(args)) return fail("\"args\" is not an object");
                if (auto bad = parse_args(args, category, index)) return fail(bad->reason);
            } else if (ph.empty() || !has_cat) {
                // Rare field order (args before ph/cat): parse the event again afterwards.
                args_deferred = true;
            }
        }
    }
    if (ph.empty()) return fail("missing \"ph\"");
    ++trace_.events_total;
    std::string tally(has_cat ? cat : std::string_view("(none)"));
    tally += '/';
    tally += ph;
    ++stats_.by_category[tally];
    if (ph == "s" || ph == "f" || ph == "t") ++trace_.flow_events;
    if (ph != "X") return std::nullopt;
    if (category == Category::Missing || category == Category::Other ||
        category == Category::PythonFunction)
        return std::nullopt;
    ensure_record();
    if (!has_name) return fail("missing \"name\"");
    if (!has_ts) return fail("missing \"ts\"");
    if (dur < 0) return fail("missing or negative \"dur\"");
    if (args_deferred) {
        od::document again;
        od::object args;
        if (args_parser_.iterate(json, length, capacity).get(again) || again["args"].get_object().get(args))
            return fail("\"args\" is not an object");
        if (auto bad = parse_args(args, category, index)) return fail(bad->reason);
    }
    const NameId name_id = trace_.names.intern(name);
    switch (category) {
        case Category::Kernel:
        case Category::Memcpy:
        case Category::Memset: {
            GpuActivity& a = trace_.activities[index];
            a.name = name_id;
            a.ts = ts;
            a.dur = dur;
            if (a.device == 0 && pid > 0) a.device = pid;
            if (a.stream == 0) a.stream = tid;
            break;
        }
        case Category::CpuOp:
        case Category::Annotation: {
            CpuOp& op = trace_.cpu_ops[index];
            op.name = name_id;
            op.ts = ts;
            op.dur = dur;
            op.pid = pid;
            op.tid = tid;
            break;
        }
        default: {
            RuntimeCall& call = trace_.runtime_calls[index];
            call.name = name_id;
            call.ts = ts;
            call.dur = dur;
            call.pid = pid;
            call.tid = tid;
            break;
        }
    }
    return std::nullopt;
}

std::optional<Malformed> EventParser::parse_args(od::object args, Category category, std::size_t index) {
    auto bad = [](std::string_view key) { return Malformed{"wrong type for args \"" + std::string(key) + "\""}; };
    for (auto field : args) {
        std::string_view key;
        if (field.unescaped_key().get(key)) return Malformed{"unreadable args member name"};
        od::value value;
        if (field.value().get(value)) return bad(key);
        const bool is_external = key == "External id" || key == "external id";
        switch (category) {
            case Category::Kernel:
            case Category::Memcpy:
            case Category::Memset: {
                GpuActivity& a = trace_.activities[index];
                auto set_int = [&](auto& slot) -> bool {
                    auto v = as_int(value);
                    if (!v) return false;
                    slot = static_cast<std::remove_reference_t<decltype(slot)>>(*v);
                    return true;
                };
                if (key == "correlation") {
                    if (!set_int(a.correlation)) return bad(key);
                } else if (is_external) {
                    if (!set_int(a.external_id)) return bad(key);
                } else if (key == "device") {
                    if (!set_int(a.device)) return bad(key);
                } else if (key == "stream") {
                    if (!set_int(a.stream)) return bad(key);
                } else if (key == "bytes") {
                    if (!set_int(a.bytes)) return bad(key);
                } else if (key == "registers per thread") {
                    if (!set_int(a.registers)) return bad(key);
                } else if (key == "shared memory") {
                    if (!set_int(a.shared_memory)) return bad(key);
                } else if (key == "grid" || key == "block") {
                    od::array dims;
                    if (value.get_array().get(dims)) return bad(key);
                    std::int32_t* out = key == "grid" ? a.grid : a.block;
                    int i = 0;
                    for (auto d : dims) {
                        od::value dv;
                        if (d.get(dv)) return bad(key);
                        auto n = as_int(dv);
                        if (!n) return bad(key);
                        if (i < 3) out[i++] = static_cast<std::int32_t>(*n);
                    }
                } else if (key == "Collective name" || key == "dtype") {
                    std::string_view text;
                    if (value.get_string().get(text)) return bad(key);
                    (key == "dtype" ? a.collective_dtype : a.collective) = trace_.names.intern(text);
                } else if (key == "In msg nelems") {
                    if (!set_int(a.in_nelems)) return bad(key);
                } else if (key == "Out msg nelems") {
                    if (!set_int(a.out_nelems)) return bad(key);
                } else if (key == "Group size") {
                    if (!set_int(a.group_size)) return bad(key);
                }
                break;
            }
            case Category::CpuOp:
            case Category::Annotation: {
                CpuOp& op = trace_.cpu_ops[index];
                auto shapes = [&]() -> OpShapes& {
                    if (op.shapes == kNoIndex) {
                        op.shapes = static_cast<std::uint32_t>(trace_.op_shapes.size());
                        trace_.op_shapes.emplace_back();
                    }
                    return trace_.op_shapes[op.shapes];
                };
                if (is_external) {
                    auto v = as_int(value);
                    if (!v) return bad(key);
                    op.external_id = *v;
                } else if (key == "Record function id") {
                    auto v = as_int(value);
                    if (!v) return bad(key);
                    op.record_function_id = *v;
                } else if (key == "Sequence number") {
                    auto v = as_int(value);
                    if (!v) return bad(key);
                    op.sequence_number = *v;
                } else if (key == "Input Dims" || key == "Input dims") {
                    if (!for_each_input(value, shapes().inputs, [](od::value v, OpArgument& arg) {
                            return read_dims(v, arg.dims, arg.list_ranks);
                        }))
                        return bad(key);
                } else if (key == "Input Strides") {
                    if (!for_each_input(value, shapes().inputs, [](od::value v, OpArgument& arg) {
                            std::vector<std::uint8_t> ranks;
                            arg.has_strides = true;
                            return read_dims(v, arg.strides, ranks);
                        }))
                        return bad(key);
                } else if (key == "Input type" || key == "Concrete Inputs") {
                    const bool is_type = key == "Input type";
                    if (!for_each_input(value, shapes().inputs, [&](od::value v, OpArgument& arg) {
                            std::string_view text;
                            if (v.get_string().get(text)) return false;
                            (is_type ? arg.type : arg.concrete) = trace_.names.intern(text);
                            return true;
                        }))
                        return bad(key);
                }
                break;
            }
            default: {
                RuntimeCall& call = trace_.runtime_calls[index];
                auto v = [&]() { return as_int(value); };
                if (key == "correlation") {
                    auto n = v();
                    if (!n) return bad(key);
                    call.correlation = *n;
                } else if (is_external) {
                    auto n = v();
                    if (!n) return bad(key);
                    call.external_id = *n;
                } else if (key == "wait_on_stream") {
                    auto n = v();
                    if (!n) return bad(key);
                    call.wait_on_stream = *n;
                } else if (key == "wait_on_cuda_event_record_corr_id") {
                    auto n = v();
                    if (!n) return bad(key);
                    call.wait_on_event_correlation = *n;
                }
                break;
            }
        }
    }
    return std::nullopt;
}

void EventParser::metadata(std::string_view key, const char* json, std::size_t length,
                           std::size_t capacity) {
    TraceMetadata& meta = trace_.meta;
    od::document doc;
    if (parser_.iterate(json, length, capacity).get(doc)) return;
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
        while (!token.empty() && (token.back() == ' ' || token.back() == '\n')) token.remove_suffix(1);
        (key.find("driver") != std::string_view::npos ? meta.driver_version : meta.runtime_version) = token;
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
                if (k == "id") device.id = as_int(v).value_or(0);
                else if (k == "name") {
                    std::string_view s;
                    if (!v.get_string().get(s)) device.name = s;
                } else if (k == "totalGlobalMem") device.total_global_mem = as_int(v).value_or(0);
                else if (k == "computeMajor") device.compute_major = static_cast<int>(as_int(v).value_or(0));
                else if (k == "computeMinor") device.compute_minor = static_cast<int>(as_int(v).value_or(0));
                else if (k == "numSms") device.num_sms = static_cast<int>(as_int(v).value_or(0));
            }
            meta.devices.push_back(std::move(device));
        }
    }
}

// Chunks travel from the reading thread to the parsing thread; buffers are recycled.
struct Chunk {
    std::vector<char> data;  // holds `size` bytes plus simdjson::SIMDJSON_PADDING readable bytes
    std::size_t size = 0;
    std::uint64_t base = 0;  // absolute offset of data[0]
    std::vector<Span> spans;
    bool last = false;
};

class ChunkQueue {
public:
    void push(std::unique_ptr<Chunk> chunk) {
        std::unique_lock lock(mutex_);
        ready_.push_back(std::move(chunk));
        cv_.notify_all();
    }
    std::unique_ptr<Chunk> pop() {
        std::unique_lock lock(mutex_);
        cv_.wait(lock, [&] { return !ready_.empty(); });
        auto chunk = std::move(ready_.front());
        ready_.erase(ready_.begin());
        return chunk;
    }

private:
    std::mutex mutex_;
    std::condition_variable cv_;
    std::vector<std::unique_ptr<Chunk>> ready_;
};

constexpr int kBuffers = 4;

}  // namespace

bool micros_to_nanos(std::string_view text, std::int64_t& out) {
    while (!text.empty() && (text.back() == ' ' || text.back() == '\n' || text.back() == '\r' ||
                             text.back() == '\t'))
        text.remove_suffix(1);
    if (text.empty()) return false;
    bool negative = false;
    std::size_t i = 0;
    if (text[0] == '-') {
        negative = true;
        i = 1;
    }
    std::int64_t whole = 0;
    std::size_t digits = 0;
    for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i, ++digits) {
        if (whole > (std::numeric_limits<std::int64_t>::max() - 9) / 10 / 1000) return false;
        whole = whole * 10 + (text[i] - '0');
    }
    if (digits == 0) return false;
    std::int64_t frac = 0;  // nanoseconds
    if (i < text.size() && text[i] == '.') {
        ++i;
        int scale = 100;
        bool round_up = false;
        std::size_t fdigits = 0;
        for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i, ++fdigits) {
            if (scale >= 1) {
                frac += (text[i] - '0') * scale;
                scale /= 10;
            } else if (fdigits == 3) {
                round_up = text[i] >= '5';
            }
        }
        if (fdigits == 0) return false;
        if (round_up) ++frac;
    }
    if (i < text.size()) {
        if (text[i] != 'e' && text[i] != 'E') return false;
        // Exponent notation is rare; a double is exact enough for it.
        double v = 0;
        auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
        if (ec != std::errc() || ptr != text.data() + text.size() || !std::isfinite(v)) return false;
        out = std::llround(v * 1000.0);
        return true;
    }
    out = whole * 1000 + frac;
    if (negative) out = -out;
    return true;
}

ParseResult parse_kineto(const std::string& path, const ParseOptions& options) {
    ParseResult result;
    Trace& trace = result.trace;
    ParseStats& stats = result.stats;
    trace.source = path;
    auto source = open_source(path);
    stats.compression = source->compression();
    const std::string& file = source->name();

    ChunkQueue filled, empty;
    for (int i = 0; i < kBuffers; ++i) {
        auto chunk = std::make_unique<Chunk>();
        chunk->data.resize(options.chunk_bytes + simdjson::SIMDJSON_PADDING);
        empty.push(std::move(chunk));
    }
    std::exception_ptr reader_error;
    EventSplitter splitter;
    std::uint64_t peak = static_cast<std::uint64_t>(kBuffers) * (options.chunk_bytes + simdjson::SIMDJSON_PADDING);

    // Reader: fills buffers, splits them and carries an unfinished event into the next buffer.
    std::thread reader([&] {
        std::vector<char> carry;
        std::uint64_t json_bytes = 0;
        try {
            bool eof = false;
            while (!eof) {
                auto chunk = empty.pop();
                const std::size_t want = std::max(options.chunk_bytes, carry.size() * 2);
                if (chunk->data.size() < want + simdjson::SIMDJSON_PADDING) chunk->data.resize(want + simdjson::SIMDJSON_PADDING);
                std::memcpy(chunk->data.data(), carry.data(), carry.size());
                std::size_t size = carry.size();
                const std::size_t capacity = chunk->data.size() - simdjson::SIMDJSON_PADDING;
                while (size < capacity) {
                    std::size_t n = source->read(std::span<char>(chunk->data.data() + size, capacity - size));
                    if (n == 0) {
                        eof = true;
                        break;
                    }
                    size += n;
                    json_bytes += n;
                }
                std::memset(chunk->data.data() + size, ' ', simdjson::SIMDJSON_PADDING);
                chunk->size = size;
                chunk->base = splitter.base_offset();
                chunk->spans.clear();
                std::size_t keep = 0;
                try {
                    keep = splitter.scan(chunk->data.data(), size, eof, chunk->spans);
                } catch (const EventSplitter::SplitError& e) {
                    throw InputError(file, e.offset, "not a JSON trace: expected " + e.expected);
                }
                carry.assign(chunk->data.begin() + static_cast<std::ptrdiff_t>(keep),
                             chunk->data.begin() + static_cast<std::ptrdiff_t>(size));
                chunk->last = eof;
                if (options.progress) options.progress(source->raw_offset(), source->raw_size());
                filled.push(std::move(chunk));
            }
        } catch (...) {
            reader_error = std::current_exception();
            auto chunk = std::make_unique<Chunk>();
            chunk->last = true;
            filled.push(std::move(chunk));
        }
        stats.json_bytes = json_bytes;
    });

    EventParser parser(trace, stats);
    std::optional<InputError> strict_error;
    for (bool done = false; !done;) {
        auto chunk = filled.pop();
        done = chunk->last;
        peak = std::max<std::uint64_t>(peak, kBuffers * chunk->data.capacity());
        for (const Span& span : chunk->spans) {
            const char* at = chunk->data.data() + span.begin;
            const std::size_t capacity = chunk->size + simdjson::SIMDJSON_PADDING - span.begin;
            if (span.metadata) {
                parser.metadata(std::string_view(chunk->data.data() + span.key_begin, span.key_length), at,
                                span.length, capacity);
                continue;
            }
            ++stats.events;
            if (strict_error) continue;
            const std::uint64_t offset = chunk->base + span.begin;
            if (auto bad = parser.event(at, span.length, capacity, offset)) {
                if (stats.malformed++ == 0) {
                    stats.first_malformed_offset = offset;
                    stats.first_malformed_reason = bad->reason;
                }
                if (options.strict) strict_error.emplace(file, offset, "malformed event: " + bad->reason);
            }
        }
        if (!chunk->data.empty()) empty.push(std::move(chunk));
    }
    reader.join();
    if (reader_error) std::rethrow_exception(reader_error);
    if (strict_error) throw *strict_error;

    stats.raw_bytes = source->raw_offset();
    stats.peak_buffer_bytes = peak;
    stats.stray_bytes = splitter.stray_bytes();
    stats.first_stray_offset = splitter.first_stray_offset();
    if (stats.json_bytes == 0) throw InputError(file, 0, "empty input (no bytes after decompression)");
    if (!splitter.saw_events_array())
        throw InputError(file, stats.json_bytes, "no \"traceEvents\" array: not a Kineto/Chrome trace");
    if (!splitter.complete() || source->truncated()) {
        stats.truncated = true;
        stats.truncated_lost_bytes = stats.json_bytes - splitter.last_complete_end();
        result.warnings.push_back(file + ": truncated input (" +
                                  (source->truncated() ? std::string(to_string(source->compression())) + " stream cut short; " : "") +
                                  std::to_string(stats.truncated_lost_bytes) +
                                  " bytes after the last complete event at byte " +
                                  std::to_string(splitter.last_complete_end()) + " were lost)");
    }
    const std::uint64_t valid = stats.events - stats.malformed;
    if (valid == 0)
        throw InputError(file, stats.malformed ? stats.first_malformed_offset : splitter.last_complete_end(),
                         stats.malformed ? "no valid event found (first malformed: " + stats.first_malformed_reason + ")"
                                         : "no valid event found");
    if (stats.malformed)
        result.warnings.push_back(file + ": skipped " + std::to_string(stats.malformed) +
                                  " malformed event(s); the first at byte " +
                                  std::to_string(stats.first_malformed_offset) + ": " +
                                  stats.first_malformed_reason);
    if (stats.stray_bytes)
        result.warnings.push_back(file + ": skipped " + std::to_string(stats.stray_bytes) +
                                  " stray byte(s) outside events; the first at byte " +
                                  std::to_string(stats.first_stray_offset));
    return result;
}

}  // namespace replay
