// cli/early_exit.cpp: a command run in a child process, its status returned as soon as the child
// has written its outputs.
#include <gtest/gtest.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "early_exit.h"
#include "test_support.h"

namespace {

using replay::cli::run_with_early_exit;

class EarlyExit : public ::testing::Test {
  protected:
    void SetUp() override { ::unsetenv("REPLAY_NO_FORK"); }
    void TearDown() override { ::unsetenv("REPLAY_NO_FORK"); }
};

TEST_F(EarlyExit, TheWorksStatusAndOutputsComeBack) {
    const auto out = std::filesystem::temp_directory_path() /
                     ("replay_early_exit_" + std::to_string(::getpid()) + ".txt");
    for (const int status : {0, 1, 2, 7}) {
        std::filesystem::remove(out);
        EXPECT_EQ(run_with_early_exit([&] {
                      std::ofstream(out) << "written by " << ::getpid();
                      return status;
                  }),
                  status);
        std::string text;
        std::getline(std::ifstream(out), text);
        // Written by the child, not by this process.
        EXPECT_EQ(text.rfind("written by ", 0), 0u) << text;
        EXPECT_NE(text, "written by " + std::to_string(::getpid()));
    }
    std::filesystem::remove(out);
}

TEST_F(EarlyExit, NoForkRunsTheWorkHere) {
    ::setenv("REPLAY_NO_FORK", "1", 1);
    int ran_here = 0;
    EXPECT_EQ(run_with_early_exit([&] {
                  ran_here = 1;
                  return 3;
              }),
              3);
    EXPECT_EQ(ran_here, 1);
    // Forked, the child's writes stay in the child.
    ::unsetenv("REPLAY_NO_FORK");
    int ran_in_child = 0;
    EXPECT_EQ(run_with_early_exit([&] {
                  ran_in_child = 1;
                  return 0;
              }),
              0);
    EXPECT_EQ(ran_in_child, 0);
}

// A child that dies before it is done (a crash) makes the parent die the same way, as the
// command would have without the child.
TEST_F(EarlyExit, AChildKilledBeforeItIsDoneKillsTheParentTheSameWay) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_EXIT(run_with_early_exit([] {
                    std::raise(SIGSEGV);
                    return 0;
                }),
                ::testing::KilledBySignal(SIGSEGV), "");
    EXPECT_EXIT(std::exit(run_with_early_exit([] { return 5; })), ::testing::ExitedWithCode(5), "");
}

}  // namespace
