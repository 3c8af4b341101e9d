// The backend module loader: where modules are looked for, the errors for a missing module, a file
// that is not a module and a stale one (fake modules built beside this test), and backends that
// keep their module loaded.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

#include "replay/backend_loader.h"
#include "replay/energy.h"
#include "test_support.h"

namespace replay {
namespace {

namespace fs = std::filesystem;

const fs::path kFakeModules = REPLAY_FAKE_MODULE_DIR;

// The error load() throws, which must be one.
BackendLoadError load_error(const std::string& file, const std::vector<fs::path>& dirs) {
    try {
        BackendModule::load(file, dirs);
    } catch (const BackendLoadError& e) {
        return e;
    }
    ADD_FAILURE() << file << " loaded";
    return BackendLoadError(BackendLoadError::Kind::NotFound, "");
}

TEST(BackendLoader, MissingModuleNamesTheFileAndEveryFolderTried) {
    const fs::path a =
        fs::temp_directory_path() / ("replay_no_modules_" + std::to_string(::getpid()));
    const fs::path b = kFakeModules / "no such folder";
    const BackendLoadError e = load_error("libreplay_backend_nothing.so", {a, b});
    EXPECT_EQ(e.kind(), BackendLoadError::Kind::NotFound);
    const std::string message = e.what();
    EXPECT_NE(message.find("libreplay_backend_nothing.so not found"), std::string::npos) << message;
    EXPECT_NE(message.find("REPLAY_BACKEND_DIR"), std::string::npos) << message;
    for (const auto& dir : {a, b})  // dlerror()'s text for each
        EXPECT_NE(message.find((dir / "libreplay_backend_nothing.so").string() +
                               ": cannot open shared object file"),
                  std::string::npos)
            << message;
}

TEST(BackendLoader, FileThatIsNotAModuleIsAnErrorNotASkip) {
    const testing::TempFile text("libreplay_backend_text.so", "not a shared object\n");
    const fs::path path = text.path();
    // A valid module further down the path does not hide a broken one found first.
    const BackendLoadError e =
        load_error(path.filename().string(), {path.parent_path(), kFakeModules});
    EXPECT_EQ(e.kind(), BackendLoadError::Kind::NotLoadable);
    const std::string message = e.what();
    EXPECT_NE(message.find("cannot load backend module " + path.string()), std::string::npos)
        << message;
}

TEST(BackendLoader, SharedLibraryWithoutTheEntryPointIsNotAModule) {
    const BackendLoadError e = load_error("libreplay_backend_noentry.so", {kFakeModules});
    EXPECT_EQ(e.kind(), BackendLoadError::Kind::NotLoadable);
    const std::string message = e.what();
    EXPECT_NE(message.find("is not a replay backend module"), std::string::npos) << message;
    EXPECT_NE(message.find("replay_backend_module"), std::string::npos) << message;  // dlerror()
}

TEST(BackendLoader, StaleModuleIsRefusedWithBothVersions) {
    const BackendLoadError e = load_error("libreplay_backend_stale.so", {kFakeModules});
    EXPECT_EQ(e.kind(), BackendLoadError::Kind::WrongAbi);
    const std::string message = e.what();
    EXPECT_NE(message.find("built for backend ABI " + std::to_string(kBackendAbiVersion + 1)),
              std::string::npos)
        << message;
    EXPECT_NE(message.find("needs ABI " + std::to_string(kBackendAbiVersion)), std::string::npos)
        << message;
    EXPECT_NE(message.find("stale"), std::string::npos) << message;
}

TEST(BackendLoader, BackendKeepsItsModuleLoaded) {
    auto module = BackendModule::load("libreplay_backend_fake.so", {kFakeModules});
    EXPECT_EQ(std::string(module->info().name), "fake");
    EXPECT_EQ(module->path(), kFakeModules / "libreplay_backend_fake.so");
    std::weak_ptr<const BackendModule> watch = module;

    std::string why;
    auto backend = create_backend(module, BackendOptions{}, why);
    ASSERT_NE(backend, nullptr) << why;
    module.reset();
    EXPECT_FALSE(watch.expired()) << "the backend must own its module";
    const Environment env = backend->environment();  // module code, called after our reset
    EXPECT_EQ(env.backend, "fake");
    ASSERT_FALSE(env.notes.empty());
    EXPECT_EQ(env.notes.back(),
              "backend module " + (kFakeModules / "libreplay_backend_fake.so").string());
    EXPECT_EQ(backend->prepare(Recipe{}).reason, "a fake backend runs nothing");
    backend.reset();
    EXPECT_TRUE(watch.expired()) << "the module outlived its last backend";
}

// Every Backend method reaches the module's backend: a default of Backend answering instead made
// --energy and --nvtx do nothing on the loaded CUDA backend.
TEST(BackendLoader, EveryCallReachesTheModulesBackend) {
    auto module = BackendModule::load("libreplay_backend_fake.so", {kFakeModules});
    std::string why;
    auto backend = create_backend(module, BackendOptions{}, why);
    ASSERT_NE(backend, nullptr) << why;
    backend->name_next_issue("k1 gemm (iteration 2)");
    EXPECT_EQ(backend->first_uses(), std::vector<std::string>{"named: k1 gemm (iteration 2)"});
    EXPECT_EQ(backend->energy_meter(why), nullptr);
    EXPECT_EQ(why, "asked the fake module's backend");
    EXPECT_TRUE(backend->runs_collectives());
    // --energy's placements (relocated work was once dropped here too).
    const Prepared moved = backend->relocated(7);
    EXPECT_EQ(moved.reason, "moved by the fake module's backend");
    EXPECT_EQ(moved.handle, 107u);
    backend->release(107);
    EXPECT_EQ(backend->first_uses(), std::vector<std::string>{"named: released 107"});
    EXPECT_EQ(backend->all_gather_text("mine"), (std::vector<std::string>{"fake rank 0", "mine"}));
}

TEST(BackendLoader, BackendThatCannotRunHereSaysWhy) {
    auto module = BackendModule::load("libreplay_backend_fake.so", {kFakeModules});
    BackendOptions options;
    options.device = -1;
    std::string why;
    EXPECT_EQ(create_backend(module, options, why), nullptr);
    EXPECT_EQ(why, "the fake backend has no device -1");
}

TEST(BackendLoader, EnvironmentFolderComesFirstThenBesideTheExecutable) {
    const fs::path exe = fs::read_symlink("/proc/self/exe");
    ASSERT_EQ(::setenv("REPLAY_BACKEND_DIR", kFakeModules.c_str(), 1), 0);
    auto dirs = backend_module_dirs();
    ASSERT_EQ(dirs.size(), 3u);
    EXPECT_EQ(dirs[0], kFakeModules);
    EXPECT_EQ(dirs[1], (exe.parent_path() / ".." / "lib" / "replay").lexically_normal());
    EXPECT_EQ(dirs[2], exe.parent_path());
    EXPECT_EQ(std::string(BackendModule::load(backend_module_file("fake"), dirs)->info().name),
              "fake");
    ASSERT_EQ(::unsetenv("REPLAY_BACKEND_DIR"), 0);
    dirs = backend_module_dirs();
    ASSERT_EQ(dirs.size(), 2u);
    EXPECT_EQ(dirs[1], exe.parent_path());
}

}  // namespace
}  // namespace replay
