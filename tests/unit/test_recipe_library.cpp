// The recipe library on the bundled captures: the Llama decode step captured in a CUDA graph
// (no op encloses its 1127 kernels) takes its recipes from the eager capture of the same step,
// and each graph kernel gets the op its eager twin was launched by.
#include <gtest/gtest.h>

#include <set>
#include <sstream>
#include <string>

#include "replay/analysis.h"
#include "replay/input_error.h"
#include "replay/recipe_json.h"
#include "replay/recipe_library.h"
#include "test_support.h"

namespace {

using replay::Analysis;
using replay::AnalysisOptions;
using replay::testing::trace_path;

std::unique_ptr<Analysis> load(const std::string& trace, std::vector<std::string> recipes = {}) {
    AnalysisOptions o;
    o.trace_path = trace_path(trace);
    for (auto& r : recipes) r = trace_path(r);
    o.recipe_libraries = std::move(recipes);
    return replay::analyze(o);
}

std::string op_of(const replay::Recipe& r) {
    if (const auto* g = std::get_if<replay::GemmRecipe>(&r.detail)) return g->op;
    if (const auto* a = std::get_if<replay::AtenRecipe>(&r.detail)) return a->op;
    return replay::to_string(r.tier);
}

// The recipes of the single stream's kernels, in GPU order.
std::vector<const replay::Recipe*> stream_recipes(const Analysis& a) {
    std::vector<const replay::Recipe*> out;
    for (const auto& track : a.graph.streams())
        for (auto n : track.nodes) out.push_back(&a.recipes.decision(n));
    return out;
}

TEST(RecipeLibrary, GraphDecodeWithoutALibraryHasNoRecipe) {
    const auto graph = load("h200/llama_decode_graph.json.gz");
    EXPECT_EQ(graph->coverage, 0.0);
}

TEST(RecipeLibrary, GraphDecodeTakesTheEagerCapturesRecipes) {
    // The H100 set bundles the eager decode only; the H200 set has both captures.
    const auto graph = load("h200/llama_decode_graph.json.gz", {"h200/llama_decode.json.gz"});
    EXPECT_GE(graph->coverage, 0.99);
    const auto eager = load("h200/llama_decode.json.gz");
    // The same step: kernel for kernel, the graph's recipe is the op of its eager twin.
    const auto g = stream_recipes(*graph);
    const auto e = stream_recipes(*eager);
    ASSERT_EQ(g.size(), e.size());
    std::size_t same_op = 0, library = 0;
    for (std::size_t i = 0; i < g.size(); ++i) {
        if (g[i]->rule == "recipe-library") ++library;
        if (op_of(*g[i]) == op_of(*e[i])) ++same_op;
    }
    EXPECT_EQ(library, g.size());
    EXPECT_GE(static_cast<double>(same_op) / static_cast<double>(g.size()), 0.99)
        << same_op << " of " << g.size();
    bool noted = false;
    for (const auto& n : graph->notes) noted = noted || n.find("recipe library: 1127 of 1127") == 0;
    EXPECT_TRUE(noted);
}

// Each graph kernel takes the buffers of its eager twin (the n-th match of an issue its n-th
// instance): each layer reads its own weights, as in the recording, instead of all layers sharing
// one set that stays in L2 (the graph decode replayed 13% fast on the H200 that way).
TEST(RecipeLibrary, GraphKernelsTakeTheirEagerTwinsBuffers) {
    const auto graph = load("h200/llama_decode_graph.json.gz", {"h200/llama_decode.json.gz"});
    const auto eager = load("h200/llama_decode.json.gz");
    // Whole recipes (storage ids included) of the single stream's kernels, in GPU order.
    auto whole = [](const Analysis& a) {
        std::vector<replay::Recipe> out;
        for (const auto& track : a.graph.streams())
            for (auto n : track.nodes) out.push_back(a.recipes.recipe(n));
        return out;
    };
    const auto g = whole(*graph);
    const auto e = whole(*eager);
    ASSERT_EQ(g.size(), e.size());
    constexpr std::int64_t kFirstLibrary = std::int64_t{1} << 40;  // the --recipes file's range
    std::size_t gemms = 0, twins = 0;
    std::set<std::int64_t> weights;
    for (std::size_t i = 0; i < g.size(); ++i) {
        const auto* gg = std::get_if<replay::GemmRecipe>(&g[i].detail);
        const auto* eg = std::get_if<replay::GemmRecipe>(&e[i].detail);
        if (gg == nullptr || eg == nullptr || eg->b_storage < 0) continue;
        ++gemms;
        twins += gg->b_storage == eg->b_storage + kFirstLibrary &&
                 gg->a_storage == eg->a_storage + kFirstLibrary;
        weights.insert(gg->b_storage);
    }
    ASSERT_GT(gemms, 50u);
    EXPECT_GE(static_cast<double>(twins) / static_cast<double>(gemms), 0.95)
        << twins << " of " << gemms;
    EXPECT_GT(weights.size(), gemms / 2);  // one weight per layer and projection, not one in all
    EXPECT_EQ(replay::dataflow_label(*graph), "library");
}

TEST(RecipeLibrary, AnIssuesLaterKernelsGoWithItsFirst) {
    const auto graph =
        load("h200/llama_decode_graph.json.gz", {"h200/llama_decode.json.gz"});
    // A kernel launched second by an eager op is timed with the issue of the first.
    std::size_t companions = 0;
    const auto g = stream_recipes(*graph);
    for (std::size_t i = 0; i < g.size(); ++i)
        if (g[i]->issued_with_op) {
            ++companions;
            ASSERT_GT(i, 0u);
            EXPECT_NE(g[i]->reason.find("llama_decode.json.gz"), std::string::npos);
        }
    EXPECT_GT(companions, 0u);
}

TEST(RecipeLibrary, SignatureFilesServeAsLibraries) {
    const auto eager = load("h200/llama_decode.json.gz");
    replay::SignatureFile file;
    file.trace = eager->trace().source;
    file.trace_hash = eager->trace_hash;
    file.kernels = eager->kernels;
    for (auto& k : file.kernels) k.nodes.clear();
    std::ostringstream text;
    replay::write_signature_file(text, file);
    replay::testing::TempFile sigs("kernel_signatures.json", text.str());
    AnalysisOptions o;
    o.trace_path = trace_path("h200/llama_decode_graph.json.gz");
    o.recipe_libraries = {sigs.path()};
    const auto graph = replay::analyze(o);
    // Without neighbours a multi-kernel op's kernels are single entries; most time still matches.
    EXPECT_GE(graph->coverage, 0.95);
}

TEST(RecipeLibrary, AReportIsNotALibrary) {
    replay::testing::TempFile report("report.json", R"({"schema": "replay.report/1"})");
    replay::RecipeLibrary library;
    EXPECT_THROW(library.add_file(report.path()), replay::InputError);
}

}  // namespace
