#include "replay/inductor_cache.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "inductor_externs.h"
#include "replay/input_error.h"
#include "replay/source.h"
#include "wrapper_text.h"

namespace replay {
namespace {

using namespace wrapper_text;
namespace fs = std::filesystem;

constexpr std::uint64_t kMaxCacheBytes = 1ull << 30;  // a cache of one compiled model is MBs
// Storage ids of the wrapper's graph inputs: above the dataflow's (one per recorded storage),
// below 2^29 (the CUDA backend keys buffers by the id modulo 2^29), 2^16 per wrapper file.
constexpr std::int64_t kWrapperInputStorages = std::int64_t{1} << 28;

DType dtype_of_triton(std::string_view pointee) {  // "fp16", "bf16", "fp32", "i64", ...
    static const std::pair<const char*, DType> kNames[] = {
        {"fp16", DType::Float16}, {"bf16", DType::BFloat16}, {"fp32", DType::Float32},
        {"fp64", DType::Float64}, {"i64", DType::Int64},     {"i32", DType::Int32},
        {"i16", DType::Int16},    {"i8", DType::Int8},       {"u8", DType::UInt8},
        {"i1", DType::Bool}};
    for (const auto& [n, d] : kNames)
        if (pointee == n) return d;
    return DType::Unknown;
}

std::int64_t allocation_bytes(const std::vector<std::int64_t>& sizes,
                              const std::vector<std::int64_t>& strides, DType dtype) {
    const std::int64_t elements = view_extent(sizes, strides);
    const std::size_t size = element_size(dtype);
    return size == 0 ? -1 : elements * static_cast<std::int64_t>(size);
}

// A number member of Triton's metadata JSON (flat enough for a scan).
std::optional<std::int64_t> json_number(std::string_view json, std::string_view key) {
    const std::string quoted = "\"" + std::string(key) + "\":";
    const auto at = json.find(quoted);
    if (at == std::string_view::npos) return std::nullopt;
    std::size_t i = at + quoted.size();
    while (i < json.size() && json[i] == ' ') ++i;
    std::size_t end = i;
    while (end < json.size() && (std::isdigit(static_cast<unsigned char>(json[end])) || json[end] == '-'))
        ++end;
    return integer(json.substr(i, end - i));
}

std::string json_string(std::string_view json, std::string_view key) {
    const std::string quoted = "\"" + std::string(key) + "\": \"";
    const auto at = json.find(quoted);
    if (at == std::string_view::npos) return {};
    const auto start = at + quoted.size();
    const auto end = json.find('"', start);
    return end == std::string_view::npos ? std::string{} : std::string(json.substr(start, end - start));
}

// ---- reading the folder or the tar --------------------------------------------------------------

using Files = std::map<std::string, std::string>;  // relative path -> content

bool wanted(const std::string& path) {
    for (const char* ext : {".cubin", ".ptx", ".ttir", ".json", ".py", ".best_config"})
        if (path.ends_with(ext)) return true;
    return false;
}

Files read_folder(const std::string& root) {
    Files files;
    std::uint64_t total = 0;
    for (const auto& e : fs::recursive_directory_iterator(root)) {
        if (!e.is_regular_file()) continue;
        const std::string rel = fs::relative(e.path(), root).generic_string();
        if (!wanted(rel)) continue;
        total += e.file_size();
        if (total > kMaxCacheBytes)
            throw InputError(root, 0, "an Inductor cache of more than 1 GiB of kernels and code");
        std::ifstream in(e.path(), std::ios::binary);
        files[rel] = std::string(std::istreambuf_iterator<char>(in), {});
    }
    return files;
}

std::uint64_t octal(std::string_view field) {
    std::uint64_t v = 0;
    for (char c : field) {
        if (c < '0' || c > '7') break;
        v = v * 8 + static_cast<std::uint64_t>(c - '0');
    }
    return v;
}

// ustar with GNU long names and pax paths: what Python's tarfile and GNU tar write.
Files read_tar(const std::string& path) {
    const std::string bytes = read_all(path);  // gzip and zstd by content
    Files files;
    std::string long_name;
    for (std::size_t at = 0; at + 512 <= bytes.size();) {
        const std::string_view header(bytes.data() + at, 512);
        if (header.find_first_not_of('\0') == std::string_view::npos) break;  // the end blocks
        const std::uint64_t size = octal(header.substr(124, 12));
        const char type = header[156];
        const std::size_t data = at + 512;
        if (data + size > bytes.size())
            throw InputError(path, at, "a tar member runs past the end of the archive");
        const std::string_view content(bytes.data() + data, size);
        std::string name(header.substr(0, 100).data(), strnlen(header.data(), 100));
        if (header.substr(257, 5) == "ustar") {
            const std::string prefix(header.data() + 345, strnlen(header.data() + 345, 155));
            if (!prefix.empty()) name = prefix + "/" + name;
        }
        if (!long_name.empty()) name = std::exchange(long_name, {});
        if (type == 'L') {
            long_name = std::string(content.data(), strnlen(content.data(), content.size()));
        } else if (type == 'x') {
            const auto p = content.find(" path=");
            if (p != std::string_view::npos) {
                const auto end = content.find('\n', p);
                long_name = std::string(content.substr(p + 6, end - p - 6));
            }
        } else if ((type == '0' || type == '\0') && wanted(name)) {
            files[name] = std::string(content);
        }
        at = data + (size + 511) / 512 * 512;
    }
    if (files.empty()) throw InputError(path, 0, "no Triton kernels or wrapper code in this tar");
    return files;
}

std::string folder_of(const std::string& path) {
    const auto slash = path.rfind('/');
    return slash == std::string::npos ? std::string{} : path.substr(0, slash);
}

std::string base_of(const std::string& path) {
    const auto slash = path.rfind('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
}

// The file name of the path in the wrapper's `# kernel path: /.../4x/c4xee....py` comment
// that belongs to the kernel source string opening at `quote` (after the string before it);
// empty when there is none.
std::string kernel_file_before(const std::string& text, std::size_t quote) {
    static constexpr std::string_view kComment = "# kernel path: ";
    if (quote == std::string::npos || quote == 0) return {};
    const std::size_t at = text.rfind(kComment, quote);
    if (at == std::string::npos) return {};
    const std::size_t previous = text.rfind("'''", quote - 1);
    if (previous != std::string::npos && previous > at) return {};
    const std::size_t start = at + kComment.size();
    const std::size_t end = text.find('\n', start);
    return base_of(std::string(trim(std::string_view(text).substr(
        start, end == std::string::npos ? std::string::npos : end - start))));
}

// The file name of the first source location of a Triton IR (`#loc =
// loc("/.../c4xee....py":18:0)`).
std::string ir_source_file(std::string_view ir) {
    const std::size_t at = ir.find("loc(\"");
    if (at == std::string_view::npos) return {};
    const std::size_t end = ir.find('"', at + 5);
    if (end == std::string_view::npos || end - at > 4096) return {};
    return base_of(std::string(ir.substr(at + 5, end - at - 5)));
}

}  // namespace

// XBLOCK and YBLOCK of a Triton IR (TritonVariant::x_block, y_block): the constant that
// Inductor's `xoffset = tl.program_id(0) * XBLOCK` multiplies the axis's program id by
// (`%xoffset_7 = arith.muli %xoffset, %c32_i32 : i32`, named after the Python variable), 1 for
// an axis whose id is not multiplied (XBLOCK 1 is folded away), 0 for an axis without a program
// id or an IR without those names. Not the `tl.arange` ranges: the compiler merges XBLOCK's into
// YBLOCK's when both are 32, and a row's stride multiplies the id of a one-row program too.
std::pair<std::int64_t, std::int64_t> triton_program_blocks(const std::string& ttir) {
    static const std::regex constant(R"((%[\w]+) = arith\.constant (\d+) : i(?:32|64))");
    static const std::regex program(R"(%([xy])offset = tt\.get_program_id ([xy]))");
    static const std::regex offset(
        R"(%([xy])offset_\d+ = arith\.muli (%[\w]+), (%[\w]+) : i(?:32|64))");
    std::unordered_map<std::string, std::int64_t> constants;
    for (std::sregex_iterator it(ttir.begin(), ttir.end(), constant), e; it != e; ++it)
        constants[(*it)[1].str()] = std::stoll((*it)[2].str());
    std::map<char, std::int64_t> blocks;
    for (std::sregex_iterator it(ttir.begin(), ttir.end(), program), e; it != e; ++it)
        if ((*it)[1] == (*it)[2]) blocks[(*it)[1].str()[0]] = 1;
    for (std::sregex_iterator it(ttir.begin(), ttir.end(), offset), e; it != e; ++it) {
        const char axis = (*it)[1].str()[0];
        if (!blocks.count(axis)) continue;
        for (const auto& factor : {(*it)[2].str(), (*it)[3].str()})
            if (const auto c = constants.find(factor); c != constants.end())
                blocks[axis] = c->second;
    }
    return {blocks.count('x') ? blocks['x'] : 0, blocks.count('y') ? blocks['y'] : 0};
}

std::vector<PtxEntry> parse_ptx_entries(std::string_view ptx, const std::string& file) {
    std::vector<PtxEntry> out;
    for (std::size_t at = ptx.find(".entry"); at != std::string_view::npos;
         at = ptx.find(".entry", at + 6)) {
        PtxEntry e;
        std::size_t i = at + 6;
        while (i < ptx.size() && std::isspace(static_cast<unsigned char>(ptx[i]))) ++i;
        const std::size_t name_end = ptx.find_first_of("( \t\n", i);
        if (name_end == std::string_view::npos) break;
        e.name = std::string(ptx.substr(i, name_end - i));
        const std::size_t open = ptx.find('(', name_end);
        const std::size_t close = ptx.find(')', open);
        if (open == std::string_view::npos || close == std::string_view::npos)
            throw InputError(file, at, "a PTX .entry whose parameter list does not close");
        for (auto decl : split(ptx.substr(open + 1, close - open - 1), ',')) {
            if (decl.find(".param") == std::string_view::npos) continue;
            PtxParam p;
            p.pointer = decl.find(".ptr") != std::string_view::npos;
            for (const auto& [type, bits, floating] :
                 {std::tuple{".u64", 64, false}, {".s64", 64, false}, {".b64", 64, false},
                  {".u32", 32, false}, {".s32", 32, false}, {".b32", 32, false},
                  {".f32", 32, true}, {".f64", 64, true}, {".u16", 16, false},
                  {".s16", 16, false}, {".u8", 8, false}, {".s8", 8, false}})
                if (decl.find(type) != std::string_view::npos) {
                    p.bits = bits;
                    p.floating = floating;
                    break;
                }
            e.params.push_back(p);
        }
        const auto body = ptx.find('{', close);
        const auto reqntid = ptx.find(".reqntid", close);
        if (reqntid != std::string_view::npos && reqntid < body)
            e.reqntid = static_cast<int>(integer(split(ptx.substr(reqntid + 8, ptx.find('\n', reqntid) - reqntid - 8), ',').front()).value_or(0));
        out.push_back(std::move(e));
        at = close;
    }
    return out;
}

void parse_wrapper_code(std::string_view python, InductorCache& cache) {
    const std::string text(python);
    // bufN = empty_strided_cuda((4096, 16384), (16384, 1), torch.float16)
    static const std::regex alloc(
        R"((\w+) = empty_strided_cuda\(\(([^)]*)\), \(([^)]*)\), torch\.(\w+)\))");
    // bufM = reinterpret_tensor(bufN, (2, 14, 256, 64), (229376, 64, 896, 1), 0): the same
    // allocation, under bufM's own sizes and strides where they are literals
    static const std::regex alias(
        R"((\w+) = reinterpret_tensor\((\w+),(?: \(([^)]*)\), \(([^)]*)\), \d+\))?)");
    // buf13 = buf12; del buf12  # reuse
    static const std::regex reuse(R"((\w+) = (\w+); del \w+\s+# reuse)");
    // assert_size_stride(arg0_1, (16384, 4096), (4096, 1)) (newer Inductor adds the op's name)
    // and rand_strided(..., dtype=torch.x)
    static const std::regex input(R"(assert_size_stride\((\w+), \(([^)]*)\), \(([^)]*)\)[,)])");
    static const std::regex input_dtype(
        R"((\w+) = rand_strided\(\(([^)]*)\), \(([^)]*)\), device='cuda[^']*', dtype=torch\.(\w+)\))");
    static const std::regex call(R"((triton_\w+)\.run\(([^)]*)\))");
    static const std::regex signature(R"('signature': \{([^}]*)\})");
    static const std::regex jit_def(R"(@triton\.jit\s*\ndef (\w+)\()");
    // A template's (or a user kernel's) fixed grid, passed after the kernel's own arguments:
    // 'extra_launcher_args': ['_grid_0', '_grid_1', '_grid_2']
    static const std::regex launcher_args(R"('extra_launcher_args': \[([^\]]*)\])");

    // Buffers of this file: each graph's wrapper (forward, backward, ...) names its own buf0.
    std::map<std::string, WrapperBuffer> buffers;
    std::unordered_map<std::string, std::pair<std::vector<std::int64_t>, std::vector<std::int64_t>>>
        input_shapes;
    std::unordered_map<std::string, std::string> aliases;
    const auto allocated = [](const std::string& sizes, const std::string& strides, DType d) {
        WrapperBuffer b;
        b.dims = integers(sizes);
        b.strides = integers(strides);
        b.bytes = allocation_bytes(b.dims, b.strides, d);
        b.dtype = d;
        return b;
    };
    for (std::sregex_iterator it(text.begin(), text.end(), alloc), end; it != end; ++it) {
        const auto& m = *it;
        buffers[m[1].str()] = allocated(m[2].str(), m[3].str(), dtype_of_torch(m[4].str()));
    }
    for (std::sregex_iterator it(text.begin(), text.end(), input), end; it != end; ++it)
        input_shapes[(*it)[1].str()] = {integers((*it)[2].str()), integers((*it)[3].str())};
    for (std::sregex_iterator it(text.begin(), text.end(), input_dtype), end; it != end; ++it) {
        const auto& m = *it;
        buffers[m[1].str()] = allocated(m[2].str(), m[3].str(), dtype_of_torch(m[4].str()));
    }
    for (const auto& [name, shape] : input_shapes)
        if (!buffers.count(name))
            buffers[name] = {-1, DType::Unknown, view_extent(shape.first, shape.second),
                             shape.first, shape.second};
    std::unordered_map<std::string, std::pair<std::vector<std::int64_t>, std::vector<std::int64_t>>>
        views;  // the reinterpret_tensor aliases' sizes and strides
    for (const std::regex* pattern : {&alias, &reuse})
        for (std::sregex_iterator it(text.begin(), text.end(), *pattern), end; it != end; ++it) {
            const auto& m = *it;
            aliases[m[1].str()] = m[2].str();
            if (pattern == &alias && m[3].matched)
                views[m[1].str()] = {integers(m[3].str()), integers(m[4].str())};
        }
    const auto follow_aliases = [&] {
        for (const auto& [name, target] : aliases) {
            std::string root = target;
            for (int hops = 0; hops < 64 && aliases.count(root); ++hops) root = aliases[root];
            if (auto b = buffers.find(root); b != buffers.end()) buffers[name] = b->second;
            // The sizes of the nearest view on the way (`buf54 = buf31  # reuse` of a view).
            std::string at = name;
            for (int hops = 0; hops < 64 && aliases.count(at); ++hops, at = aliases[at])
                if (const auto v = views.find(at); v != views.end()) {
                    std::tie(buffers[name].dims, buffers[name].strides) = v->second;
                    break;
                }
        }
    };
    follow_aliases();
    // The library calls, in order: the result of one (a convolution's, only its size asserted)
    // takes the element type of its input, and the buffers that reuse it with it.
    // The graph's inputs (its parameters and caches) are storages of their own: ids above the
    // dataflow's, per file (each compiled graph names its own arg0_1).
    std::map<std::string, std::int64_t> input_storages;
    for (const auto& [name, shape] : input_shapes) input_storages.emplace(name, 0);
    std::int64_t next_storage =
        kWrapperInputStorages + static_cast<std::int64_t>(cache.definitions.size()) * (1 << 16);
    for (auto& [name, id] : input_storages) id = next_storage++;
    auto externs = parse_extern_calls(text, buffers, aliases, input_storages);
    follow_aliases();
    const std::size_t first_call = cache.calls.size();  // this file's call sites start here
    std::vector<std::pair<std::size_t, WrapperStep>> steps;  // by position in the text
    for (std::sregex_iterator it(text.begin(), text.end(), call), end; it != end; ++it) {
        steps.push_back({static_cast<std::size_t>(it->position()), {true, cache.calls.size(), 0}});
        TritonCallSite site;
        site.kernel = (*it)[1].str();
        const std::string args = (*it)[2].str();  // split() returns views into it
        for (auto arg : split(args, ',')) {
            if (arg.find('=') != std::string_view::npos) continue;  // stream=stream0
            CallArgument a;
            if (auto v = integer(arg)) {
                a.value = *v;
            } else {
                a.buffer = std::string(arg);
                if (auto b = buffers.find(a.buffer); b != buffers.end()) a.size = b->second;
            }
            site.args.push_back(std::move(a));
        }
        cache.calls.push_back(std::move(site));
    }
    for (auto& [name, buffer] : buffers) cache.buffers.insert_or_assign(name, buffer);
    // A kernel's definition: the signature in the decorator just before `@triton.jit def name(`.
    // Which of its positional arguments are compile-time constants: Inductor passes a size of 1
    // (`xnumel`) or a seed offset as an argument the kernel was specialised on; the PTX entry
    // does not take them.
    std::map<std::string, std::vector<bool>> constant_at;
    std::map<std::string, std::size_t> launcher_extra;  // trailing call arguments that are the grid
    const std::size_t file = cache.definitions.size();
    std::map<std::string, TritonDefinition>& defined = cache.definitions.emplace_back();
    for (std::sregex_iterator it(text.begin(), text.end(), jit_def), end; it != end; ++it) {
        const std::string name = (*it)[1].str();
        // Its decorator: from the source string the definition is in (''') to the `def`.
        const auto def_at = static_cast<std::size_t>(it->position());
        const std::size_t quote = text.rfind("'''", def_at);
        const std::size_t from = quote == std::string::npos ? 0 : quote;
        const std::string before = text.substr(from, def_at - from);
        std::string last;
        for (std::sregex_iterator s(before.begin(), before.end(), signature), e; s != e; ++s)
            last = (*s)[1].str();
        if (last.empty()) continue;
        std::smatch extra;
        if (std::regex_search(before, extra, launcher_args)) {
            const std::string names = extra[1].str();  // split() returns views into it
            std::size_t n = 0;
            for (auto entry : split(names, ',')) n += !trim(entry).empty();
            launcher_extra[name] = n;
        }
        std::vector<std::pair<std::string, std::string>> params;
        std::vector<std::string> pointers;
        std::vector<bool>& constants = constant_at[name];
        for (auto entry : split(last, ',')) {
            const auto colon = entry.find(':');
            if (colon == std::string_view::npos) continue;
            auto unquote = [](std::string_view s) {
                s = trim(s);
                if (s.size() >= 2 && (s.front() == '\'' || s.front() == '"')) s = s.substr(1, s.size() - 2);
                return std::string(s);
            };
            const std::string type = unquote(entry.substr(colon + 1));
            constants.push_back(type == "constexpr");
            if (type == "constexpr") continue;
            params.emplace_back(unquote(entry.substr(0, colon)), type);
            if (type.starts_with("*")) pointers.push_back(params.back().first);
        }
        // The kernel's body: from its `def` to the end of the source string it is in.
        const auto body_start = static_cast<std::size_t>(it->position() + it->length());
        const std::size_t body_end = text.find("'''", body_start);
        const std::string_view body =
            std::string_view(text).substr(body_start, body_end - body_start);
        defined[name] = {std::move(params), positive_arguments(body, pointers),
                         index_bounds(body, pointers), kernel_file_before(text, from)};
    }
    for (auto& [at, extern_call] : externs) {
        extern_call.file = file;
        steps.push_back({at, {false, cache.externs.size(), file}});
        cache.externs.push_back(std::move(extern_call));
    }
    std::sort(steps.begin(), steps.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    for (auto& [at, step] : steps) {
        step.file = file;
        if (step.triton) cache.calls[step.index].step = cache.steps.size();
        cache.steps.push_back(step);
    }
    for (std::size_t c = first_call; c < cache.calls.size(); ++c) {
        TritonCallSite& site = cache.calls[c];
        site.file = file;
        // Triton's launcher takes the grid off the end before calling the kernel.
        if (const auto e = launcher_extra.find(site.kernel);
            e != launcher_extra.end() && e->second <= site.args.size())
            site.args.resize(site.args.size() - e->second);
        const auto constants = constant_at.find(site.kernel);
        if (constants == constant_at.end()) continue;
        std::vector<CallArgument> runtime;
        for (std::size_t i = 0; i < site.args.size(); ++i)
            if (i >= constants->second.size() || !constants->second[i])
                runtime.push_back(std::move(site.args[i]));
        site.args = std::move(runtime);
    }
}

const TritonDefinition* InductorCache::definition(const std::string& kernel) const {
    for (const auto& defined : definitions)
        if (const auto d = defined.find(kernel); d != defined.end()) return &d->second;
    return nullptr;
}

const TritonDefinition* InductorCache::definition_of(const TritonCallSite& site) const {
    if (site.file < definitions.size())
        if (const auto d = definitions[site.file].find(site.kernel);
            d != definitions[site.file].end())
            return &d->second;
    return definition(site.kernel);
}

std::vector<const TritonVariant*> InductorCache::variants_of(std::string_view kernel,
                                                             int block_threads) const {
    std::vector<const TritonVariant*> out;
    for (const auto& v : variants)
        if (v.name == kernel && v.num_warps * 32 == block_threads) out.push_back(&v);
    std::stable_sort(out.begin(), out.end(), [](const TritonVariant* a, const TritonVariant* b) {
        return a->preferred > b->preferred;
    });
    return out;
}

InductorCache read_inductor_cache(const std::string& path) {
    std::error_code ec;
    const Files files = fs::is_directory(path, ec) ? read_folder(path) : read_tar(path);
    InductorCache cache;
    cache.source = path;
    std::set<std::string> preferred;
    for (const auto& [name, content] : files) {
        if (name.ends_with(".best_config")) {
            const std::string hash = json_string(content, "triton_cache_hash");
            if (!hash.empty()) preferred.insert(hash);
        } else if (name.ends_with(".py")) {
            parse_wrapper_code(content, cache);
        }
    }
    for (const auto& [name, content] : files) {
        if (!name.ends_with(".json") || base_of(name).starts_with("__grp__")) continue;
        const std::string folder = folder_of(name);
        if (base_of(folder_of(folder)) != "triton") continue;
        TritonVariant v;
        v.name = json_string(content, "name");
        if (v.name.empty()) continue;
        v.hash = base_of(folder);
        // The image and the PTX beside the metadata: named as it is, less ".json" (Triton cuts a
        // long kernel name short in file names, not in the metadata).
        const std::string stem = name.substr(0, name.size() - 5);
        const auto cubin = files.find(stem + ".cubin");
        const auto ptx = files.find(stem + ".ptx");
        if (cubin == files.end() || ptx == files.end()) continue;
        v.cubin = cubin->second;
        if (const auto ttir = files.find(stem + ".ttir"); ttir != files.end()) {
            std::tie(v.x_block, v.y_block) = triton_program_blocks(ttir->second);
            v.source_file = ir_source_file(ttir->second);
        }
        for (const auto& e : parse_ptx_entries(ptx->second, path + ":" + ptx->first))
            if (e.name == v.name) v.params = e.params;
        v.num_warps = static_cast<int>(json_number(content, "num_warps").value_or(0));
        v.shared_bytes = static_cast<int>(json_number(content, "shared").value_or(0));
        v.global_scratch_bytes = json_number(content, "global_scratch_size").value_or(0);
        v.profile_scratch_bytes = json_number(content, "profile_scratch_size").value_or(0);
        v.arch = static_cast<int>(json_number(content, "arch").value_or(0));
        v.preferred = preferred.count(v.hash) > 0;
        cache.variants.push_back(std::move(v));
    }
    if (cache.variants.empty())
        throw InputError(path, 0,
                         "no compiled Triton kernel (triton/<hash>/<kernel>.{cubin,json,ptx}) in "
                         "this Inductor cache");
    return cache;
}

namespace {

// Whether a call site's arguments fit a compiled variant's PTX entry: a pointer for each buffer,
// a number for each integer, and only pointers (Triton's scratch) after them.
bool fits(const TritonCallSite& site, const TritonVariant& v) {
    if (v.params.size() < site.args.size()) return false;
    for (std::size_t i = 0; i < v.params.size(); ++i)
        if (v.params[i].pointer != (i < site.args.size() ? !site.args[i].buffer.empty() : true))
            return false;
    return true;
}

// Among `fitting` variants (preferred first), the first whose blocks cover the launch's
// elements in the recorded grid, ceil(xnumel / XBLOCK) programs along x (and ceil(ynumel /
// YBLOCK) along y for a tiled kernel); nullptr when none tells. The autotuner compiles variants
// of one warp count that differ in their blocks: another one's programs would each take another
// share of the elements (less work, or more, or reads past the buffers of a kernel compiled
// without a mask because its blocks divide xnumel).
const TritonVariant* covering(const std::vector<const TritonVariant*>& fitting,
                              const TritonCallSite& site,
                              const std::vector<std::pair<std::string, std::string>>* sig,
                              const GpuActivity& a) {
    if (sig == nullptr || a.grid[2] > 1) return nullptr;
    std::int64_t xnumel = 0, ynumel = 0;
    for (std::size_t i = 0; i < sig->size() && i < site.args.size(); ++i) {
        if (!site.args[i].buffer.empty()) continue;
        if ((*sig)[i].first == "xnumel") xnumel = site.args[i].value;
        if ((*sig)[i].first == "ynumel") ynumel = site.args[i].value;
    }
    if (xnumel <= 0 || (a.grid[1] > 1 && ynumel <= 0)) return nullptr;
    auto programs = [](std::int64_t elements, std::int64_t block) {
        return (elements + block - 1) / block;
    };
    for (const TritonVariant* v : fitting) {
        if (v->x_block <= 0 || programs(xnumel, v->x_block) != a.grid[0]) continue;
        if (ynumel > 0 && (v->y_block <= 0 || programs(ynumel, v->y_block) != a.grid[1])) continue;
        return v;
    }
    return nullptr;
}

}  // namespace

InductorStats apply_inductor_cache(const KernelGraph& graph, NodeRecipes& recipes,
                                   const InductorCache& cache) {
    InductorStats stats;
    std::set<std::string> reasons;
    std::unordered_map<std::string, std::size_t> launches;  // kernel -> launches seen so far
    std::unordered_map<std::string, std::size_t> skipped_sites;  // kernel -> sites passed over
    const auto& nodes = graph.nodes();
    for (std::uint32_t n = 0; n < nodes.size(); ++n) {
        if (recipes.decision(n).rule != "triton") continue;
        ++stats.triton_kernels;
        const GpuActivity& a = graph.activity(nodes[n]);
        const std::string name(graph.trace().names.view(a.name));
        const std::size_t launch = launches[name]++;
        auto fail = [&](const std::string& why) {
            Recipe unmatched = recipes.recipe(n);
            unmatched.reason = why;
            recipes.set(n, std::move(unmatched));
            if (reasons.insert(why).second) stats.unmatched_reasons.push_back(why);
        };
        const auto variants = cache.variants_of(name, a.block[0] * a.block[1] * a.block[2]);
        if (variants.empty()) {
            fail("Triton kernel " + name + ": no variant with " +
                 std::to_string(a.block[0] * a.block[1] * a.block[2]) +
                 " threads per block in the Inductor cache " + cache.source);
            continue;
        }
        std::vector<const TritonCallSite*> all_sites;
        for (const auto& c : cache.calls)
            if (c.kernel == name) all_sites.push_back(&c);
        if (all_sites.empty()) {
            fail("Triton kernel " + name + ": no call site in the Inductor cache's wrapper code");
            continue;
        }
        // Two compiled graphs may each define a kernel of this name with other arguments: the
        // call sites of the wrapper files whose calls fit a variant of the recorded block are
        // the candidates (all of them when none fits, for the reason below).
        std::set<std::size_t> fitting_files;
        for (const TritonCallSite* c : all_sites)
            for (const TritonVariant* v : variants)
                if (fits(*c, *v)) fitting_files.insert(c->file);
        std::vector<const TritonCallSite*> sites;
        for (const TritonCallSite* c : all_sites)
            if (fitting_files.empty() || fitting_files.count(c->file)) sites.push_back(c);
        // The variants a call site can launch: those compiled from its own kernel file where
        // the wrapper and the IR name it (a training step's forward and backward graphs may
        // each have a `triton_poi_fused__to_copy_10`, with other sizes: the other's image wrote
        // past the buffers), that fit its arguments.
        auto fitting_of = [&](const TritonCallSite& site) {
            const TritonDefinition* d = cache.definition_of(site);
            const std::string own = d != nullptr ? d->kernel_file : std::string();
            std::vector<const TritonVariant*> out;
            for (const bool by_file : {true, false}) {
                for (const TritonVariant* v : variants)
                    if ((!by_file || (!own.empty() && v->source_file == own)) && fits(site, *v))
                        out.push_back(v);
                if (!out.empty()) break;
            }
            return out;
        };
        // The wrapper runs once per step: the k-th launch is the k-th call site, step after
        // step; where that site's variants do not cover the recorded grid and a later one's do
        // (the files' order is not the graphs'), the later one, and the count goes on from it.
        std::size_t& skip = skipped_sites[name];
        const std::size_t first = launch + skip;
        std::size_t pick = first % sites.size();
        const TritonVariant* chosen = nullptr;
        for (std::size_t i = 0; i < sites.size() && chosen == nullptr; ++i) {
            const TritonCallSite& candidate = *sites[(first + i) % sites.size()];
            const TritonDefinition* d = cache.definition_of(candidate);
            chosen =
                covering(fitting_of(candidate), candidate, d != nullptr ? &d->params : nullptr, a);
            if (chosen != nullptr) pick = (first + i) % sites.size(), skip += i;
        }
        const TritonCallSite& site = *sites[pick];
        stats.site_of_node[n] = static_cast<std::size_t>(&site - cache.calls.data());
        const TritonDefinition* defined = cache.definition_of(site);
        const auto* sig = defined != nullptr ? &defined->params : nullptr;
        if (chosen == nullptr) {  // no block tells: the site's first fitting variant, or any
            const std::vector<const TritonVariant*> fitting = fitting_of(site);
            chosen = fitting.empty() ? variants.front() : fitting.front();
        }
        const TritonVariant& v = *chosen;
        if (v.params.size() < site.args.size()) {
            fail("Triton kernel " + name + ": its PTX entry takes " +
                 std::to_string(v.params.size()) + " parameters, the call site passes " +
                 std::to_string(site.args.size()));
            continue;
        }
        TritonRecipe t;
        t.kernel = name;
        t.variant = v.hash;
        t.source = cache.source;
        t.cubin = v.cubin;
        t.num_warps = v.num_warps;
        t.shared_bytes = v.shared_bytes;
        for (int i = 0; i < 3; ++i) t.grid[i] = std::max(1, a.grid[i]);
        const std::int64_t programs =
            static_cast<std::int64_t>(t.grid[0]) * t.grid[1] * t.grid[2];
        // Elements of the launch (xnumel x rnumel ...): sizes a pointer whose buffer is unknown.
        std::int64_t numel = 1;
        for (const auto& arg : site.args)
            if (arg.buffer.empty() && arg.value > 0) numel *= arg.value;
        std::string missing;
        for (std::size_t i = 0; i < v.params.size(); ++i) {
            TritonArgument arg;
            arg.pointer = v.params[i].pointer;
            arg.bits = v.params[i].bits;
            if (i < site.args.size()) {
                const CallArgument& c = site.args[i];
                if (arg.pointer != !c.buffer.empty()) {
                    missing = "argument " + std::to_string(i) + " is a " +
                              (arg.pointer ? "pointer" : "number") + " in the PTX entry";
                    break;
                }
                if (arg.pointer) {
                    arg.buffer = c.buffer;
                    arg.graph_input =
                        c.buffer.starts_with("arg") || c.buffer.starts_with("primals");
                    if (sig != nullptr && i < sig->size()) {
                        const auto& [param, type] = (*sig)[i];
                        arg.read = param.starts_with("in_ptr") || param.starts_with("in_out_ptr");
                        arg.positive = defined->positive.count(param) > 0;
                        if (const auto b = defined->index_bounds.find(param);
                            b != defined->index_bounds.end())
                            arg.index_bound = b->second;
                        if (type.starts_with("*")) arg.dtype = dtype_of_triton(type.substr(1));
                    }
                    const WrapperBuffer& b = c.size;
                    if (arg.dtype == DType::Unknown) arg.dtype = b.dtype;
                    if (b.bytes > 0)
                        arg.bytes = b.bytes;
                    else if (b.elements > 0 && element_size(arg.dtype) > 0)
                        arg.bytes = b.elements * static_cast<std::int64_t>(element_size(arg.dtype));
                    else  // a buffer the wrapper does not allocate: one element per index
                        arg.bytes = numel * static_cast<std::int64_t>(
                                                std::max<std::size_t>(element_size(arg.dtype), 4));
                } else {
                    arg.value = c.value;
                }
            } else if (arg.pointer) {
                // Triton's trailing scratch pointers: per program, or null when none is needed.
                const bool global = i == site.args.size();
                const std::int64_t per = global ? v.global_scratch_bytes : v.profile_scratch_bytes;
                arg.bytes = per * programs;
                arg.buffer = "scratch" + std::to_string(i);
            } else {
                missing = "parameter " + std::to_string(i) + " is a number no call site passes";
                break;
            }
            t.args.push_back(std::move(arg));
        }
        if (!missing.empty()) {
            fail("Triton kernel " + name + ": " + missing);
            continue;
        }
        Recipe r;
        r.tier = Tier::Triton;
        r.rule = "triton";
        r.reason = "variant " + v.hash.substr(0, 12) + " (" + std::to_string(v.num_warps) +
                   " warps) of " + cache.source;
        r.detail = std::move(t);
        recipes.set(n, std::move(r));
        ++stats.matched;
    }
    return stats;
}

}  // namespace replay
