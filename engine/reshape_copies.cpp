// --set-dims: the copies aten::reshape makes at the new shape where the recording had a view
// (reshape_copies.h).
#include "reshape_copies.h"

#include <algorithm>
#include <limits>
#include <map>
#include <string_view>
#include <unordered_map>

#include "replay/recipe.h"

namespace replay::shape_rewrite_detail {

std::optional<std::vector<std::int64_t>> view_strides(const std::vector<std::int64_t>& dims,
                                                      const std::vector<std::int64_t>& strides,
                                                      const std::vector<std::int64_t>& shape) {
    if (dims.size() != strides.size()) return std::nullopt;
    if (dims.empty()) return std::vector<std::int64_t>(shape.size(), 1);
    std::int64_t numel = 1;
    for (auto d : dims) numel *= d;
    if (numel == 0) {
        if (dims == shape) return strides;
        return contiguous_strides(shape);
    }
    // Runs of input dims that are contiguous with each other ("chunks") must each be covered by
    // whole view dims; a view dim may not straddle two chunks.
    std::vector<std::int64_t> out(shape.size(), 0);
    auto view_d = static_cast<std::ptrdiff_t>(shape.size()) - 1;
    std::int64_t chunk_base_stride = strides.back(), tensor_numel = 1, view_numel = 1;
    for (auto tensor_d = static_cast<std::ptrdiff_t>(dims.size()) - 1; tensor_d >= 0; --tensor_d) {
        const auto t = static_cast<std::size_t>(tensor_d);
        tensor_numel *= dims[t];
        if (tensor_d == 0 || (dims[t - 1] != 1 && strides[t - 1] != tensor_numel * chunk_base_stride)) {
            while (view_d >= 0 && (view_numel < tensor_numel || shape[static_cast<std::size_t>(view_d)] == 1)) {
                out[static_cast<std::size_t>(view_d)] = view_numel * chunk_base_stride;
                view_numel *= shape[static_cast<std::size_t>(view_d)];
                --view_d;
            }
            if (view_numel != tensor_numel) return std::nullopt;
            if (tensor_d > 0) {
                chunk_base_stride = strides[t - 1];
                tensor_numel = 1;
                view_numel = 1;
            }
        }
    }
    if (view_d != -1) return std::nullopt;
    return out;
}

std::vector<std::int64_t> resolve_size_list(const std::vector<std::int64_t>& dims,
                                            std::vector<std::int64_t> list) {
    std::int64_t numel = 1, known = 1;
    for (auto d : dims) numel *= d;
    std::size_t unknown = list.size();
    for (std::size_t j = 0; j < list.size(); ++j) {
        if (list[j] == -1) unknown = j;
        else known *= list[j];
    }
    if (unknown < list.size() && known > 0) list[unknown] = numel / known;
    return list;
}

namespace {

bool is_view(std::string_view name) {
    return name == "aten::_reshape_alias" || name == "aten::view";
}

// Where a kernel launched from `thread` at `ts` runs: on the stream of the work the thread
// launched last before it, after that work, and no later than the work it launched next.
class Placement {
  public:
    explicit Placement(const Trace& trace) : trace_(trace) {
        std::unordered_map<std::int64_t, std::uint32_t> activity_of;
        for (std::uint32_t i = 0; i < trace.activities.size(); ++i)
            if (trace.activities[i].correlation != kNoId) activity_of.emplace(trace.activities[i].correlation, i);
        for (const RuntimeCall& call : trace.runtime_calls)
            if (auto it = activity_of.find(call.correlation); it != activity_of.end())
                launches_[{call.pid, call.tid}].push_back({call.ts, it->second});
        for (auto& [thread, list] : launches_) std::stable_sort(list.begin(), list.end());
    }
    void place(ReshapeSite& site, const CpuOp& at) const {
        const auto it = launches_.find({at.pid, at.tid});
        if (it == launches_.end() || it->second.empty()) {
            site.gpu_ts = at.ts;
            if (!trace_.activities.empty()) {
                site.device = trace_.activities.front().device;
                site.stream = trace_.activities.front().stream;
            }
            return;
        }
        const auto& list = it->second;
        const auto next = std::upper_bound(list.begin(), list.end(), std::pair<Nanos, std::uint32_t>{at.ts, ~0u});
        const GpuActivity& near = trace_.activities[(next == list.begin() ? next : next - 1)->second];
        site.device = near.device;
        site.stream = near.stream;
        site.gpu_ts = next == list.begin() ? at.ts : std::max(at.ts, near.ts + near.dur);
        if (next != list.end()) site.gpu_ts = std::min(site.gpu_ts, trace_.activities[next->second].ts);
    }

