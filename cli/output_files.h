// Output files of the commands, written whole or not at all: every output of a run goes to a
// temporary file beside its target, and all are renamed into place together once every one is
// complete. A failure before that (an exception, a full disk) or SIGINT/SIGTERM leaves the
// targets as they were, and an output folder is locked so that two runs cannot mix their files.
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <ostream>
#include <vector>

namespace replay::cli {

using Fill = std::function<void(std::ostream&)>;

// The command line, for the lock of an output folder (a second run says who holds it).
void remember_command_line(int argc, char** argv);

// On SIGINT or SIGTERM, removes the temporary files of the outputs being written (and the lock
// file and the folders a run created), then ends the process by that signal as it would have.
void remove_partial_outputs_on_signals();

// Outputs staged as temporary files until commit().
class StagedFiles {
  public:
    StagedFiles();
    ~StagedFiles();
    StagedFiles(const StagedFiles&) = delete;
    StagedFiles& operator=(const StagedFiles&) = delete;

    // Writes `target`'s content to a temporary file beside it. A symbolic link is followed
    // (renaming over it would replace the link); a target that is not a regular file
    // (/dev/stdout, a FIFO) is written in place now, since renaming over a device node would
    // replace it with a file. Throws, naming the target, when it cannot be written.
    void write(const std::filesystem::path& target, const Fill& fill);
    // commit() also removes `target`: a file an earlier run left that this run does not write.
    void remove_at_commit(const std::filesystem::path& target);
    // Renames every staged file into place (SIGINT and SIGTERM wait until all are).
    void commit();
    // Removes the temporary files of what was not committed.
    void discard();

  private:
    struct Staged;
    std::vector<std::unique_ptr<Staged>> staged_;
    std::vector<std::filesystem::path> removals_;
};

// One file written whole or not at all.
void write_file(const std::filesystem::path& path, const Fill& fill);

// The output folder of one run: created when missing and locked against other runs (a second
// run into it fails naming the pid and command line of the first). Without commit() the folder
// is left as it was: staged files removed, folders this run created removed again.
class OutputFolder {
  public:
    explicit OutputFolder(std::filesystem::path dir);
    ~OutputFolder();  // not copyable: it holds the lock and the staged files

    // `relative` may start with subfolders: they are created now.
    void write(const std::filesystem::path& relative, const Fill& fill);
    void remove_at_commit(const std::filesystem::path& relative);
    void commit();
    const std::filesystem::path& dir() const { return dir_; }

  private:
    class Lock;
    void create_folders(const std::filesystem::path& dir);
    void remove_created_folders();
    void forget_created_folders();
    std::filesystem::path dir_;
    std::vector<std::filesystem::path> created_;  // outermost first
    std::vector<std::size_t> folder_slots_;       // theirs for the signal handler
    std::unique_ptr<Lock> lock_;
    StagedFiles files_;
    bool committed_ = false;
};

}  // namespace replay::cli
