#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "replay/kineto_parser.h"
#include "replay/shape_log.h"
#include "test_support.h"

namespace {

using replay::kNoId;
using replay::kNoIndex;
using replay::testing::source_path;
using replay::testing::TempFile;

const std::string kBloomKineto = "traces/h200/bloom560m_fp16_b1_s5.json.gz";
const std::string kLinearKineto = "traces/public/param/linear_kineto.json.gz";
const std::string kAddmmSchema =
    "aten::addmm(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1) -> "
    "Tensor";

// In linear_kineto (no record_shapes, no Record function id), External id 8151 is an aten::addmm
// and 8147 the aten::linear around it.
const std::string kLinearLog =
    R"({"external_id": 8151, "name": "aten::addmm", "schema": ")" + kAddmmSchema +
    R"(", "inputs": [)"
    R"({"type": "float", "dims": [1024], "strides": [1]}, )"
    R"({"type": "float", "dims": [512, 1024], "strides": [1024, 1]}, )"
    R"({"type": "float", "dims": [1024, 1024], "strides": [1, 1024]}, )"
    R"({"type": "Scalar", "value": "1"}, {"type": "Scalar", "value": 1}]})"
    "\n\n"
    R"({"external_id": 8147, "name": "aten::linear", "future_member": {"ignored": true}, "inputs": [)"
    R"({"type": "TensorList", "dims": [[512, 1024], [1024]], "strides": [[1024, 1], [1]]}, {"type": "", "value": false}]})"
    "\r\n"
    R"({"external_id": 8148, "name": "aten::mm"})"
    "\n"
    R"({"rf_id": 5, "name": "aten::addmm"})"
    "\n";

void expect_linear_log_applied(const replay::Trace& trace, const replay::ShapeLogStats& stats) {
    EXPECT_EQ(stats.matched_by_external_id, 2u);
    EXPECT_EQ(stats.matched_by_rf_id, 0u);
    EXPECT_EQ(stats.unmatched, 2u);
    EXPECT_EQ(stats.name_mismatches, 1u);  // 8148 is aten::t, not aten::mm
    EXPECT_EQ(stats.shapes_filled, 2u);
    EXPECT_EQ(stats.schemas_set, 1u);

    const replay::CpuOp* addmm = nullptr;
    const replay::CpuOp* linear = nullptr;
    std::size_t with_shapes = 0;
    for (const auto& op : trace.cpu_ops) {
        with_shapes += op.shapes != kNoIndex;
        if (op.external_id == 8151) addmm = &op;
        if (op.external_id == 8147) linear = &op;
    }
    EXPECT_EQ(with_shapes, 2u);
    ASSERT_NE(addmm, nullptr);
    ASSERT_NE(addmm->shapes, kNoIndex);
    const replay::OpShapes& shapes = trace.op_shapes[addmm->shapes];
    EXPECT_EQ(trace.names.view(shapes.schema), kAddmmSchema);
    ASSERT_EQ(shapes.inputs.size(), 5u);
    EXPECT_EQ(trace.names.view(shapes.inputs[1].type), "float");
    EXPECT_EQ(shapes.inputs[1].dims, (std::vector<std::int64_t>{512, 1024}));
    EXPECT_EQ(shapes.inputs[2].strides, (std::vector<std::int64_t>{1, 1024}));
    EXPECT_TRUE(shapes.inputs[2].has_strides);
    EXPECT_EQ(trace.storages.input(static_cast<std::uint32_t>(addmm - trace.cpu_ops.data()), 2), kNoId);
    EXPECT_EQ(trace.names.view(shapes.inputs[3].concrete), "1");
    EXPECT_EQ(trace.names.view(shapes.inputs[4].concrete), "1");  // a JSON number, as text

    ASSERT_NE(linear, nullptr);
    ASSERT_NE(linear->shapes, kNoIndex);
    const replay::OpShapes& list = trace.op_shapes[linear->shapes];
    ASSERT_EQ(list.inputs.size(), 2u);
    EXPECT_EQ(trace.names.view(list.inputs[0].type), "TensorList");
    EXPECT_EQ(list.inputs[0].dims, (std::vector<std::int64_t>{512, 1024, 1024}));
    EXPECT_EQ(list.inputs[0].list_ranks, (std::vector<std::uint8_t>{2, 1}));
    EXPECT_EQ(trace.names.view(list.inputs[1].concrete), "False");
}

TEST(ShapeLog, ReadsEntries) {
    const TempFile file("entries.jsonl", kLinearLog);
    const auto log = replay::read_shape_log(file.path());
    ASSERT_EQ(log.entries.size(), 4u);
    const auto& first = log.entries[0];
    EXPECT_EQ(first.external_id, 8151);
    EXPECT_EQ(first.rf_id, kNoId);
    EXPECT_EQ(first.name, "aten::addmm");
    EXPECT_EQ(first.schema, kAddmmSchema);
    EXPECT_EQ(first.line, 1u);
    EXPECT_EQ(first.offset, 0u);
    ASSERT_EQ(first.inputs.size(), 5u);
    EXPECT_EQ(first.inputs[0].dims, (std::vector<std::int64_t>{1024}));
    EXPECT_EQ(first.inputs[3].value, "1");
    EXPECT_FALSE(first.inputs[3].has_strides);
    EXPECT_EQ(log.entries[1].line, 3u);  // the blank line counts
    EXPECT_EQ(log.entries[1].offset, kLinearLog.find(R"({"external_id": 8147)"));
    EXPECT_EQ(log.entries[3].rf_id, 5);
}

