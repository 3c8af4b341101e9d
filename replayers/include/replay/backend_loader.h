// Loading backend modules (backend.h, "backend modules") on demand with dlopen. A module is
// looked for in $REPLAY_BACKEND_DIR when set, then under ../lib/replay/ beside the executable's
// real path (an installed tree: bin/replay, lib/replay/*.so), then in the executable's own folder.
#pragma once

#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "replay/backend.h"

namespace replay {

// A module that could not be used: missing, not a module, or built for another ABI. The message
// names the file, where it was looked for and dlerror()'s text.
class BackendLoadError : public std::runtime_error {
  public:
    enum class Kind { NotFound, NotLoadable, WrongAbi };
    BackendLoadError(Kind kind, const std::string& message)
        : std::runtime_error(message), kind_(kind) {}
    Kind kind() const { return kind_; }

  private:
    Kind kind_;
};

// One loaded module: the dlopen handle, closed when the last owner lets go. Backends made through
// load_backend() own their module, so it outlives every backend it made.
class BackendModule {
    struct Key {
        explicit Key() = default;
    };

  public:
    // Opens `file_name` (libreplay_backend_cpu.so) in the first of `dirs` that has it, checks its
    // entry point and ABI. Throws BackendLoadError.
    static std::shared_ptr<const BackendModule> load(
        const std::string& file_name, const std::vector<std::filesystem::path>& dirs);
    // Only load() makes modules (it alone can name Key).
    BackendModule(Key, void* handle, std::filesystem::path path)
        : handle_(handle), path_(std::move(path)) {}
    ~BackendModule();
    BackendModule(const BackendModule&) = delete;
    BackendModule& operator=(const BackendModule&) = delete;

    const std::filesystem::path& path() const { return path_; }
    const BackendModuleInfo& info() const { return *info_; }

  private:
    void* handle_;  // from dlopen, closed by the destructor
    std::filesystem::path path_;
    const BackendModuleInfo* info_ = nullptr;  // set by load() once checked
};

// The file of the module that holds backend `name`: "cpu" -> "libreplay_backend_cpu.so".
std::string backend_module_file(const std::string& name);

// Where modules are looked for, in order (see the top of this file).
std::vector<std::filesystem::path> backend_module_dirs();

// The backend of module `module` made with `options`; the backend keeps the module loaded. Throws
// BackendLoadError when the module cannot be used; nullptr with `why` when the module loaded but
// its backend cannot run here (no GPU).
std::unique_ptr<Backend> create_backend(std::shared_ptr<const BackendModule> module,
                                        const BackendOptions& options, std::string& why);

}  // namespace replay
