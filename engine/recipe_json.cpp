#include "replay/recipe_json.h"

#include <simdjson.h>

#include <algorithm>
#include <ostream>

#include "replay/input_error.h"
#include "replay/source.h"  // read_all

namespace replay {
namespace {

namespace od = simdjson::ondemand;

void write_tensor(JsonWriter& json, const TensorSpec& t) {
    json.begin_object();
    json.array("dims", t.dims);
    if (!t.strides.empty()) json.array("strides", t.strides);
    json.field("dtype", to_string(t.dtype));
    if (t.storage_id >= 0)
        json.field("storage_id", t.storage_id).field("storage_offset", t.storage_offset);
    if (t.reuse_bytes != kReuseUnknown) json.field("reuse_bytes", t.reuse_bytes);
    json.end_object();
}

struct Reader {
    const std::string& file;
    const std::string& text;
    [[noreturn]] void fail(od::value& v, const std::string& what) {
        const char* at = nullptr;
        std::uint64_t offset = 0;
        if (!v.current_location().get(at) && at != nullptr)
            offset = static_cast<std::uint64_t>(at - text.data());
        throw InputError(file, offset, what);
    }
    [[noreturn]] void fail_at(std::uint64_t offset, const std::string& what) {
        throw InputError(file, offset, what);
    }
};

std::int64_t get_i64(od::value v, std::int64_t fallback = 0) {
    std::int64_t x;
    if (!v.get_int64().get(x)) return x;
    double d;
    // A double beyond int64's range (or not finite) has no integer value: converting it is UB.
    if (!v.get_double().get(d) && d >= -9.2e18 && d <= 9.2e18) return static_cast<std::int64_t>(d);
    return fallback;
}
double get_f64(od::value v) {
    double d = 0;
    if (v.get_double().get(d)) return 0;
    return d;
}
std::string get_str(od::value v) {
    std::string_view s;
    if (v.get_string().get(s)) return {};
    return std::string(s);
}
std::vector<std::int64_t> get_i64s(od::value v) {
    std::vector<std::int64_t> out;
    od::array a;
    if (v.get_array().get(a)) return out;
    for (auto e : a) {
        od::value x;
        if (!e.get(x)) out.push_back(get_i64(x));
    }
    return out;
}

TensorSpec read_tensor(od::value v) {
    TensorSpec t;
    od::object o;
    if (v.get_object().get(o)) return t;
    for (auto f : o) {
        std::string_view k;
        if (f.unescaped_key().get(k)) continue;
        od::value x;
        if (f.value().get(x)) continue;
        if (k == "dims")
            t.dims = get_i64s(x);
        else if (k == "strides")
            t.strides = get_i64s(x);
        else if (k == "dtype")
            t.dtype = dtype_from_name(get_str(x));
        else if (k == "storage_id")
            t.storage_id = get_i64(x, -1);
        else if (k == "storage_offset")
            t.storage_offset = get_i64(x);
        else if (k == "reuse_bytes")
            t.reuse_bytes = get_i64(x, kReuseUnknown);
    }
    return t;
}

Recipe read_recipe(od::value v) {
    Recipe r;
    od::object o;
    if (v.get_object().get(o)) return r;
    std::string kind;
    GemmRecipe gemm;
    CopyRecipe copy;
    AtenRecipe aten;
    CollectiveRecipe coll;
    for (auto f : o) {
        std::string_view k;
        if (f.unescaped_key().get(k)) continue;
        od::value x;
        if (f.value().get(x)) continue;
        if (k == "tier") {
            const auto t = get_i64(x, 0);
            r.tier = t >= 1 && t <= 4 ? static_cast<Tier>(t) : Tier::NotReplayable;
            // A Triton recipe (tier 5) needs its cubin, which stays in the Inductor cache.
        } else if (k == "rule")
            r.rule = get_str(x);
        else if (k == "reason")
            r.reason = get_str(x);
        else if (k == "issued_with_op") {
            bool b = false;
            if (!x.get_bool().get(b)) r.issued_with_op = b;
        } else if (k == "kind")
            kind = get_str(x);
        // copy
        else if (k == "bytes")
            copy.bytes = get_i64(x);
        else if (k == "direction") {
            const std::string d = get_str(x);
            for (auto dir : {CopyDirection::HostToDevice, CopyDirection::DeviceToHost,
                             CopyDirection::DeviceToDevice, CopyDirection::HostToHost,
                             CopyDirection::PeerToPeer, CopyDirection::Device})
                if (d == to_string(dir)) copy.direction = dir;
        } else if (k == "host_pinned") {
            bool b = false;
            if (!x.get_bool().get(b)) copy.host_pinned = b;
        } else if (k == "value")
            copy.value = static_cast<int>(get_i64(x));
        // gemm
        else if (k == "m")
            gemm.m = get_i64(x);
        else if (k == "n")
            gemm.n = get_i64(x);
        else if (k == "k")
            gemm.k = get_i64(x);
        else if (k == "batch")
            gemm.batch = get_i64(x, 1);
        else if (k == "trans_a") {
            bool b = false;
            if (!x.get_bool().get(b)) gemm.trans_a = b;
        } else if (k == "trans_b") {
            bool b = false;
            if (!x.get_bool().get(b)) gemm.trans_b = b;
        } else if (k == "lda")
            gemm.lda = get_i64(x);
        else if (k == "ldb")
            gemm.ldb = get_i64(x);
        else if (k == "ldc")
            gemm.ldc = get_i64(x);
        else if (k == "stride_a")
            gemm.stride_a = get_i64(x);
        else if (k == "stride_b")
            gemm.stride_b = get_i64(x);
        else if (k == "stride_c")
            gemm.stride_c = get_i64(x);
        else if (k == "a_type")
            gemm.a_type = dtype_from_name(get_str(x));
        else if (k == "b_type")
            gemm.b_type = dtype_from_name(get_str(x));
        else if (k == "c_type")
            gemm.c_type = dtype_from_name(get_str(x));
        else if (k == "compute_type")
            gemm.compute_type = dtype_from_name(get_str(x));
        else if (k == "alpha")
            gemm.alpha = get_f64(x);
        else if (k == "beta")
            gemm.beta = get_f64(x);
        else if (k == "bias") {
            bool b = false;
            if (!x.get_bool().get(b)) gemm.bias = b;
        } else if (k == "bias_type")
            gemm.bias_type = dtype_from_name(get_str(x));
        else if (k == "bias_epilogue_recorded") {
            bool b = false;
            if (!x.get_bool().get(b)) gemm.bias_epilogue_recorded = b;
        } else if (k == "tf32_recorded") {
            bool b = false;
            if (!x.get_bool().get(b)) gemm.tf32_recorded = b;
        } else if (k == "c_broadcast") {
            bool b = false;
            if (!x.get_bool().get(b)) gemm.c_broadcast = b;
        } else if (k == "a_storage")
            gemm.a_storage = get_i64(x, -1);
        else if (k == "b_storage")
            gemm.b_storage = get_i64(x, -1);
        else if (k == "c_storage")
            gemm.c_storage = get_i64(x, -1);
        else if (k == "a_reuse_bytes")
            gemm.a_reuse_bytes = get_i64(x, kReuseUnknown);
        else if (k == "b_reuse_bytes")
            gemm.b_reuse_bytes = get_i64(x, kReuseUnknown);
        else if (k == "c_reuse_bytes")
            gemm.c_reuse_bytes = get_i64(x, kReuseUnknown);
        // aten / gemm op
        else if (k == "op")
            aten.op = gemm.op = get_str(x);
        else if (k == "overload")
            aten.overload = get_str(x);
        else if (k == "schema")
            aten.schema = get_str(x);
        else if (k == "args") {
            od::array args;
            if (x.get_array().get(args)) continue;
            for (auto e : args) {
                od::object ao;
                if (e.get_object().get(ao)) continue;
                AtenArgument arg;
                for (auto af : ao) {
                    std::string_view ak;
                    if (af.unescaped_key().get(ak)) continue;
                    od::value av;
                    if (af.value().get(av)) continue;
                    if (ak == "kind") {
                        const std::string s = get_str(av);
                        for (auto kk :
                             {ArgKind::Tensor, ArgKind::TensorList, ArgKind::Scalar,
                              ArgKind::ScalarList, ArgKind::None, ArgKind::String, ArgKind::Other})
                            if (s == to_string(kk)) arg.kind = kk;
                    } else if (ak == "type")
                        arg.type = get_str(av);
                    else if (ak == "value")
                        arg.value = get_str(av);
                    else if (ak == "leading_nones")
                        arg.leading_nones = static_cast<std::uint32_t>(
                            std::clamp<std::int64_t>(get_i64(av), 0, 64));
                    else if (ak == "placement") {
                        const std::string s = get_str(av);
                        for (auto p : {Placement::Host, Placement::Device})
                            if (s == to_string(p)) arg.placement = p;
                    }
                    else if (ak == "tensors") {
                        od::array ts;
                        if (av.get_array().get(ts)) continue;
                        for (auto te : ts) {
                            od::value tv;
                            if (!te.get(tv)) arg.tensors.push_back(read_tensor(tv));
                        }
                    }
                }
                aten.args.push_back(std::move(arg));
            }
        }
        // collective
        else if (k == "collective")
            coll.collective = get_str(x);
        else if (k == "in_nelems")
            coll.in_nelems = get_i64(x, -1);
        else if (k == "out_nelems")
            coll.out_nelems = get_i64(x, -1);
        else if (k == "dtype")
            coll.dtype = dtype_from_name(get_str(x));
        else if (k == "group_size")
            coll.group_size = static_cast<int>(get_i64(x, -1));
    }
    if (kind == "memcpy" || kind == "memset") {
        copy.is_memset = kind == "memset";
        r.detail = copy;
    } else if (kind == "gemm") {
        r.detail = gemm;
    } else if (kind == "aten") {
        r.detail = std::move(aten);
    } else if (kind == "collective") {
        r.detail = coll;
    }
    return r;
}

}  // namespace

void write_tier(JsonWriter& json, Tier tier) {
    if (tier == Tier::NotReplayable)
        json.key("tier").null();
    else
        json.field("tier", static_cast<int>(tier));
}

void write_recipe(JsonWriter& json, const Recipe& recipe) {
    json.begin_object();
    write_tier(json, recipe.tier);
    json.field("rule", recipe.rule);
    if (!recipe.reason.empty()) json.field("reason", recipe.reason);
    if (recipe.issued_with_op) json.field("issued_with_op", true);
    std::visit(
        [&](const auto& d) {
            using T = std::decay_t<decltype(d)>;
            if constexpr (std::is_same_v<T, CopyRecipe>) {
                json.field("kind", d.is_memset ? "memset" : "memcpy");
                json.field("bytes", d.bytes).field("direction", to_string(d.direction));
                json.field("host_pinned", d.host_pinned);
                if (d.is_memset) json.field("value", d.value);
            } else if constexpr (std::is_same_v<T, GemmRecipe>) {
                json.field("kind", "gemm").field("op", d.op);
                json.field("m", d.m).field("n", d.n).field("k", d.k).field("batch", d.batch);
                json.field("trans_a", d.trans_a).field("trans_b", d.trans_b);
                json.field("lda", d.lda).field("ldb", d.ldb).field("ldc", d.ldc);
                json.field("stride_a", d.stride_a)
                    .field("stride_b", d.stride_b)
                    .field("stride_c", d.stride_c);
                json.field("a_type", to_string(d.a_type)).field("b_type", to_string(d.b_type));
                json.field("c_type", to_string(d.c_type))
                    .field("compute_type", to_string(d.compute_type));
                json.field("alpha", d.alpha).field("beta", d.beta).field("bias", d.bias);
                if (d.bias) json.field("bias_type", to_string(d.bias_type));
                if (d.bias_epilogue_recorded) json.field("bias_epilogue_recorded", true);
                if (d.tf32_recorded) json.field("tf32_recorded", true);
                if (d.c_broadcast) json.field("c_broadcast", true);
                if (d.a_storage >= 0 || d.b_storage >= 0 || d.c_storage >= 0)
                    json.field("a_storage", d.a_storage)
                        .field("b_storage", d.b_storage)
                        .field("c_storage", d.c_storage)
                        .field("a_reuse_bytes", d.a_reuse_bytes)
                        .field("b_reuse_bytes", d.b_reuse_bytes)
                        .field("c_reuse_bytes", d.c_reuse_bytes);
                json.field("gflop", d.flops() / 1e9);
            } else if constexpr (std::is_same_v<T, AtenRecipe>) {
                json.field("kind", "aten").field("op", d.op).field("overload", d.overload);
                if (!d.schema.empty()) json.field("schema", d.schema);
                json.key("args").begin_array();
                for (const auto& a : d.args) {
                    json.begin_object().field("kind", to_string(a.kind)).field("type", a.type);
                    if (!a.value.empty()) json.field("value", a.value);
                    if (a.placement != Placement::Unknown)
                        json.field("placement", to_string(a.placement));
                    if (a.leading_nones > 0) json.field("leading_nones", a.leading_nones);
                    if (!a.tensors.empty()) {
                        json.key("tensors").begin_array();
                        for (const auto& t : a.tensors) write_tensor(json, t);
                        json.end_array();
                    }
                    json.end_object();
                }
                json.end_array();
            } else if constexpr (std::is_same_v<T, CollectiveRecipe>) {
                json.field("kind", "collective").field("collective", d.collective);
                json.field("in_nelems", d.in_nelems).field("out_nelems", d.out_nelems);
                json.field("dtype", to_string(d.dtype)).field("group_size", d.group_size);
            } else if constexpr (std::is_same_v<T, TritonRecipe>) {
                json.field("kind", "triton").field("kernel", d.kernel).field("variant", d.variant);
                json.field("source", d.source).field("num_warps", d.num_warps);
                json.field("shared_bytes", d.shared_bytes);
                json.key("grid").begin_array();
                for (auto g : d.grid) json.value(static_cast<std::int64_t>(g));
                json.end_array();
                json.key("args").begin_array();
                for (const auto& a : d.args) {
                    json.begin_object();
                    if (a.pointer) {
                        json.field("buffer", a.buffer).field("bytes", a.bytes);
                        if (a.read) json.field("read", true);
                        if (a.graph_input) json.field("graph_input", true);
                        if (a.positive) json.field("positive", true);
                        if (a.index_bound > 0) json.field("index_bound", a.index_bound);
                    } else
                        json.field("bits", a.bits).field("value", a.value);
                    json.end_object();
                }
                json.end_array();
            }
        },
        recipe.detail);
    json.end_object();
}

const std::vector<DurationField>& duration_fields() {
    static const std::vector<DurationField> fields = {
        {"min", &DurationStats::min},   {"median", &DurationStats::median},
        {"mean", &DurationStats::mean}, {"max", &DurationStats::max},
        {"sum", &DurationStats::sum},   {"stddev", &DurationStats::stddev},
        {"p95", &DurationStats::p95},   {"p99", &DurationStats::p99}};
    return fields;
}

void write_duration_stats(JsonWriter& json, const DurationStats& s) {
    json.begin_object();
    json.field("count", static_cast<std::uint64_t>(s.count));
    for (const auto& f : duration_fields()) json.field(f.name, s.*f.member);
    json.end_object();
}

void write_signature_file(std::ostream& out, const SignatureFile& file) {
    JsonWriter json(out);
    json.begin_object();
    json.field("schema", "replay.kernel_signatures/1");
    json.field("trace", file.trace).field("trace_hash", file.trace_hash);
    if (!file.dataflow.empty()) json.field("dataflow", file.dataflow);
    json.key("kernels").begin_array();
    for (const auto& k : file.kernels) {
        json.begin_object();
        json.field("id", k.id).field("kind", to_string(k.kind)).field("name", k.name);
        json.key("grid")
            .begin_array()
            .value(k.grid[0])
            .value(k.grid[1])
            .value(k.grid[2])
            .end_array();
        json.key("block")
            .begin_array()
            .value(k.block[0])
            .value(k.block[1])
            .value(k.block[2])
            .end_array();
        json.field("count", static_cast<std::uint64_t>(k.recorded_us.count));
        json.key("recorded_us");
        write_duration_stats(json, k.recorded_us);
        json.key("recipe");
        write_recipe(json, k.recipe);
        json.end_object();
    }
    json.end_array();
    json.end_object();
    out << '\n';
}

SignatureFile read_signature_file(const std::string& path) {
    const std::string text = read_all(path);
    Reader reader{path, text};
    simdjson::padded_string padded(text);
    od::parser parser;
    od::document doc;
    if (parser.iterate(padded).get(doc)) reader.fail_at(0, "not JSON");
    SignatureFile file;
    od::object root;
    if (doc.get_object().get(root))
        reader.fail_at(0, "expected a JSON object (kernel_signatures.json)");
    bool has_kernels = false;
    for (auto f : root) {
        std::string_view k;
        if (f.unescaped_key().get(k)) reader.fail_at(0, "unreadable member name");
        od::value v;
        if (f.value().get(v)) reader.fail_at(0, "unreadable value");
        if (k == "trace")
            file.trace = get_str(v);
        else if (k == "trace_hash")
            file.trace_hash = get_str(v);
        else if (k == "kernels") {
            has_kernels = true;
            od::array arr;
            if (v.get_array().get(arr)) reader.fail(v, "\"kernels\" must be an array");
            for (auto e : arr) {
                od::object ko;
                if (e.get_object().get(ko)) reader.fail_at(0, "a kernel entry is not an object");
                UniqueKernel kernel;
                for (auto kf : ko) {
                    std::string_view kk;
                    if (kf.unescaped_key().get(kk)) continue;
                    od::value kv;
                    if (kf.value().get(kv)) continue;
                    if (kk == "id")
                        kernel.id = get_str(kv);
                    else if (kk == "name")
                        kernel.name = get_str(kv);
                    else if (kk == "kind") {
                        const std::string s = get_str(kv);
                        kernel.kind = s == "memcpy"   ? ActivityKind::Memcpy
                                      : s == "memset" ? ActivityKind::Memset
                                                      : ActivityKind::Kernel;
                    } else if (kk == "grid" || kk == "block") {
                        auto dims = get_i64s(kv);
                        for (std::size_t i = 0; i < 3 && i < dims.size(); ++i)
                            (kk == "grid" ? kernel.grid : kernel.block)[i] =
                                static_cast<std::int32_t>(dims[i]);
                    } else if (kk == "recorded_us") {
                        od::object so;
                        if (kv.get_object().get(so)) continue;
                        for (auto sf : so) {
                            std::string_view sk;
                            if (sf.unescaped_key().get(sk)) continue;
                            od::value sv;
                            if (sf.value().get(sv)) continue;
                            auto& s = kernel.recorded_us;
                            if (sk == "count") s.count = static_cast<std::size_t>(get_i64(sv));
                            for (const auto& f : duration_fields())
                                if (sk == f.name) s.*f.member = get_f64(sv);
                        }
                    } else if (kk == "recipe") {
                        kernel.recipe = read_recipe(kv);
                    }
                }
                if (kernel.id.empty()) reader.fail_at(0, "a kernel entry has no \"id\"");
                file.kernels.push_back(std::move(kernel));
            }
        }
    }
    if (!has_kernels) reader.fail_at(0, "no \"kernels\" array: not a kernel_signatures.json file");
    return file;
}

}  // namespace replay
