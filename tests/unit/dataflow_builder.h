// Small Kineto traces built event by event for the dataflow tests (test_dataflow.cpp,
// test_dataflow_shapes.cpp, test_tensor_lists.cpp), and what they read back: storage ids of
// inputs and outputs.
#pragma once

#include <cstdint>
#include <string>

#include "replay/dataflow.h"
#include "replay/kernel_graph.h"
#include "replay/kineto_parser.h"
#include "test_support.h"

namespace dataflow_testing {

using replay::InputOrigin;
using replay::testing::source_path;
using replay::testing::TempFile;

// A Kineto trace written event by event: cpu ops with record_shapes arguments, and kernels
// launched from an op (a cudaLaunchKernel inside it, correlated with the kernel).
class TraceBuilder {
  public:
    // dims/types/concrete: JSON array texts as Kineto writes them.
    TraceBuilder& op(const std::string& name, double ts, double dur, const std::string& dims,
                     const std::string& types, const std::string& concrete = "") {
        ++external_;
        add("{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"" + name +
            "\",\"pid\":1,\"tid\":" + std::to_string(tid_) + ",\"ts\":" + num(ts) +
            ",\"dur\":" + num(dur) + ",\"args\":{\"External id\":" + std::to_string(external_) +
            ",\"Input Dims\":" + dims + ",\"Input type\":" + types +
            (concrete.empty() ? "" : ",\"Concrete Inputs\":" + concrete) + "}}");
        return *this;
    }
    // The thread of the ops added after this (the autograd engine's: 2); kernels stay on 1.
    TraceBuilder& on_thread(int tid) {
        tid_ = tid;
        return *this;
    }
    TraceBuilder& step(int n, double ts, double dur) {
        add("{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#" +
            std::to_string(n) + "\",\"pid\":1,\"tid\":1,\"ts\":" + num(ts) +
            ",\"dur\":" + num(dur) + ",\"args\":{}}");
        return *this;
    }
    // A kernel launched at `ts` by the op added last (the launch lies inside it).
    TraceBuilder& kernel(const std::string& name, double ts, int grid_x) {
        ++correlation_;
        const std::string ids = ",\"args\":{\"correlation\":" + std::to_string(correlation_) +
                                ",\"External id\":" + std::to_string(external_);
        add("{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"pid\":1,"
            "\"tid\":1,"
            "\"ts\":" +
            num(ts) + ",\"dur\":0.5" + ids + "}}");
        add("{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"" + name +
            "\",\"pid\":0,\"tid\":7,\"ts\":" + num(ts + 5) + ",\"dur\":3" + ids +
            ",\"device\":0,\"stream\":7,\"grid\":[" + std::to_string(grid_x) +
            ",1,1],\"block\":[512,1,1]}}");
        return *this;
    }
    std::string json() const { return "{\"traceEvents\":[" + events_ + "]}"; }
    replay::Trace trace() const { return replay::parse_kineto_buffer(json(), {}, "built").trace; }

  private:
    static std::string num(double v) { return std::to_string(v); }
    void add(const std::string& event) { events_ += (events_.empty() ? "" : ",") + event; }
    std::string events_;
    int external_ = 0, correlation_ = 0, tid_ = 1;
};

inline const replay::OpArgument& input(const replay::Trace& t, std::size_t op, std::size_t i) {
    return t.op_shapes[t.cpu_ops[op].shapes].inputs[i];
}
// The storage id of input `i` of op `op`, and of the op's output.
inline std::int64_t storage(const replay::Trace& t, std::size_t op, std::size_t i) {
    return t.storages.input(static_cast<std::uint32_t>(op), i);
}
inline std::int64_t output(const replay::Trace& t, std::size_t op) {
    EXPECT_GE(t.storages.outputs(static_cast<std::uint32_t>(op)), 1u) << "op " << op;
    return t.storages.output(static_cast<std::uint32_t>(op), 0).storage;
}

// The builder's trace with its graph built and its dataflow inferred.
inline replay::Trace inferred(const TraceBuilder& b) {
    replay::Trace t = b.trace();
    (void)replay::KernelGraph::build(t);
    replay::infer_dataflow(t);
    return t;
}

// One linear layer as PyTorch records it: aten::linear(x, w, b) > aten::t(w), aten::addmm(b, x,
// t(w)), ops 3 apart from `at`.
inline void linear_layer(TraceBuilder& b, double at) {
    b.op("aten::linear", at, 30, "[[1, 4], [8, 4], [8]]", "[\"float\", \"float\", \"float\"]")
        .op("aten::t", at + 1, 5, "[[8, 4]]", "[\"float\"]")
        .op("aten::addmm", at + 10, 15, "[[8], [1, 4], [4, 8], [], []]",
            "[\"float\", \"float\", \"float\", \"Scalar\", \"Scalar\"]",
            "[\"\", \"\", \"\", \"1\", \"1\"]");
}

// One linear layer and an optimizer step over its two parameters whose foreach list Kineto
// recorded as [], its kernel launched with `grid_x` blocks (the parameters need 2).
inline std::string optimizer_trace(int grid_x) {
    TraceBuilder b;
    linear_layer(b, 0);  // parameters: [8, 4] weight (1 block), [8] bias (1 block)
    b.kernel("sm90_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize64x64x8_stage3", 11, 1);  // the addmm's
    b.op("aten::_foreach_mul_", 100, 20, "[[], []]", "[\"TensorList\", \"Scalar\"]",
         "[\"\", \"0.9\"]")
        .kernel("void at::native::multi_tensor_apply_kernel<float>()", 101, grid_x);
    return b.json();
}

}  // namespace dataflow_testing
