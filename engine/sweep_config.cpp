// Both formats become one small tree (ConfigNode) with byte offsets, read by one interpreter, so
// that YAML and JSON configs mean exactly the same.
#include "replay/sweep_config.h"

#include <simdjson.h>
#include <yaml-cpp/yaml.h>

#include <charconv>
#include <fstream>
#include <sstream>

#include "replay/input_error.h"

namespace replay {
namespace {

struct ConfigNode {
    enum class Kind { Null, Scalar, List, Map } kind = Kind::Null;
    std::string scalar;
    std::vector<ConfigNode> items;
    std::vector<std::pair<std::string, ConfigNode>> members;
    std::uint64_t offset = 0;

    const ConfigNode* find(std::string_view key) const {
        for (const auto& [k, v] : members)
            if (k == key) return &v;
        return nullptr;
    }
};

// ---- JSON -----------------------------------------------------------------------------------

ConfigNode from_json(simdjson::dom::element e) {
    ConfigNode n;
    simdjson::dom::array array;
    simdjson::dom::object object;
    std::string_view text;
    if (e.is_null()) return n;
    if (!e.get_array().get(array)) {
        n.kind = ConfigNode::Kind::List;
        for (auto item : array) n.items.push_back(from_json(item));
    } else if (!e.get_object().get(object)) {
        n.kind = ConfigNode::Kind::Map;
        for (auto field : object)
            n.members.emplace_back(std::string(field.key), from_json(field.value));
    } else if (!e.get_string().get(text)) {
        n.kind = ConfigNode::Kind::Scalar;
        n.scalar = std::string(text);
    } else {
        n.kind = ConfigNode::Kind::Scalar;
        n.scalar = simdjson::minify(e);
    }
    return n;
}

// ---- YAML -----------------------------------------------------------------------------------

ConfigNode from_yaml(const YAML::Node& y) {
    ConfigNode n;
    n.offset = y.Mark().pos >= 0 ? static_cast<std::uint64_t>(y.Mark().pos) : 0;
    switch (y.Type()) {
        case YAML::NodeType::Sequence:
            n.kind = ConfigNode::Kind::List;
            for (const auto& item : y) n.items.push_back(from_yaml(item));
            break;
        case YAML::NodeType::Map:
            n.kind = ConfigNode::Kind::Map;
            for (const auto& kv : y)
                n.members.emplace_back(kv.first.as<std::string>(), from_yaml(kv.second));
            break;
        case YAML::NodeType::Scalar:
            n.kind = ConfigNode::Kind::Scalar;
            n.scalar = y.Scalar();
            break;
        default:
            break;
    }
    return n;
}

// ---- interpretation -------------------------------------------------------------------------

class Interpreter {
  public:
    explicit Interpreter(const std::string& name) : name_(name) {}

    [[noreturn]] void fail(const ConfigNode& at, const std::string& what) const {
        throw InputError(name_, at.offset, what);
    }

    std::int64_t integer(const ConfigNode& n, const std::string& what) const {
        std::int64_t v = 0;
        const std::string& s = n.scalar;
        auto r = std::from_chars(s.data(), s.data() + s.size(), v);
        if (n.kind != ConfigNode::Kind::Scalar || r.ec != std::errc() || r.ptr != s.data() + s.size())
            fail(n, what + ": expected an integer, got '" + s + "'");
        return v;
    }

    std::string text(const ConfigNode& n, const std::string& what) const {
        if (n.kind != ConfigNode::Kind::Scalar) fail(n, what + ": expected a string");
        return n.scalar;
    }

    const std::vector<ConfigNode>& list(const ConfigNode& n, const std::string& what) const {
        if (n.kind != ConfigNode::Kind::List) fail(n, what + ": expected a list");
        return n.items;
    }

    std::vector<std::int64_t> integers(const ConfigNode& n, const std::string& what) const {
        std::vector<std::int64_t> out;
        for (const auto& item : list(n, what)) out.push_back(integer(item, what));
        return out;
    }

    KernelSelector selector(const ConfigNode& n) const {
        KernelSelector s;
        if (n.kind != ConfigNode::Kind::Map)
            fail(n, "kernels: expected a map with ids, names and/or tiers");
        for (const auto& [key, value] : n.members) {
            if (key == "ids") {
                for (const auto& item : list(value, "kernels.ids")) s.ids.push_back(text(item, "kernels.ids"));
            } else if (key == "names") {
                for (const auto& item : list(value, "kernels.names"))
                    s.names.push_back(text(item, "kernels.names"));
            } else if (key == "tiers") {
                for (auto t : integers(value, "kernels.tiers")) {
                    if (t < 1 || t > 4) fail(value, "kernels.tiers: tiers are 1 to 4");
                    s.tiers.push_back(static_cast<int>(t));
                }
            } else {
                fail(value, "kernels: unknown key '" + key + "' (expected ids, names, tiers)");
            }
        }
        if (s.ids.empty() && s.names.empty() && s.tiers.empty())
            fail(n, "kernels: chooses no kernel (give ids, names or tiers)");
        return s;
    }

    Progression progression_of(const ConfigNode& n, const std::string& what) const {
        const std::string op = text(n, what);
        if (op == "mul") return Progression::Mul;
        if (op == "add") return Progression::Add;
        fail(n, what + ": '" + op + "' is not mul or add");
    }

    std::vector<std::int64_t> values_of(const ConfigNode& at, std::int64_t start, std::int64_t step,
                                        std::int64_t end, Progression op) const {
        try {
            return progression(start, step, end, op);
        } catch (const std::invalid_argument& e) {
            fail(at, e.what());
        }
    }

