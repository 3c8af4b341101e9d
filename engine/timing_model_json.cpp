// model.json (schemas/timing_model.schema.json), written by `replay fit`, read by `replay
// predict --model`.
#include <simdjson.h>

#include <fstream>
#include <sstream>

#include "replay/json_writer.h"
#include "replay/input_error.h"
#include "replay/timing_model.h"

namespace replay {
namespace {

void write_error(JsonWriter& json, const char* name, const HeldOutError& e) {
    json.key(name).begin_object();
    json.field("points", static_cast<std::uint64_t>(e.points));
    json.field("median_pct", e.median_pct).field("p90_pct", e.p90_pct);
    json.end_object();
}

struct Reader {
    const std::string& path;
    [[noreturn]] void fail(const std::string& where, const std::string& what) const {
        throw InputError(path, 0, where + ": " + what);
    }
    simdjson::dom::element member(simdjson::dom::object o, const char* key, const std::string& where) const {
        simdjson::dom::element e;
        if (o[key].get(e)) fail(where, std::string("'") + key + "' is missing");
        return e;
    }
    double number(simdjson::dom::element e, const std::string& where) const {
        double d = 0;
        if (e.is_null()) return NAN;
        if (e.get_double().get(d)) {
            std::int64_t i = 0;
            if (e.get_int64().get(i)) fail(where, "expected a number");
            d = static_cast<double>(i);
        }
        return d;
    }
    std::string text(simdjson::dom::element e, const std::string& where) const {
        std::string_view s;
        if (e.get_string().get(s)) fail(where, "expected a string");
        return std::string(s);
    }
    std::vector<double> numbers(simdjson::dom::element e, const std::string& where) const {
        simdjson::dom::array a;
        if (e.get_array().get(a)) fail(where, "expected an array");
        std::vector<double> out;
        for (auto x : a) out.push_back(number(x, where));
        return out;
    }
    HeldOutError error(simdjson::dom::object o, const std::string& where) const {
        HeldOutError e;
        e.points = static_cast<std::size_t>(number(member(o, "points", where), where + "/points"));
        e.median_pct = number(member(o, "median_pct", where), where + "/median_pct");
        e.p90_pct = number(member(o, "p90_pct", where), where + "/p90_pct");
        return e;
    }
};

}  // namespace

void write_timing_model(std::ostream& out, const TimingModelFile& file) {
    JsonWriter json(out);
    json.begin_object();
    json.field("schema", file.schema).field("gpu", file.gpu);
    json.objects("kernels", file.kernels, [&](const KernelTimingModel& k) {
        json.field("kernel_id", k.kernel_id).field("name", k.name).field("op", k.op);
        json.field("dtype", k.dtype).field("csv", k.csv).field("family", k.family);
        json.array("masked", k.masked);
        json.field("kind", k.kind).field("points", static_cast<std::uint64_t>(k.points));
        json.key("held_out").begin_object();
        write_error(json, "piecewise_linear", k.linear_error);
        write_error(json, "boosted_trees", k.trees_error);
        write_error(json, "log_quadratic_work", k.work_quadratic_error);
        write_error(json, "log_quadratic_padded", k.padded_quadratic_error);
        write_error(json, "log_quadratic_dims", k.dims_quadratic_error);
        json.end_object();
        if (k.quadratic) {
            json.key("log_quadratic").begin_object();
            json.array("features", k.quadratic->features);
            json.array("coefficients", k.quadratic->coefficients);
            json.end_object();
        }
        json.key("piecewise_linear").begin_object();
        json.field("floor_us", k.linear.floor_us);
        json.array("work_knots", k.linear.work_knots);
        json.array("bytes_knots", k.linear.bytes_knots);
        json.array("coefficients", k.linear.coefficients);
        json.end_object();
        if (k.trees) {
            json.key("boosted_trees").begin_object();
            json.field("base", k.trees->base).field("learning_rate", k.trees->learning_rate);
            json.key("trees").begin_array();
            for (const auto& tree : k.trees->trees) {
                json.begin_array();
                for (const auto& n : tree) {
                    json.begin_array();
                    json.value(n.feature).value(n.threshold).value(n.left).value(n.right).value(n.value);
                    json.end_array();
                }
                json.end_array();
            }
            json.end_array();
            json.end_object();
        }
    });
    json.end_object();
    out << '\n';
}

TimingModelFile read_timing_model(const std::string& path) {
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    if (auto error = parser.load(path).get(doc))
        throw InputError(path, 0, std::string("not a readable JSON document: ") + simdjson::error_message(error));
    const Reader r{path};
    simdjson::dom::object root;
    if (doc.get_object().get(root)) r.fail("/", "expected an object");
    TimingModelFile file;
    file.schema = r.text(r.member(root, "schema", "/"), "/schema");
    if (file.schema != "replay.timing_model/1")
        r.fail("/schema", "'" + file.schema + "' is not replay.timing_model/1");
    file.gpu = r.text(r.member(root, "gpu", "/"), "/gpu");
    simdjson::dom::array kernels;
    if (r.member(root, "kernels", "/").get_array().get(kernels)) r.fail("/kernels", "expected an array");
    std::size_t index = 0;
    for (auto item : kernels) {
        const std::string at = "/kernels/" + std::to_string(index++);
        simdjson::dom::object o;
        if (item.get_object().get(o)) r.fail(at, "expected an object");
        KernelTimingModel k;
        k.kernel_id = r.text(r.member(o, "kernel_id", at), at + "/kernel_id");
        k.name = r.text(r.member(o, "name", at), at + "/name");
        k.op = r.text(r.member(o, "op", at), at + "/op");
        k.dtype = r.text(r.member(o, "dtype", at), at + "/dtype");
        k.csv = r.text(r.member(o, "csv", at), at + "/csv");
        k.family = r.text(r.member(o, "family", at), at + "/family");
        simdjson::dom::array masked;
        if (r.member(o, "masked", at).get_array().get(masked)) r.fail(at + "/masked", "expected an array");
        for (auto m : masked) k.masked.push_back(r.text(m, at + "/masked"));
        k.kind = r.text(r.member(o, "kind", at), at + "/kind");
        if (k.kind != "piecewise_linear" && k.kind != "boosted_trees" && k.kind != "log_quadratic")
            r.fail(at + "/kind", "'" + k.kind + "' is not piecewise_linear, boosted_trees or log_quadratic");
        k.points = static_cast<std::size_t>(r.number(r.member(o, "points", at), at + "/points"));
        simdjson::dom::object held, pl_error, bt_error, pl;
        if (r.member(o, "held_out", at).get_object().get(held)) r.fail(at + "/held_out", "expected an object");
        if (r.member(held, "piecewise_linear", at + "/held_out").get_object().get(pl_error) ||
            r.member(held, "boosted_trees", at + "/held_out").get_object().get(bt_error))
            r.fail(at + "/held_out", "expected objects");
        k.linear_error = r.error(pl_error, at + "/held_out/piecewise_linear");
        k.trees_error = r.error(bt_error, at + "/held_out/boosted_trees");
        // Files written before a log-quadratic candidate existed lack its figure.
        for (auto [key, error] : {std::pair{"log_quadratic_work", &k.work_quadratic_error},
                                  std::pair{"log_quadratic_padded", &k.padded_quadratic_error},
                                  std::pair{"log_quadratic_dims", &k.dims_quadratic_error}}) {
            simdjson::dom::object e;
            if (!held[key].get_object().get(e)) *error = r.error(e, at + "/held_out/" + key);
        }
        if (k.kind == "log_quadratic") {
            const std::string q = at + "/log_quadratic";
            simdjson::dom::object lq;
            if (r.member(o, "log_quadratic", at).get_object().get(lq)) r.fail(q, "expected an object");
            LogQuadratic quadratic;
            simdjson::dom::array features;
            if (r.member(lq, "features", q).get_array().get(features)) r.fail(q + "/features", "expected an array");
            for (auto f : features) quadratic.features.push_back(r.text(f, q + "/features"));
            quadratic.coefficients = r.numbers(r.member(lq, "coefficients", q), q + "/coefficients");
            const std::size_t n = quadratic.features.size();
            if (quadratic.coefficients.size() != 1 + n + n * (n + 1) / 2)
                r.fail(q + "/coefficients", "expected 1 + n + n(n+1)/2 for n features");
            for (const auto& f : quadratic.features)
                if (f != "log_gflop" && f != "log_mb" && f != "log_melements" && f != "log_mpadded" &&
                    !f.starts_with("log:"))
                    r.fail(q + "/features", "unknown feature '" + f + "'");
            k.quadratic = std::move(quadratic);
        }
        if (r.member(o, "piecewise_linear", at).get_object().get(pl))
            r.fail(at + "/piecewise_linear", "expected an object");
        const std::string p = at + "/piecewise_linear";
        k.linear.floor_us = r.number(r.member(pl, "floor_us", p), p + "/floor_us");
        k.linear.work_knots = r.numbers(r.member(pl, "work_knots", p), p + "/work_knots");
        k.linear.bytes_knots = r.numbers(r.member(pl, "bytes_knots", p), p + "/bytes_knots");
        k.linear.coefficients = r.numbers(r.member(pl, "coefficients", p), p + "/coefficients");
        if (k.linear.coefficients.size() != 3 + k.linear.work_knots.size() + k.linear.bytes_knots.size())
            r.fail(p + "/coefficients", "expected 3 + one per knot");
        if (k.kind == "boosted_trees") {
            const std::string t = at + "/boosted_trees";
            simdjson::dom::object bt;
            if (r.member(o, "boosted_trees", at).get_object().get(bt)) r.fail(t, "expected an object");
            BoostedTrees trees;
            trees.base = r.number(r.member(bt, "base", t), t + "/base");
            trees.learning_rate = r.number(r.member(bt, "learning_rate", t), t + "/learning_rate");
            simdjson::dom::array list;
            if (r.member(bt, "trees", t).get_array().get(list)) r.fail(t + "/trees", "expected an array");
            for (auto tree_json : list) {
                simdjson::dom::array nodes_json;
                if (tree_json.get_array().get(nodes_json)) r.fail(t + "/trees", "expected arrays");
                std::vector<TreeNode> tree;
                for (auto node_json : nodes_json) {
                    const auto v = r.numbers(node_json, t + "/trees");
                    if (v.size() != 5) r.fail(t + "/trees", "a node is [feature, threshold, left, right, value]");
                    tree.push_back(TreeNode{static_cast<int>(v[0]), v[1], static_cast<int>(v[2]),
                                            static_cast<int>(v[3]), v[4]});
                }
                // Children must point forward inside the tree, or evaluation could loop.
                for (std::size_t n = 0; n < tree.size(); ++n)
                    if (tree[n].feature >= 0 &&
                        (tree[n].left <= static_cast<int>(n) || tree[n].right <= static_cast<int>(n) ||
                         tree[n].left >= static_cast<int>(tree.size()) ||
                         tree[n].right >= static_cast<int>(tree.size())))
                        r.fail(t + "/trees", "a node's children must come after it in its tree");
                if (tree.empty()) r.fail(t + "/trees", "an empty tree");
                trees.trees.push_back(std::move(tree));
            }
            k.trees = std::move(trees);
        }
        file.kernels.push_back(std::move(k));
    }
    return file;
}

}  // namespace replay
