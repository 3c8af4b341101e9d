#include "worker_wire.h"

#include <cstring>
#include <type_traits>

namespace replay::detail {
namespace {

template <typename T>
void append(std::string& out, T v) {
    static_assert(std::is_trivially_copyable_v<T>);
    char raw[sizeof(T)];
    std::memcpy(raw, &v, sizeof(T));
    out.append(raw, sizeof(T));
}

void encode(Encoder& e, const TensorSpec& t) {
    e.i64s(t.dims).i64s(t.strides).u8(static_cast<std::uint8_t>(t.dtype));
    e.i64(t.storage_id).i64(t.storage_offset).i64(t.reuse_bytes);
}

TensorSpec decode_tensor(Decoder& d) {
    TensorSpec t;
    t.dims = d.i64s();
    t.strides = d.i64s();
    t.dtype = static_cast<DType>(d.u8());
    t.storage_id = d.i64();
    t.storage_offset = d.i64();
    t.reuse_bytes = d.i64();
    return t;
}

void encode_detail(Encoder& e, const CopyRecipe& c) {
    e.u8(c.is_memset).u8(static_cast<std::uint8_t>(c.direction)).u8(c.host_pinned);
    e.i64(c.bytes).i64(c.value);
}

void encode_detail(Encoder& e, const GemmRecipe& g) {
    e.str(g.op).i64(g.m).i64(g.n).i64(g.k).i64(g.batch).u8(g.trans_a).u8(g.trans_b);
    e.i64(g.lda).i64(g.ldb).i64(g.ldc).i64(g.stride_a).i64(g.stride_b).i64(g.stride_c);
    for (DType t : {g.a_type, g.b_type, g.c_type, g.compute_type, g.bias_type})
        e.u8(static_cast<std::uint8_t>(t));
    e.f64(g.alpha).f64(g.beta).u8(g.bias).u8(g.bias_epilogue_recorded).u8(g.tf32_recorded);
    e.u8(g.c_broadcast);
    e.i64(g.a_storage).i64(g.b_storage).i64(g.c_storage);
    e.i64(g.a_reuse_bytes).i64(g.b_reuse_bytes).i64(g.c_reuse_bytes);
}

void encode_detail(Encoder& e, const AtenRecipe& a) {
    e.str(a.op).str(a.overload).str(a.schema).u32(static_cast<std::uint32_t>(a.args.size()));
    for (const auto& arg : a.args) {
        e.u8(static_cast<std::uint8_t>(arg.kind)).str(arg.type).str(arg.value);
        e.u8(static_cast<std::uint8_t>(arg.placement)).u32(arg.leading_nones);
        e.u32(static_cast<std::uint32_t>(arg.tensors.size()));
        for (const auto& t : arg.tensors) encode(e, t);
    }
}

void encode_detail(Encoder& e, const CollectiveRecipe& c) {
    e.str(c.collective).i64(c.in_nelems).i64(c.out_nelems);
    e.u8(static_cast<std::uint8_t>(c.dtype)).i64(c.group_size);
}

void encode_detail(Encoder& e, const TritonRecipe& t) {
    // The compiled image travels too: the worker launches it without the cache folder.
    e.str(t.kernel).str(t.variant).str(t.source).str(t.cubin);
    e.i64(t.num_warps).i64(t.shared_bytes).i64(t.grid[0]).i64(t.grid[1]).i64(t.grid[2]);
    e.u32(static_cast<std::uint32_t>(t.args.size()));
    for (const auto& a : t.args) {
        e.u8(a.pointer).i64(a.bits).i64(a.value).i64(a.bytes).str(a.buffer);
        e.u8(static_cast<std::uint8_t>(a.dtype)).u8(a.read).u8(a.graph_input).u8(a.positive);
        e.i64(a.index_bound);
    }
}

void encode_detail(Encoder&, const std::monostate&) {}

CopyRecipe decode_copy(Decoder& d) {
    CopyRecipe c;
    c.is_memset = d.u8() != 0;
    c.direction = static_cast<CopyDirection>(d.u8());
    c.host_pinned = d.u8() != 0;
    c.bytes = d.i64();
    c.value = static_cast<int>(d.i64());
    return c;
}

GemmRecipe decode_gemm(Decoder& d) {
    GemmRecipe g;
    g.op = d.str();
    g.m = d.i64();
    g.n = d.i64();
    g.k = d.i64();
    g.batch = d.i64();
    g.trans_a = d.u8() != 0;
    g.trans_b = d.u8() != 0;
    g.lda = d.i64();
    g.ldb = d.i64();
    g.ldc = d.i64();
    g.stride_a = d.i64();
    g.stride_b = d.i64();
    g.stride_c = d.i64();
    for (DType* t : {&g.a_type, &g.b_type, &g.c_type, &g.compute_type, &g.bias_type})
        *t = static_cast<DType>(d.u8());
    g.alpha = d.f64();
    g.beta = d.f64();
    g.bias = d.u8() != 0;
    g.bias_epilogue_recorded = d.u8() != 0;
    g.tf32_recorded = d.u8() != 0;
    g.c_broadcast = d.u8() != 0;
    g.a_storage = d.i64();
    g.b_storage = d.i64();
    g.c_storage = d.i64();
    g.a_reuse_bytes = d.i64();
    g.b_reuse_bytes = d.i64();
    g.c_reuse_bytes = d.i64();
    return g;
}

AtenRecipe decode_aten(Decoder& d) {
    AtenRecipe a;
    a.op = d.str();
    a.overload = d.str();
    a.schema = d.str();
    a.args.resize(d.count());
    for (auto& arg : a.args) {
        arg.kind = static_cast<ArgKind>(d.u8());
        arg.type = d.str();
        arg.value = d.str();
        arg.placement = static_cast<Placement>(d.u8());
        arg.leading_nones = d.u32();
        arg.tensors.resize(d.count());
        for (auto& t : arg.tensors) t = decode_tensor(d);
    }
    return a;
}

CollectiveRecipe decode_collective(Decoder& d) {
    CollectiveRecipe c;
    c.collective = d.str();
    c.in_nelems = d.i64();
    c.out_nelems = d.i64();
    c.dtype = static_cast<DType>(d.u8());
    c.group_size = static_cast<int>(d.i64());
    return c;
}

TritonRecipe decode_triton(Decoder& d) {
    TritonRecipe t;
    t.kernel = d.str();
    t.variant = d.str();
    t.source = d.str();
    t.cubin = d.str();
    t.num_warps = static_cast<int>(d.i64());
    t.shared_bytes = static_cast<int>(d.i64());
    for (auto& g : t.grid) g = static_cast<std::int32_t>(d.i64());
    t.args.resize(d.count());
    for (auto& a : t.args) {
        a.pointer = d.u8() != 0;
        a.bits = static_cast<int>(d.i64());
        a.value = d.i64();
        a.bytes = d.i64();
        a.buffer = d.str();
        a.dtype = static_cast<DType>(d.u8());
        a.read = d.u8() != 0;
        a.graph_input = d.u8() != 0;
        a.positive = d.u8() != 0;
        a.index_bound = d.i64();
    }
    return t;
}

}  // namespace

Encoder::Encoder(Command command) {
    append(bytes_, std::uint32_t{0});  // the length, filled in by take()
    append(bytes_, static_cast<std::uint8_t>(command));
}
Encoder& Encoder::u8(std::uint8_t v) {
    append(bytes_, v);
    return *this;
}
Encoder& Encoder::u32(std::uint32_t v) {
    append(bytes_, v);
    return *this;
}
Encoder& Encoder::i64(std::int64_t v) {
    append(bytes_, v);
    return *this;
}
Encoder& Encoder::f64(double v) {
    append(bytes_, v);
    return *this;
}
Encoder& Encoder::str(std::string_view v) {
    u32(static_cast<std::uint32_t>(v.size()));
    bytes_.append(v);
    return *this;
}
Encoder& Encoder::i64s(const std::vector<std::int64_t>& v) {
    u32(static_cast<std::uint32_t>(v.size()));
    for (auto x : v) i64(x);
    return *this;
}
std::string Encoder::take() {
    const auto length = static_cast<std::uint32_t>(bytes_.size() - kFrameHeader);
    std::memcpy(bytes_.data(), &length, sizeof length);
    return std::move(bytes_);
}

Decoder::Decoder(std::string_view message) : rest_(message) {
    command_ = static_cast<Command>(u8());
}
const char* Decoder::take(std::size_t n) {
    if (rest_.size() < n)
        throw WireError("worker message ends " + std::to_string(n - rest_.size()) + " bytes early");
    const char* at = rest_.data();
    rest_.remove_prefix(n);
    return at;
}
std::uint8_t Decoder::u8() {
    return static_cast<std::uint8_t>(*take(1));
}
std::uint32_t Decoder::u32() {
    std::uint32_t v;
    std::memcpy(&v, take(sizeof v), sizeof v);
    return v;
}
std::int64_t Decoder::i64() {
    std::int64_t v;
    std::memcpy(&v, take(sizeof v), sizeof v);
    return v;
}
double Decoder::f64() {
    double v;
    std::memcpy(&v, take(sizeof v), sizeof v);
    return v;
}
std::string Decoder::str() {
    const std::uint32_t n = u32();
    return std::string(take(n), n);
}
std::uint32_t Decoder::count() {
    const std::uint32_t n = u32();
    if (n > rest_.size())
        throw WireError("worker message: a list of " + std::to_string(n) +
                        " items is longer than the message");
    return n;
}
std::vector<std::int64_t> Decoder::i64s() {
    std::vector<std::int64_t> v(count());
    for (auto& x : v) x = i64();
    return v;
}

void FrameBuffer::append(const char* data, std::size_t n) {
    if (start_ > 0 && start_ >= bytes_.size() / 2) {
        bytes_.erase(0, start_);
        start_ = 0;
    }
    bytes_.append(data, n);
}

std::string_view FrameBuffer::next() {
    if (bytes_.size() - start_ < kFrameHeader) return {};
    std::uint32_t length;
    std::memcpy(&length, bytes_.data() + start_, sizeof length);
    if (length == 0 || length > kMaxFrame)
        throw WireError("a worker frame of " + std::to_string(length) + " bytes");
    if (bytes_.size() - start_ - kFrameHeader < length) return {};
    const std::string_view frame(bytes_.data() + start_ + kFrameHeader, length);
    start_ += kFrameHeader + length;
    return frame;
}

void encode(Encoder& e, const Recipe& r) {
    e.u8(static_cast<std::uint8_t>(r.tier)).str(r.rule).str(r.reason).u8(r.issued_with_op);
    e.u8(static_cast<std::uint8_t>(r.detail.index()));
    std::visit([&](const auto& detail) { encode_detail(e, detail); }, r.detail);
}

Recipe decode_recipe(Decoder& d) {
    Recipe r;
    r.tier = static_cast<Tier>(d.u8());
    r.rule = d.str();
    r.reason = d.str();
    r.issued_with_op = d.u8() != 0;
    switch (d.u8()) {  // RecipeDetail's alternatives, in order
        case 0:
            break;
        case 1:
            r.detail = decode_copy(d);
            break;
        case 2:
            r.detail = decode_gemm(d);
            break;
        case 3:
            r.detail = decode_aten(d);
            break;
        case 4:
            r.detail = decode_collective(d);
            break;
        case 5:
            r.detail = decode_triton(d);
            break;
        default:
            throw WireError("worker message: unknown recipe kind");
    }
    return r;
}

void encode(Encoder& e, const Environment& env) {
    for (const std::string* s :
         {&env.backend, &env.device_name, &env.device_uuid, &env.driver_version,
          &env.cuda_runtime_version, &env.cublas_version, &env.libtorch_version, &env.timing})
        e.str(*s);
    for (int v : {env.sm_clock_mhz, env.memory_clock_mhz, env.max_sm_clock_mhz, env.compute_major,
                  env.compute_minor})
        e.i64(v);
    e.i64(env.sm_count).i64(env.memory_bus_width_bits).u8(env.device_clock ? 1 : 0);
    e.u32(static_cast<std::uint32_t>(env.peaks.tflops.size()));
    for (const auto& [dtype, tflops] : env.peaks.tflops)
        e.u8(static_cast<std::uint8_t>(dtype)).f64(tflops);
    e.f64(env.peaks.memory_gb_per_s).str(env.peaks.why);
    e.i64(env.total_memory).u32(static_cast<std::uint32_t>(env.notes.size()));
    for (const auto& n : env.notes) e.str(n);
}

Environment decode_environment(Decoder& d) {
    Environment env;
    for (std::string* s :
         {&env.backend, &env.device_name, &env.device_uuid, &env.driver_version,
          &env.cuda_runtime_version, &env.cublas_version, &env.libtorch_version, &env.timing})
        *s = d.str();
    for (int* v : {&env.sm_clock_mhz, &env.memory_clock_mhz, &env.max_sm_clock_mhz,
                   &env.compute_major, &env.compute_minor})
        *v = static_cast<int>(d.i64());
    env.sm_count = static_cast<int>(d.i64());
    env.memory_bus_width_bits = static_cast<int>(d.i64());
    env.device_clock = d.u8() != 0;
    env.peaks.tflops.resize(d.count());
    for (auto& [dtype, tflops] : env.peaks.tflops) {
        dtype = static_cast<DType>(d.u8());
        tflops = d.f64();
    }
    env.peaks.memory_gb_per_s = d.f64();
    env.peaks.why = d.str();
    env.total_memory = d.i64();
    env.notes.resize(d.count());
    for (auto& n : env.notes) n = d.str();
    return env;
}

void encode(Encoder& e, const TimedActivity& a) {
    e.i64(static_cast<std::int64_t>(a.tag)).str(a.name).i64(a.start_ns).i64(a.end_ns);
    e.i64(a.stream).u8(a.per_kernel).u8(a.warm_read);
    for (std::int32_t g : a.grid) e.i64(g);
    e.i64(a.lane);
}

TimedActivity decode_activity(Decoder& d) {
    TimedActivity a;
    a.tag = static_cast<std::uint64_t>(d.i64());
    a.name = d.str();
    a.start_ns = d.i64();
    a.end_ns = d.i64();
    a.stream = d.i64();
    a.per_kernel = d.u8() != 0;
    a.warm_read = d.u8() != 0;
    for (std::int32_t& g : a.grid) g = static_cast<std::int32_t>(d.i64());
    a.lane = d.i64();
    return a;
}

}  // namespace replay::detail
