// libFuzzer target for the report reader (replay::read_report_json, engine/report.h): any bytes
// give a Report or an InputError that names the file; anything else (another exception, a crash,
// a sanitizer report) is a finding. The reader takes a path, so each input goes through a file.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "replay/input_error.h"
#include "replay/report.h"
#include "replay/report_json.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static const std::string path = (std::filesystem::temp_directory_path() /
                                     ("fuzz_report_reader." + std::to_string(::getpid()) + ".json"))
                                        .string();
    std::ofstream(path, std::ios::binary | std::ios::trunc)
        .write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
    try {
        const replay::Report report = replay::read_report_json(path);
        (void)report;
    } catch (const replay::InputError& e) {
        if (e.file() != path) {
            std::fprintf(stderr, "fuzz_report_reader: the error names %s\n", e.file().c_str());
            std::abort();
        }
    }
    return 0;
}
