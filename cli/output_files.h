// Output files of the commands: written whole or not at all.
#pragma once

#include <filesystem>
#include <functional>
#include <ostream>

namespace replay::cli {

// Writes to a temporary file beside the target and renames it on success, so that a failure
// never leaves a partial output file behind. A symbolic link is followed (renaming over it would
// replace the link); a target that is not a regular file (/dev/stdout, a FIFO) is written in
// place, since renaming over a device node would replace it with a file.
void write_file(const std::filesystem::path& path, const std::function<void(std::ostream&)>& fill);

// Creates an output folder, with one line naming it when that is not possible.
void make_output_dir(const std::filesystem::path& dir);

}  // namespace replay::cli
