#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "replay/execution_trace.h"
#include "replay/kineto_parser.h"
#include "test_support.h"

namespace {

using replay::kNoId;
using replay::kNoIndex;
using replay::testing::source_path;
using replay::testing::TempFile;

const std::string kBloomKineto = "traces/h200/bloom560m_fp16_b1_s5.json.gz";
const std::string kBloomEt = "traces/h200/bloom560m_fp16_b1_s5.et.json.gz";
const std::string kLinearKineto = "traces/public/param/linear_kineto.json.gz";
const std::string kLinearEt = "traces/public/param/linear_et.json.gz";
const std::string kAddmmSchema =
    "aten::addmm(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1) -> "
    "Tensor";

const replay::EtNode* find_node(const replay::ExecutionTrace& et, std::int64_t rf_id) {
    for (const auto& node : et.nodes)
        if (node.rf_id == rf_id) return &node;
    return nullptr;
}

const replay::OpShapes* shapes_of(const replay::Trace& trace, const replay::CpuOp& op) {
    return op.shapes == kNoIndex ? nullptr : &trace.op_shapes[op.shapes];
}

TEST(ExecutionTrace, ReadsSchema11WithAttrs) {
    const auto et = replay::read_execution_trace(source_path(kBloomEt));
    EXPECT_EQ(et.schema_version.substr(0, 4), "1.1.");
    EXPECT_EQ(et.pid, 446);
    ASSERT_EQ(et.nodes.size(), 2571u);

    const replay::EtNode* addmm = find_node(et, 141);
    ASSERT_NE(addmm, nullptr);
    EXPECT_EQ(addmm->id, 232);
    EXPECT_EQ(addmm->parent, 223);
    EXPECT_EQ(addmm->tid, 1);
    EXPECT_EQ(addmm->name, "aten::addmm");
    EXPECT_EQ(addmm->schema, kAddmmSchema);
    ASSERT_EQ(addmm->inputs.size(), 5u);
    const auto& mat2 = addmm->inputs[2];
    EXPECT_EQ(mat2.type, "Tensor(c10::Half)");
    EXPECT_EQ(mat2.dims, (std::vector<std::int64_t>{1024, 3072}));
    EXPECT_EQ(mat2.strides, (std::vector<std::int64_t>{1, 1024}));
    EXPECT_TRUE(mat2.has_strides);
    EXPECT_EQ(mat2.tensor_id, 220);
    EXPECT_EQ(mat2.storage_id, 225);
    EXPECT_EQ(mat2.storage_offset, 0);
    EXPECT_EQ(mat2.numel, 3145728);
    EXPECT_EQ(mat2.itemsize, 2);
    EXPECT_EQ(mat2.device, "cuda:0");
    EXPECT_EQ(addmm->inputs[3].type, "Int");
    EXPECT_EQ(addmm->inputs[3].value, "1");
    EXPECT_EQ(addmm->inputs[3].storage_id, kNoId);
    ASSERT_EQ(addmm->outputs.size(), 1u);
    EXPECT_EQ(addmm->outputs[0].storage_id, 234);
    EXPECT_EQ(addmm->outputs[0].dims, (std::vector<std::int64_t>{5, 3072}));

    // Node offsets point at the node's opening brace in the decompressed JSON.
    EXPECT_GT(addmm->offset, 0u);
    EXPECT_TRUE(replay::is_et_root(et.nodes[0]));
}

TEST(ExecutionTrace, ReadsSchema10TopLevelKeys) {
    const auto et = replay::read_execution_trace(source_path(kLinearEt));
    EXPECT_EQ(et.schema_version, "1.0.1");
    EXPECT_EQ(et.pid, 24248);
    ASSERT_EQ(et.nodes.size(), 931u);

    const replay::EtNode* addmm = find_node(et, 5);
    ASSERT_NE(addmm, nullptr);
    EXPECT_EQ(addmm->name, "aten::addmm");
    EXPECT_EQ(addmm->id, 14);
    EXPECT_EQ(addmm->parent, 9);
    EXPECT_EQ(addmm->seq_id, 661);
    EXPECT_EQ(addmm->tid, 1);
    EXPECT_EQ(addmm->schema, kAddmmSchema);
    ASSERT_EQ(addmm->inputs.size(), 5u);
    EXPECT_EQ(addmm->inputs[1].dims, (std::vector<std::int64_t>{512, 1024}));
    EXPECT_EQ(addmm->inputs[1].storage_id, 4);
    EXPECT_FALSE(addmm->inputs[1].has_strides);  // 1.0.x records no strides
    EXPECT_TRUE(addmm->inputs[1].strides.empty());
    EXPECT_EQ(addmm->inputs[4].value, "1");
    ASSERT_EQ(addmm->outputs.size(), 1u);
    EXPECT_EQ(addmm->outputs[0].storage_id, 19);

    bool saw_list = false, saw_undefined = false;
    for (const auto& node : et.nodes) {
        for (const auto& in : node.inputs) {
            if (in.type.starts_with("GenericList[Tensor")) {
                saw_list = true;
                ASSERT_FALSE(in.list_storage_ids.empty());
                EXPECT_EQ(in.list_ranks.size(), in.list_storage_ids.size());
                EXPECT_EQ(in.storage_id, kNoId);
            }
            if (in.type == "Tensor(nullptr (uninitialized))") {
                saw_undefined = true;
                EXPECT_EQ(in.storage_id, kNoId);
            }
        }
    }
    EXPECT_TRUE(saw_list);
    EXPECT_TRUE(saw_undefined);
}

TEST(ExecutionTrace, KinetoInputTypes) {
    EXPECT_EQ(replay::kineto_input_type("Tensor(c10::Half)"), "c10::Half");
    EXPECT_EQ(replay::kineto_input_type("Tensor(long int)"), "long int");
    EXPECT_EQ(replay::kineto_input_type("Tensor(nullptr (uninitialized))"), "");
    EXPECT_EQ(replay::kineto_input_type("Int"), "Scalar");
    EXPECT_EQ(replay::kineto_input_type("Double"), "Scalar");
    EXPECT_EQ(replay::kineto_input_type("Bool"), "Scalar");
    EXPECT_EQ(replay::kineto_input_type("GenericList[Tensor(float),Tensor(float)]"), "TensorList");
    EXPECT_EQ(replay::kineto_input_type("GenericList[Int,Int]"), "ScalarList");
    EXPECT_EQ(replay::kineto_input_type("GenericList[]"), "ScalarList");
    EXPECT_EQ(replay::kineto_input_type("Device"), "");
    EXPECT_EQ(replay::kineto_input_type("None"), "");
}

TEST(ExecutionTrace, AttachesToBloomByRecordFunctionId) {
    auto parsed = replay::parse_kineto(source_path(kBloomKineto));
    replay::Trace& trace = parsed.trace;
    const auto et = replay::read_execution_trace(source_path(kBloomEt));
    const auto stats = replay::attach_execution_trace(trace, et);
    EXPECT_EQ(stats.join, replay::EtJoin::RecordFunctionId);
    EXPECT_EQ(stats.matched, 2569u);
    EXPECT_EQ(stats.unmatched_nodes, 0u);
    EXPECT_EQ(stats.unmatched_ops, 0u);
    EXPECT_EQ(stats.name_mismatches, 0u);
    EXPECT_EQ(stats.arity_mismatches, 0u);
    EXPECT_EQ(stats.shapes_filled, 0u);  // recorded with record_shapes: nothing to fill

    std::size_t addmms = 0;
    std::set<std::uint32_t> entries, weights;
    for (std::uint32_t i = 0; i < trace.cpu_ops.size(); ++i) {
        const replay::CpuOp& op = trace.cpu_ops[i];
        if (trace.names.view(op.name) != "aten::addmm") continue;
        ++addmms;
        const replay::OpShapes* shapes = shapes_of(trace, op);
        ASSERT_NE(shapes, nullptr);
        EXPECT_EQ(trace.names.view(shapes->schema), kAddmmSchema);
        ASSERT_EQ(shapes->inputs.size(), 5u);
        const replay::OpStorages& ids = trace.storages;
        for (int k = 0; k < 3; ++k) EXPECT_NE(ids.input(i, k), kNoId) << "input " << k;
        EXPECT_EQ(ids.input(i, 3), kNoId);
        ASSERT_EQ(ids.outputs(i), 1u);
        EXPECT_EQ(ids.output(i, 0).dims.size(), 2u);
        entries.insert(op.shapes);
        weights.insert(static_cast<std::uint32_t>(ids.input(i, 2)));
        if (op.record_function_id == 141) {
            EXPECT_EQ(ids.input(i, 0), 227);
            EXPECT_EQ(ids.input(i, 1), 113);
            EXPECT_EQ(ids.input(i, 2), 225);
            EXPECT_EQ(ids.output(i, 0).storage, 234);
            const auto dims = ids.output(i, 0).dims;
            EXPECT_EQ(std::vector<std::int64_t>(dims.begin(), dims.end()),
                      (std::vector<std::int64_t>{5, 3072}));
            // Kineto's own shapes stay.
            EXPECT_EQ(shapes->inputs[2].dims, (std::vector<std::int64_t>{1024, 3072}));
            EXPECT_EQ(trace.names.view(shapes->inputs[3].concrete), "1");
        }
    }
    EXPECT_EQ(addmms, 96u);  // 24 layers x (qkv, dense, h->4h, 4h->h)
    // The storage ids are each layer's; the shapes stay shared by the layers (one per GEMM shape).
    EXPECT_EQ(weights.size(), 96u);
    EXPECT_LE(entries.size(), 4u);
}

// Drops the Kineto shapes, as for a trace recorded without record_shapes, and checks that the ET
// puts back what Kineto had recorded.
TEST(ExecutionTrace, FillsShapesMissingFromKineto) {
    auto parsed = replay::parse_kineto(source_path(kBloomKineto));
    replay::Trace& trace = parsed.trace;
    const std::vector<replay::OpShapes> recorded = trace.op_shapes;
    std::vector<std::uint32_t> recorded_index;
    std::size_t with_inputs = 0;
    for (auto& op : trace.cpu_ops) {
        recorded_index.push_back(op.shapes);
        with_inputs += op.shapes != kNoIndex && !trace.op_shapes[op.shapes].inputs.empty();
        op.shapes = kNoIndex;
    }
    trace.op_shapes.clear();

    const auto stats =
        replay::attach_execution_trace(trace, replay::read_execution_trace(source_path(kBloomEt)));
    EXPECT_EQ(stats.matched, 2569u);
    EXPECT_EQ(stats.shapes_filled, with_inputs);

    std::size_t compared = 0;
    for (std::size_t i = 0; i < trace.cpu_ops.size(); ++i) {
        const auto& op = trace.cpu_ops[i];
        if (recorded_index[i] == kNoIndex) continue;
        const auto& before = recorded[recorded_index[i]].inputs;
        const replay::OpShapes* now = shapes_of(trace, op);
        ASSERT_NE(now, nullptr);
        ASSERT_EQ(now->inputs.size(), before.size()) << trace.names.view(op.name);
        for (std::size_t a = 0; a < before.size(); ++a) {
            const auto& k = before[a];
            const auto& e = now->inputs[a];
            const std::string_view ktype = trace.names.view(k.type),
                                   etype = trace.names.view(e.type);
            if (etype == "TensorList" && ktype.empty())
                continue;  // this Kineto writes "" for lists
            EXPECT_EQ(etype, ktype) << trace.names.view(op.name) << " input " << a;
            if (ktype != "Scalar" && ktype != "ScalarList" && !ktype.empty()) {
                EXPECT_EQ(e.dims, k.dims) << trace.names.view(op.name) << " input " << a;
                EXPECT_EQ(e.strides, k.strides) << trace.names.view(op.name) << " input " << a;
                EXPECT_NE(trace.storages.input(static_cast<std::uint32_t>(i), a), kNoId);
            }
            // Doubles differ in digits only ("1e-05" vs Kineto's "1.0000000000000001e-05").
            const std::string_view kc = trace.names.view(k.concrete),
                                   ec = trace.names.view(e.concrete);
            if (kc.find_first_of(".e") == std::string_view::npos) {
                EXPECT_EQ(ec, kc) << trace.names.view(op.name) << " input " << a;
            }
            ++compared;
        }
    }
    EXPECT_GT(compared, 8000u);
}

TEST(ExecutionTrace, JoinsLinearEtBySequenceAlignment) {
    auto parsed = replay::parse_kineto(source_path(kLinearKineto));
    replay::Trace& trace = parsed.trace;
    const auto et = replay::read_execution_trace(source_path(kLinearEt));
    const auto stats = replay::attach_execution_trace(trace, et);
    // This 2023 Kineto trace has no `Record function id`: the ET's two threads are placed by
    // autograd sequence numbers and verified name by name.
    EXPECT_EQ(stats.join, replay::EtJoin::SequenceAlignment);
    EXPECT_EQ(stats.matched, 928u);  // every node but the three roots
    EXPECT_EQ(stats.unmatched_nodes, 0u);
    EXPECT_GT(stats.shapes_filled, 800u);

    std::size_t with_shapes = 0;
    const replay::CpuOp* addmm = nullptr;
    const replay::CpuOp* foreach_add = nullptr;
    for (const auto& op : trace.cpu_ops) {
        if (op.shapes == kNoIndex) continue;
        ++with_shapes;
        if (op.external_id == 8151) addmm = &op;
        if (trace.names.view(op.name) == "aten::_foreach_add_") foreach_add = &op;
    }
    EXPECT_EQ(with_shapes, 928u);  // ops of other iterations stay without shapes
    ASSERT_NE(addmm, nullptr);
    EXPECT_EQ(trace.names.view(addmm->name), "aten::addmm");
    const replay::OpShapes& shapes = trace.op_shapes[addmm->shapes];
    EXPECT_EQ(trace.names.view(shapes.schema), kAddmmSchema);
    ASSERT_EQ(shapes.inputs.size(), 5u);
    EXPECT_EQ(trace.names.view(shapes.inputs[0].type), "float");
    EXPECT_EQ(shapes.inputs[0].dims, (std::vector<std::int64_t>{1024}));
    EXPECT_EQ(shapes.inputs[1].dims, (std::vector<std::int64_t>{512, 1024}));
    EXPECT_EQ(shapes.inputs[2].dims, (std::vector<std::int64_t>{1024, 1024}));
    const auto addmm_index = static_cast<std::uint32_t>(addmm - trace.cpu_ops.data());
    EXPECT_EQ(trace.storages.input(addmm_index, 1), 4);
    EXPECT_FALSE(shapes.inputs[1].has_strides);
    EXPECT_EQ(trace.names.view(shapes.inputs[3].type), "Scalar");
    EXPECT_EQ(trace.names.view(shapes.inputs[3].concrete), "1");
    ASSERT_EQ(trace.storages.outputs(addmm_index), 1u);
    EXPECT_EQ(trace.storages.output(addmm_index, 0).storage, 19);

    ASSERT_NE(foreach_add, nullptr);
    const replay::OpShapes& list = trace.op_shapes[foreach_add->shapes];
    ASSERT_FALSE(list.inputs.empty());
    EXPECT_EQ(trace.names.view(list.inputs[0].type), "TensorList");
    EXPECT_EQ(list.inputs[0].list_ranks.size(), 42u);
}

// One thread: iterations [A B C] four times, the third with D for C (another sequence), then a
// second thread with no op the ET joined. The ET joined the second iteration.
TEST(ExecutionTrace, LendsTheIterationToItsRepeatsWithoutShapes) {
    replay::Trace trace;
    const auto name = [&](const char* n) { return trace.names.intern(n); };
    const auto add_op = [&](const char* n, std::int64_t tid, std::int64_t ts) {
        replay::CpuOp op;
        op.name = name(n);
        op.tid = tid;
        op.ts = ts;
        op.dur = 5;
        trace.cpu_ops.push_back(op);
        return static_cast<std::uint32_t>(trace.cpu_ops.size() - 1);
    };
    const auto shapes = [&](std::int64_t dim) {
        replay::OpShapes s;
        s.inputs.push_back({});
        s.inputs.back().type = name("float");
        s.inputs.back().dims = {dim};
        return s;
    };
    std::vector<std::vector<std::uint32_t>> iterations;
    for (int i = 0; i < 4; ++i) {
        const std::int64_t t0 = 100 * i;
        iterations.push_back(
            {add_op("A", 1, t0), add_op("B", 1, t0 + 10), add_op(i == 2 ? "D" : "C", 1, t0 + 20)});
    }
    const std::uint32_t other_thread = add_op("A", 2, 5);
    for (std::size_t k = 0; k < 3; ++k) {
        const std::uint32_t op = iterations[1][k];
        trace.set_shapes(trace.cpu_ops[op], shapes(static_cast<std::int64_t>(k + 1)));
        trace.storages.add(op, std::vector<std::int64_t>{static_cast<std::int64_t>(10 + k)}, 0);
    }
    // Recorded with shapes of its own: kept, and so are its (absent) storage ids.
    trace.set_shapes(trace.cpu_ops[iterations[0][1]], shapes(99));

    const replay::LentIteration lent = replay::lend_execution_trace_iteration(trace);
    EXPECT_EQ(lent.threads, 1u);
    EXPECT_EQ(lent.pattern_ops, 3u);
    EXPECT_EQ(lent.repeats, 2u);  // iterations 0 and 3; iteration 2 runs D
    EXPECT_EQ(lent.ops, 5u);      // 3 + 3, less iteration 0's B
    for (const std::size_t i : {0u, 3u})
        for (std::size_t k = 0; k < 3; ++k) {
            const std::uint32_t op = iterations[i][k];
            if (i == 0 && k == 1) continue;
            EXPECT_EQ(trace.cpu_ops[op].shapes, trace.cpu_ops[iterations[1][k]].shapes);
            EXPECT_EQ(trace.storages.input(op, 0), static_cast<std::int64_t>(10 + k));
        }
    EXPECT_EQ(trace.op_shapes[trace.cpu_ops[iterations[0][1]].shapes].inputs[0].dims,
              (std::vector<std::int64_t>{99}));
    EXPECT_FALSE(trace.storages.has(iterations[0][1]));
    for (const std::uint32_t op : iterations[2]) EXPECT_EQ(trace.cpu_ops[op].shapes, kNoIndex);
    EXPECT_EQ(trace.cpu_ops[other_thread].shapes, kNoIndex);
    EXPECT_EQ(lent.unshaped, 4u);  // iteration 2's three, the other thread's A
}

// The iteration's names A A B begin again inside a run of As: the repeat is found where it
// starts, one A in (a search that restarted after the mismatch would miss it).
TEST(ExecutionTrace, FindsARepeatWhosePrefixRecurs) {
    replay::Trace trace;
    const std::vector<const char*> names = {"A", "A", "B", "A", "A", "A", "B"};
    for (std::size_t i = 0; i < names.size(); ++i) {
        replay::CpuOp op;
        op.name = trace.names.intern(names[i]);
        op.tid = 1;
        op.ts = static_cast<std::int64_t>(10 * i);
        op.dur = 5;
        trace.cpu_ops.push_back(op);
    }
    replay::OpShapes shapes;
    shapes.inputs.push_back({});
    shapes.inputs.back().dims = {4};
    for (std::uint32_t op = 0; op < 3; ++op) {
        trace.set_shapes(trace.cpu_ops[op], shapes);
        trace.storages.add(op, std::vector<std::int64_t>{op + 1}, 0);
    }
    const replay::LentIteration lent = replay::lend_execution_trace_iteration(trace);
    EXPECT_EQ(lent.repeats, 1u);
    EXPECT_EQ(lent.ops, 3u);
    EXPECT_EQ(trace.cpu_ops[3].shapes, kNoIndex);
    for (std::uint32_t k = 0; k < 3; ++k) EXPECT_EQ(trace.storages.input(4 + k, 0), k + 1);
    EXPECT_EQ(lent.unshaped, 1u);
}

TEST(ExecutionTrace, LendsNothingWithoutJoinedOps) {
    auto parsed = replay::parse_kineto(source_path(kLinearKineto));
    const replay::LentIteration lent = replay::lend_execution_trace_iteration(parsed.trace);
    EXPECT_EQ(lent.ops, 0u);
    EXPECT_EQ(lent.threads, 0u);
}

// PARAM's ET records one of the Kineto trace's 40 iterations. The others repeat its op sequence,
// but for the forward thread's last (no optimizer step after it) and the backward thread's first
// (its gradients are allocated there): 38 repeats on each thread.
TEST(ExecutionTrace, LendsLinearEtToTheOtherIterations) {
    auto parsed = replay::parse_kineto(source_path(kLinearKineto));
    replay::Trace& trace = parsed.trace;
    replay::attach_execution_trace(trace, replay::read_execution_trace(source_path(kLinearEt)));
    const replay::CpuOp* joined = nullptr;
    for (const auto& op : trace.cpu_ops)
        if (op.external_id == 8151) joined = &op;
    ASSERT_NE(joined, nullptr);
    const replay::LentIteration lent = replay::lend_execution_trace_iteration(trace);
    EXPECT_EQ(lent.threads, 2u);
    EXPECT_EQ(lent.repeats, 76u);
    EXPECT_GT(lent.ops, 30000u);
    // Every aten::addmm of a repeat holds the joined one's shapes and weight storage.
    const auto joined_index = static_cast<std::uint32_t>(joined - trace.cpu_ops.data());
    std::size_t addmm = 0, same = 0;
    for (std::uint32_t i = 0; i < trace.cpu_ops.size(); ++i) {
        const replay::CpuOp& op = trace.cpu_ops[i];
        if (op.name != joined->name || op.shapes == kNoIndex) continue;
        ++addmm;
        if (op.shapes == joined->shapes &&
            trace.storages.input(i, 2) == trace.storages.input(joined_index, 2))
            ++same;
    }
    EXPECT_GE(addmm, 39u * 3u);
    EXPECT_GE(same, 39u);  // the joined addmm's layer in every iteration lent
}

TEST(ExecutionTrace, JoinsNothingWhenNamesDiffer) {
    auto parsed = replay::parse_kineto(source_path(kBloomKineto));
    auto et = replay::read_execution_trace(source_path(kBloomEt));
    for (auto& node : et.nodes)
        if (node.name == "aten::addmm") node.name = "aten::mm";
    const auto stats = replay::attach_execution_trace(parsed.trace, et);
    EXPECT_EQ(stats.name_mismatches, 96u);
    EXPECT_EQ(stats.matched, 2569u - 96u);
    EXPECT_EQ(stats.unmatched_ops, 96u);
}

TEST(ExecutionTrace, RejectsInputThatIsNotAnExecutionTrace) {
    const TempFile text("not_json.txt", "this is not JSON at all\n");
    EXPECT_THROW(replay::read_execution_trace(text.path()), replay::InputError);
    try {
        replay::read_execution_trace(text.path());
    } catch (const replay::InputError& e) {
        EXPECT_EQ(e.file(), text.path());
    }

    const TempFile kineto_like("kineto_like.json", R"({"traceEvents": [{"ph": "X"}]})");
    try {
        replay::read_execution_trace(kineto_like.path());
        FAIL() << "expected an InputError";
    } catch (const replay::InputError& e) {
        EXPECT_NE(std::string(e.what()).find("nodes"), std::string::npos) << e.what();
    }

    // A node that is not an object: the error points at it.
    const std::string bad_node = R"({"schema": "1.1.1", "nodes": [{"id": 1, "name": "x"}, 42]})";
    const TempFile bad(("bad_node.json"), bad_node);
    try {
        replay::read_execution_trace(bad.path());
        FAIL() << "expected an InputError";
    } catch (const replay::InputError& e) {
        EXPECT_EQ(e.offset(), bad_node.find("42"));
    }

    const TempFile truncated("truncated.json",
                             R"({"nodes": [{"id": 1, "name": "x", "inputs": {"values": [1, )");
    EXPECT_THROW(replay::read_execution_trace(truncated.path()), replay::InputError);
    const TempFile empty("empty.json", "");
    EXPECT_THROW(replay::read_execution_trace(empty.path()), replay::InputError);
    EXPECT_THROW(replay::read_execution_trace(source_path(kBloomKineto)), replay::InputError);
    EXPECT_THROW(replay::read_execution_trace(source_path("traces/no_such_file.et.json")),
                 replay::InputError);
}

}  // namespace