TEST(ShapeLog, FillsShapesOfLinearKineto) {
    auto parsed = replay::parse_kineto(source_path(kLinearKineto));
    ASSERT_TRUE(parsed.trace.op_shapes.empty());  // recorded without record_shapes
    const TempFile file("linear.jsonl", kLinearLog);
    const auto stats = replay::attach_shape_log(parsed.trace, replay::read_shape_log(file.path()));
    expect_linear_log_applied(parsed.trace, stats);
}

TEST(ShapeLog, ReadsGzip) {
    auto parsed = replay::parse_kineto(source_path(kLinearKineto));
    const TempFile file("linear.jsonl.gz", kLinearLog, /*gzip=*/true);
    const auto stats = replay::attach_shape_log(parsed.trace, replay::read_shape_log(file.path()));
    expect_linear_log_applied(parsed.trace, stats);
}

TEST(ShapeLog, JoinsOnRecordFunctionIdFirstAndKeepsRecordedShapes) {
    auto parsed = replay::parse_kineto(source_path(kBloomKineto));
    replay::Trace& trace = parsed.trace;
    const replay::CpuOp* addmm = nullptr;
    for (const auto& op : trace.cpu_ops)
        if (op.record_function_id == 141) addmm = &op;
    ASSERT_NE(addmm, nullptr);
    ASSERT_NE(addmm->shapes, kNoIndex);
    const std::vector<std::int64_t> recorded = trace.op_shapes[addmm->shapes].inputs[2].dims;

    // The external id is wrong on purpose: rf_id wins. The dims are wrong too: recorded shapes
    // stay.
    const TempFile file(
        "bloom.jsonl",
        R"({"external_id": 999999, "rf_id": 141, "name": "aten::addmm", "schema": ")" +
            kAddmmSchema +
            R"(", "inputs": [{"type": "c10::Half", "dims": [7]}]})"
            "\n");
    const auto stats = replay::attach_shape_log(trace, replay::read_shape_log(file.path()));
    EXPECT_EQ(stats.matched_by_rf_id, 1u);
    EXPECT_EQ(stats.shapes_filled, 0u);
    EXPECT_EQ(stats.schemas_set, 1u);
    const replay::OpShapes& shapes = trace.op_shapes[addmm->shapes];
    EXPECT_EQ(trace.names.view(shapes.schema), kAddmmSchema);
    EXPECT_EQ(shapes.inputs.size(), 5u);
    EXPECT_EQ(shapes.inputs[2].dims, recorded);

    // Without recorded shapes, the log's are taken.
    for (auto& op : trace.cpu_ops) op.shapes = kNoIndex;
    trace.op_shapes.clear();
    const auto filled = replay::attach_shape_log(trace, replay::read_shape_log(file.path()));
    EXPECT_EQ(filled.shapes_filled, 1u);
    ASSERT_NE(addmm->shapes, kNoIndex);
    EXPECT_EQ(trace.op_shapes[addmm->shapes].inputs.at(0).dims, (std::vector<std::int64_t>{7}));
}

// Returns the InputError that reading `content` as a shape log throws.
replay::InputError read_error(const std::string& name, const std::string& content) {
    const TempFile file(name, content);
    try {
        replay::read_shape_log(file.path());
    } catch (const replay::InputError& e) {
        EXPECT_EQ(e.file(), file.path());
        return e;
    }
    ADD_FAILURE() << "no InputError for: " << content;
    return replay::InputError("", 0, "");
}

TEST(ShapeLog, RejectsBadLinesWithLineAndOffset) {
    const std::string good = R"({"external_id": 1, "name": "aten::mm"})"
                             "\n";
    {
        const auto e = read_error("not_json.jsonl", good + "this is not JSON\n");
        EXPECT_EQ(e.offset(), good.size());
        EXPECT_NE(std::string(e.what()).find("line 2"), std::string::npos) << e.what();
    }
    {
        const auto e = read_error("no_name.jsonl", good + good +
                                                       R"({"external_id": 3})"
                                                       "\n");
        EXPECT_EQ(e.offset(), 2 * good.size());
        EXPECT_NE(std::string(e.what()).find("line 3"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("name"), std::string::npos) << e.what();
    }
    EXPECT_NE(
        std::string(read_error("no_id.jsonl", R"({"name": "aten::mm"})").what()).find("rf_id"),
        std::string::npos);
    read_error("array.jsonl", "[1, 2]\n");
    read_error("two.jsonl", R"({"external_id": 1, "name": "a"} {"external_id": 2, "name": "b"})");
    read_error("bad_id.jsonl", R"({"external_id": "1", "name": "a"})");
    read_error("bad_dims.jsonl",
               R"({"external_id": 1, "name": "a", "inputs": [{"type": "float", "dims": ["x"]}]})");
    read_error(
        "mixed_dims.jsonl",
        R"({"external_id": 1, "name": "a", "inputs": [{"type": "float", "dims": [1, [2]]}]})");
    read_error("no_type.jsonl", R"({"external_id": 1, "name": "a", "inputs": [{"dims": [1]}]})");
    read_error(
        "strides.jsonl",
        R"({"external_id": 1, "name": "a", "inputs": [{"type": "float", "dims": [2, 3], "strides": [1]}]})");
    read_error("truncated.jsonl", R"({"external_id": 1, "name": "a", "inputs": [)");
    EXPECT_THROW(replay::read_shape_log(source_path("traces/no_such_shape_log.jsonl")),
                 replay::InputError);
}

TEST(ShapeLog, EmptyFileHasNoEntries) {
    const TempFile file("empty.jsonl", "\n  \n");
    EXPECT_TRUE(replay::read_shape_log(file.path()).entries.empty());
}

}  // namespace