    // dims: {name: [values] | {start, step, end, operator}, ...}
    std::vector<DimAxis> dims_map(const ConfigNode& n) const {
        std::vector<DimAxis> axes;
        for (const auto& [name, value] : n.members) {
            const std::string what = "dims." + name;
            if (value.kind == ConfigNode::Kind::List) {
                axes.push_back({name, integers(value, what)});
                continue;
            }
            if (value.kind != ConfigNode::Kind::Map)
                fail(value, what + ": expected a list of values or {start, step, end, operator}");
            const auto need = [&](const char* key) -> const ConfigNode& {
                const ConfigNode* v = value.find(key);
                if (v == nullptr) fail(value, what + ": '" + key + "' is missing");
                return *v;
            };
            const ConfigNode* op = value.find("operator");
            axes.push_back({name, values_of(value, integer(need("start"), what + ".start"),
                                            integer(need("step"), what + ".step"),
                                            integer(need("end"), what + ".end"),
                                            op ? progression_of(*op, what + ".operator")
                                               : Progression::Mul)});
        }
        return axes;
    }

    // The kernel-sampling style: dims: [names], starts, steps, ends, operators of one length.
    std::vector<DimAxis> dims_lists(const ConfigNode& spec, const ConfigNode& n) const {
        std::vector<std::string> names;
        for (const auto& item : list(n, "dims")) names.push_back(text(item, "dims"));
        const auto column = [&](const char* key) -> const std::vector<ConfigNode>& {
            const ConfigNode* v = spec.find(key);
            if (v == nullptr) fail(spec, std::string("dims is a list of names: '") + key + "' is missing");
            const auto& items = list(*v, key);
            if (items.size() != names.size())
                fail(*v, std::string(key) + " has " + std::to_string(items.size()) +
                             " entries for " + std::to_string(names.size()) + " dims");
            return items;
        };
        const auto& starts = column("starts");
        const auto& steps = column("steps");
        const auto& ends = column("ends");
        const auto& ops = column("operators");
        std::vector<DimAxis> axes;
        for (std::size_t i = 0; i < names.size(); ++i)
            axes.push_back({names[i], values_of(starts[i], integer(starts[i], "starts"),
                                                integer(steps[i], "steps"), integer(ends[i], "ends"),
                                                progression_of(ops[i], "operators"))});
        return axes;
    }

    SweepSpec sweep(const ConfigNode& n) const {
        if (n.kind != ConfigNode::Kind::Map) fail(n, "a sweep: expected a map");
        SweepSpec spec;
        const ConfigNode* kernels = n.find("kernels");
        const ConfigNode* dims = n.find("dims");
        if (kernels == nullptr) fail(n, "a sweep needs 'kernels' (ids, names or tiers)");
        if (dims == nullptr) fail(n, "a sweep needs 'dims'");
        spec.kernels = selector(*kernels);
        spec.dims = dims->kind == ConfigNode::Kind::Map ? dims_map(*dims) : dims_lists(n, *dims);
        if (spec.dims.empty()) fail(*dims, "dims: no dim to vary");
        try {
            expand_grid(spec.dims, 10'000'000);  // checks repeated dims and the grid's size
        } catch (const std::invalid_argument& e) {
            fail(*dims, e.what());
        }
        static const char* const known[] = {"kernels", "dims", "starts", "steps", "ends", "operators"};
        for (const auto& [key, value] : n.members) {
            bool ok = false;
            for (const char* k : known) ok |= key == k;
            if (!ok && key != "warmup" && key != "runs" && key != "context" && key != "sweeps")
                fail(value, "unknown key '" + key + "'");
        }
        return spec;
    }

    SweepConfig config(const ConfigNode& root) const {
        if (root.kind != ConfigNode::Kind::Map) fail(root, "expected a map at the top");
        SweepConfig c;
        c.path = name_;
        if (const ConfigNode* w = root.find("warmup")) c.warmup = static_cast<int>(integer(*w, "warmup"));
        if (const ConfigNode* r = root.find("runs")) c.runs = static_cast<int>(integer(*r, "runs"));
        if (const ConfigNode* x = root.find("context")) c.context = text(*x, "context");
        if (const ConfigNode* sweeps = root.find("sweeps")) {
            for (const auto& item : list(*sweeps, "sweeps")) c.sweeps.push_back(sweep(item));
            if (c.sweeps.empty()) fail(*sweeps, "sweeps: empty");
        } else {
            c.sweeps.push_back(sweep(root));
        }
        if (c.warmup && *c.warmup < 0) fail(root, "warmup must be >= 0");
        if (c.runs && *c.runs < 1) fail(root, "runs must be >= 1");
        return c;
    }

  private:
    std::string name_;
};

}  // namespace

SweepConfig parse_sweep_config(std::string_view text, const std::string& name) {
    const auto first = text.find_first_not_of(" \t\r\n");
    ConfigNode root;
    if (first != std::string_view::npos && (text[first] == '{' || text[first] == '[')) {
        simdjson::dom::parser parser;
        simdjson::padded_string padded(text);
        simdjson::dom::element doc;
        if (auto error = parser.parse(padded).get(doc); !error) {
            root = from_json(doc);
            return Interpreter(name).config(root);
        }
        // Not JSON: a YAML flow mapping ({key: ['a'], ...}) as kernel-sampling configs write.
    }
    try {
        root = from_yaml(YAML::Load(std::string(text)));
    } catch (const YAML::Exception& e) {
        throw InputError(name, e.mark.pos >= 0 ? static_cast<std::uint64_t>(e.mark.pos) : 0,
                         "not valid YAML or JSON: " + e.msg);
    }
    return Interpreter(name).config(root);
}

SweepConfig read_sweep_config(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw InputError(path, 0, "cannot open the sweep config");
    std::ostringstream buffer;
    buffer << in.rdbuf();
    return parse_sweep_config(buffer.str(), path);
}

}  // namespace replay