  private:
    const Trace& trace_;
    std::map<std::pair<std::int64_t, std::int64_t>, std::vector<std::pair<Nanos, std::uint32_t>>> launches_;
};

}  // namespace

std::vector<ReshapeSite> find_reshape_sites(const Trace& trace) {
    std::vector<ReshapeSite> sites;
    std::vector<bool> taken(trace.cpu_ops.size(), false);
    for (std::uint32_t i = 0; i < trace.cpu_ops.size(); ++i) {
        const CpuOp& op = trace.cpu_ops[i];
        if (op.parent == kNoIndex || taken[op.parent] || !is_view(trace.names.view(op.name))) continue;
        const CpuOp& parent = trace.cpu_ops[op.parent];
        if (trace.names.view(parent.name) != "aten::reshape" || parent.shapes == kNoIndex) continue;
        taken[op.parent] = true;
        sites.push_back({op.parent, i, 0, 0, 0});
    }
    if (sites.empty()) return sites;
    const Placement placement(trace);
    for (auto& site : sites) placement.place(site, trace.cpu_ops[site.view]);
    return sites;
}

void add_reshape_copy(Trace& trace, const ReshapeSite& site, const OpArgument& input,
                      std::int64_t correlation) {
    const CpuOp view = trace.cpu_ops[site.view];
    OpArgument memory_format;
    memory_format.type = trace.names.intern("Scalar");
    memory_format.concrete = trace.names.intern("0");
    OpShapes clone;
    clone.inputs = {input, memory_format};
    trace.cpu_ops[site.view].name = trace.names.intern("aten::clone");
    trace.cpu_ops[site.view].shapes = static_cast<std::uint32_t>(trace.op_shapes.size());
    trace.op_shapes.push_back(std::move(clone));

    OpArgument destination = input;
    destination.strides = contiguous_strides(input.dims);
    destination.has_strides = true;
    destination.storage_offset = 0;
    OpArgument non_blocking;
    non_blocking.type = memory_format.type;
    non_blocking.concrete = trace.names.intern("False");
    OpShapes copy_shapes;
    copy_shapes.inputs = {destination, input, non_blocking};
    // The same span as the clone, after it in the op array: nested in it (KernelGraph::build
    // nests the later of two equal spans), so that it is the launch's innermost op.
    CpuOp copy = view;
    copy.name = trace.names.intern("aten::copy_");
    copy.external_id = copy.record_function_id = copy.sequence_number = kNoId;
    copy.parent = kNoIndex;
    copy.shapes = static_cast<std::uint32_t>(trace.op_shapes.size());
    trace.op_shapes.push_back(std::move(copy_shapes));
    trace.cpu_ops.push_back(copy);
    // Where the trace has storage ids already (an Execution Trace's), the copy reads the view's
    // input into a buffer of its own; an inferred dataflow, made later, gives it its ids then.
    if (trace.storages.has(site.view)) {
        const std::int64_t ids[] = {kNoId, trace.storages.input(site.view, 0), kNoId};
        trace.storages.add(static_cast<std::uint32_t>(trace.cpu_ops.size() - 1), ids, 0);
    }

    RuntimeCall launch;
    launch.name = trace.names.intern("cudaLaunchKernel");
    launch.ts = view.ts;
    launch.pid = view.pid;
    launch.tid = view.tid;
    launch.correlation = correlation;
    trace.runtime_calls.push_back(launch);

    GpuActivity kernel;
    kernel.name = trace.names.intern(kReshapeCopyKernel);
    kernel.ts = site.gpu_ts;
    kernel.device = site.device;
    kernel.stream = site.stream;
    kernel.correlation = correlation;
    trace.activities.push_back(kernel);
}

void LayoutRemaps::add(const std::vector<std::int64_t>& recorded_dims,
                       const std::vector<std::int64_t>& recorded_strides,
                       const std::vector<std::int64_t>& new_strides) {
    std::vector<std::pair<std::pair<std::int64_t, std::int64_t>, std::int64_t>> pairs;
    for (std::size_t j = 0; j < recorded_dims.size() && j < recorded_strides.size() && j < new_strides.size(); ++j)
        pairs.push_back({{recorded_dims[j], recorded_strides[j]}, new_strides[j]});
    std::sort(pairs.begin(), pairs.end());
    // Every layer's reshape adds the same copy: kept once, as the latest.
    std::erase(copies_, pairs);
    copies_.push_back(std::move(pairs));
}

std::optional<std::vector<std::int64_t>> LayoutRemaps::find(const std::vector<std::int64_t>& dims,
                                                             const std::vector<std::int64_t>& strides) const {
    if (dims.empty() || dims.size() != strides.size()) return std::nullopt;
    for (auto copy = copies_.rbegin(); copy != copies_.rend(); ++copy) {
        std::vector<std::int64_t> out;
        for (std::size_t j = 0; j < dims.size(); ++j) {
            const auto it = std::lower_bound(copy->begin(), copy->end(), std::make_pair(std::make_pair(dims[j], strides[j]),
                                                                                        std::numeric_limits<std::int64_t>::min()));
            if (it == copy->end() || it->first != std::make_pair(dims[j], strides[j])) break;
            out.push_back(it->second);
        }
        if (out.size() == dims.size()) return out;
    }
    return std::nullopt;
}

}  // namespace replay::shape_rewrite_detail
