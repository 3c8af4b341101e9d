// Prepared aten-op work copied to freshly allocated memory (TorchOpRunner::relocated): the same
// op on the same values at other addresses. --energy measures each window of a kernel's loop on
// a placement of its own, because on the H200 a memory-bound kernel's energy per launch moved by
// several percent from one process to the next at the same speed, while one process's windows,
// all on one placement, agreed within 1%.
#include <map>

#include "replay/torch_ops.h"
#include "runner_impl.h"

namespace replay {
namespace {

// Gives each storage of the original one fresh copy, so that views which shared a storage (an
// in-place op's self and out, a list of slices) still share it in the copy.
class StorageMover {
  public:
    // `keep_host`: a device runner's host tensors (0-dim scalars folded into the launch) stay.
    explicit StorageMover(bool keep_host) : keep_host_(keep_host) {}

    at::Tensor move(const at::Tensor& t) {
        if (!t.defined() || !t.has_storage() || (keep_host_ && t.device().is_cpu())) return t;
        const void* key = t.storage().unsafeGetStorageImpl();
        auto it = moved_.find(key);
        if (it == moved_.end()) {
            const auto bytes = static_cast<std::int64_t>(t.storage().nbytes());
            const auto as_bytes = t.options().dtype(at::kByte);
            at::Tensor old = at::empty({0}, as_bytes).set_(t.storage(), 0, {bytes}, {1});
            at::Tensor fresh = at::empty({bytes}, as_bytes);
            fresh.copy_(old);
            it = moved_.emplace(key, std::move(fresh)).first;
        }
        return at::empty({0}, t.options())
            .set_(it->second.storage(), t.storage_offset(), t.sizes(), t.strides());
    }

    c10::IValue move(const c10::IValue& v) {
        if (v.isTensor()) return move(v.toTensor());
        if (v.isTensorList()) {
            c10::List<at::Tensor> list = v.toTensorList().copy();
            for (std::size_t i = 0; i < list.size(); ++i) list.set(i, move(list.get(i)));
            return list;
        }
        if (v.isList()) {  // e.g. index's List[Optional[Tensor]]
            c10::impl::GenericList list = v.toList().copy();
            for (std::size_t i = 0; i < list.size(); ++i) list.set(i, move(list.get(i)));
            return list;
        }
        return v;
    }

  private:
    bool keep_host_;
    std::map<const void*, at::Tensor> moved_;
};

}  // namespace

Prepared TorchOpRunner::relocated(std::uint32_t handle) {
    if (handle >= impl_->entries.size())
        return {Disposition::Failed, "no prepared work " + std::to_string(handle), 0};
    const torch_detail::Entry& entry = impl_->entries[handle];
    const auto* op = std::get_if<torch_detail::OpWork>(&entry.work);
    if (op == nullptr)
        return {Disposition::Skipped, "only aten ops' tensors are moved, not GEMMs' or copies'", 0};
    if (op->stack.empty()) return {Disposition::Failed, "the work was released", 0};
    return torch_detail::guarded_prepare([&] {
        StorageMover mover(!impl_->on_cpu());
        torch_detail::OpWork copy{op->op, {}, {}, op->host_seed};
        for (const c10::IValue& v : op->stack) copy.stack.push_back(mover.move(v));
        for (const torch_detail::RecordedInput& in : op->inputs)
            copy.inputs.push_back({mover.move(in.tensor), in.reuse_bytes, in.parameter});
        const std::uint32_t moved = impl_->add(entry.label, std::move(copy));
        return Prepared{Disposition::Ready, {}, moved};
    });
}

void TorchOpRunner::release(std::uint32_t handle) {
    if (handle >= impl_->entries.size()) return;
    if (auto* op = std::get_if<torch_detail::OpWork>(&impl_->entries[handle].work)) {
        op->stack.clear();
        op->inputs.clear();
    }
}

}  // namespace replay
