// Backend modules opened with dlopen; see backend_loader.h.
#include "replay/backend_loader.h"

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <utility>

namespace replay {
namespace {

std::string hex(std::uint32_t value) {
    char text[16];
    std::snprintf(text, sizeof text, "0x%08x", value);
    return text;
}

std::string dl_error_text() {
    const char* text = dlerror();
    return text != nullptr ? text : "unknown dlopen error";
}

// A backend made by a module, owning that module: the backend is destroyed first (member order),
// so the module's code is still there for its destructor.
class ModuleBackend final : public Backend {
  public:
    ModuleBackend(std::shared_ptr<const BackendModule> module, std::unique_ptr<Backend> backend)
        : module_(std::move(module)), backend_(std::move(backend)) {}

    Environment environment() const override {
        Environment env = backend_->environment();
        env.notes.push_back("backend module " + module_->path().string());
        return env;
    }
    Prepared prepare(const Recipe& recipe) override { return backend_->prepare(recipe); }
    void set_stream_count(int count) override { backend_->set_stream_count(count); }
    void issue(std::uint32_t handle, int stream, std::uint64_t tag) override {
        backend_->issue(handle, stream, tag);
    }
    void stream_wait(int waiter, int producer) override { backend_->stream_wait(waiter, producer); }
    void synchronize() override { backend_->synchronize(); }
    void flush_l2() override { backend_->flush_l2(); }
    void warm_inputs(std::uint32_t handle, int stream, std::uint64_t tag) override {
        backend_->warm_inputs(handle, stream, tag);
    }
    std::vector<TimedActivity> collect() override { return backend_->collect(); }
    void set_phase(Phase phase) override { backend_->set_phase(phase); }
    std::vector<std::string> first_uses() override { return backend_->first_uses(); }
    std::string capture_blocker(std::uint32_t handle, int stream) override {
        return backend_->capture_blocker(handle, stream);
    }
    void begin_capture(int home, bool all_streams) override {
        backend_->begin_capture(home, all_streams);
    }
    std::uint32_t end_capture(std::string& why) override { return backend_->end_capture(why); }
    void launch_graph(std::uint32_t graph) override { backend_->launch_graph(graph); }
    bool runs_collectives() const override { return backend_->runs_collectives(); }
    std::vector<std::string> all_gather_text(const std::string& mine) override {
        return backend_->all_gather_text(mine);
    }

  private:
    std::shared_ptr<const BackendModule> module_;
    std::unique_ptr<Backend> backend_;
};

}  // namespace

std::shared_ptr<const BackendModule> BackendModule::load(
    const std::string& file_name, const std::vector<std::filesystem::path>& dirs) {
    std::string tried;
    for (const auto& dir : dirs) {
        const std::filesystem::path path = dir / file_name;
        // RTLD_NODELETE: the code stays mapped after the last dlclose. A backend can leave
        // callbacks behind it (CUPTI's buffer callbacks stay registered until the process ends)
        // and libtorch keeps thread pools; unmapping their code under them would crash at exit.
        void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
        if (handle == nullptr) {
            const std::string error = dl_error_text();
            std::error_code ec;
            if (std::filesystem::exists(path, ec))
                throw BackendLoadError(
                    BackendLoadError::Kind::NotLoadable,
                    "cannot load backend module " + path.string() + ": " + error);
            tried += (tried.empty() ? "" : "; ") + error;
            continue;
        }
        // From here on the handle is closed on every path out.
        auto module = std::make_shared<BackendModule>(Key{}, handle, path);
        dlerror();
        auto entry = reinterpret_cast<BackendModuleEntry>(dlsym(handle, kBackendModuleEntryPoint));
        if (entry == nullptr)
            throw BackendLoadError(
                BackendLoadError::Kind::NotLoadable,
                path.string() + " is not a replay backend module: " + dl_error_text());
        const BackendModuleInfo* info = entry();
        if (info == nullptr || info->abi_version != kBackendAbiVersion ||
            info->layout != backend_abi_layout()) {
            const std::string built = info == nullptr
                                          ? std::string("no module information")
                                          : "backend ABI " + std::to_string(info->abi_version) +
                                                " (layout " + hex(info->layout) + ")";
            throw BackendLoadError(
                BackendLoadError::Kind::WrongAbi,
                "backend module " + path.string() + " was built for " + built +
                    ", this replay needs ABI " + std::to_string(kBackendAbiVersion) + " (layout " +
                    hex(backend_abi_layout()) +
                    "): it is stale; rebuild it with this replay (or point REPLAY_BACKEND_DIR at "
                    "the modules built with it)");
        }
        if (info->create == nullptr)
            throw BackendLoadError(BackendLoadError::Kind::NotLoadable,
                                   "backend module " + path.string() + " has no factory");
        module->info_ = info;
        return module;
    }
    throw BackendLoadError(BackendLoadError::Kind::NotFound,
                           "backend module " + file_name +
                               " not found (REPLAY_BACKEND_DIR names the folder that holds it): " +
                               (tried.empty() ? "no folder to look in" : tried));
}

BackendModule::~BackendModule() {
    dlclose(handle_);
}

std::string backend_module_file(const std::string& name) {
    return "libreplay_backend_" + name + ".so";
}

std::vector<std::filesystem::path> backend_module_dirs() {
    std::vector<std::filesystem::path> dirs;
    if (const char* dir = std::getenv("REPLAY_BACKEND_DIR"); dir != nullptr && *dir != '\0')
        dirs.emplace_back(dir);
    std::error_code ec;
    const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (!ec) {
        dirs.push_back((exe.parent_path() / ".." / "lib" / "replay").lexically_normal());
        dirs.push_back(exe.parent_path());
    }
    return dirs;
}

std::unique_ptr<Backend> create_backend(std::shared_ptr<const BackendModule> module,
                                        const BackendOptions& options, std::string& why) {
    std::unique_ptr<Backend> backend = module->info().create(options, why);
    if (backend == nullptr) return nullptr;
    return std::make_unique<ModuleBackend>(std::move(module), std::move(backend));
}

}  // namespace replay
