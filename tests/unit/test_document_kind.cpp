// engine/document_kind.cpp, and the errors for a file given in the wrong place: an Execution
// Trace as the trace, a Kineto trace as --et, a report as the trace. Without this, the first said
// `no "traceEvents" array` at the file's last byte, which does not tell a user what to do.
#include <gtest/gtest.h>

#include <string>

#include "replay/analysis.h"
#include "replay/document_kind.h"
#include "replay/input_error.h"
#include "test_support.h"

namespace {

using replay::DocumentKind;
using replay::testing::TempFile;
using replay::testing::trace_path;

// The InputError analyze() throws, or "" when it succeeds.
std::string analyze_error(const std::string& trace, const std::string& et = "") {
    replay::AnalysisOptions options;
    options.trace_path = trace;
    options.execution_trace_path = et;
    try {
        replay::analyze(options);
    } catch (const replay::InputError& e) {
        return e.what();
    }
    return "";
}

bool contains(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

const char* const kExecutionTrace =
    R"({"schema": "1.1.1-chakra.0.0.4", "pid": 5, "time": "2026-11-24", "start_ts": 7,
        "nodes": [{"id": 2, "name": "[pytorch|profiler|execution_trace|thread]"}]})";

TEST(DocumentKind, AnExecutionTraceIsToldByItsNodes) {
    TempFile et("model.et.json", kExecutionTrace);
    EXPECT_EQ(replay::sniff_document(et.path()).kind, DocumentKind::ExecutionTrace);
    EXPECT_EQ(replay::sniff_document(trace_path("h200/bloom_b1_with_et.et.json.gz")).kind,
              DocumentKind::ExecutionTrace);
    EXPECT_EQ(replay::sniff_document(trace_path("h200/bloom_b1.json.gz")).kind,
              DocumentKind::Trace);
    // "nodes" that is not an array is not an Execution Trace's.
    TempFile other("other.json", R"({"nodes": 3})");
    EXPECT_EQ(replay::sniff_document(other.path()).kind, DocumentKind::Other);
}

TEST(DocumentKind, AnExecutionTraceGivenAsTheTraceSaysToUseEt) {
    TempFile et("model.et.json", kExecutionTrace);
    const std::string error = analyze_error(et.path());
    EXPECT_TRUE(contains(error, "a PyTorch Execution Trace")) << error;
    EXPECT_TRUE(contains(error, "give it with --et")) << error;
    EXPECT_TRUE(contains(error, et.path() + ": byte 0")) << error;
}

TEST(DocumentKind, AKinetoTraceGivenAsEtSaysToGiveItAsTheTrace) {
    const std::string trace = trace_path("h200/bloom_b1.json.gz");
    const std::string error = analyze_error(trace, trace);
    EXPECT_TRUE(contains(error, "a Kineto trace")) << error;
    EXPECT_TRUE(contains(error, "give it as the trace argument")) << error;
}

TEST(DocumentKind, AReportGivenAsTheTraceIsNamed) {
    TempFile report("report.json", R"({"schema": "replay.report/1", "kernels": []})");
    const std::string error = analyze_error(report.path());
    EXPECT_TRUE(contains(error, "a file this tool wrote")) << error;
    EXPECT_TRUE(contains(error, "replay.report/1")) << error;
}

// Other errors stay the parser's own: a JSON object that is neither says what the parser found.
TEST(DocumentKind, OtherJsonKeepsTheParsersError) {
    TempFile other("other.json", R"({"nodes": 3, "more": [1, 2]})");
    const std::string error = analyze_error(other.path());
    EXPECT_TRUE(contains(error, "no \"traceEvents\" array")) << error;
}

}  // namespace
