#include "util/atomic_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace autopar {
namespace {

namespace fs = std::filesystem;

std::string readAll(const fs::path& path) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

class AtomicFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("autopar_atomic_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  /// The directory's entries: a failed or finished write leaves no temporary file behind.
  [[nodiscard]] size_t entries() const {
    return static_cast<size_t>(std::distance(fs::directory_iterator(dir_), {}));
  }
  fs::path dir_;
};

TEST_F(AtomicFileTest, WritesAndReplacesWholeFiles) {
  const fs::path path = dir_ / "plan.json";
  ASSERT_TRUE(writeFileAtomically(path.string(), "first version, longer than the second\n"));
  EXPECT_EQ(readAll(path), "first version, longer than the second\n");
  ASSERT_TRUE(writeFileAtomically(path.string(), "second\n"));
  EXPECT_EQ(readAll(path), "second\n");
  EXPECT_EQ(entries(), 1u);
}

TEST_F(AtomicFileTest, GivesTheUsualPermissions) {
  const fs::path path = dir_ / "out.json";
  ASSERT_TRUE(writeFileAtomically(path.string(), "{}"));
  struct stat info {};
  ASSERT_EQ(::stat(path.c_str(), &info), 0);
  const mode_t mask = ::umask(0);
  ::umask(mask);
  EXPECT_EQ(info.st_mode & 0777, 0666 & ~mask);
}

TEST_F(AtomicFileTest, NamesThePathWhenTheDirectoryIsMissing) {
  const std::string path = (dir_ / "no-such-dir" / "plan.json").string();
  const Status status = writeFileAtomically(path, "{}");
  ASSERT_FALSE(status);
  EXPECT_EQ(status.error().message, path + ": cannot write file (No such file or directory)");
}

TEST_F(AtomicFileTest, LeavesNothingBehindWhenTheTargetIsADirectory) {
  fs::create_directory(dir_ / "taken");
  const Status status = writeFileAtomically((dir_ / "taken").string(), "{}");
  ASSERT_FALSE(status);
  EXPECT_NE(status.error().message.find("taken: cannot write file"), std::string::npos);
  EXPECT_EQ(entries(), 1u);
  EXPECT_TRUE(fs::is_directory(dir_ / "taken"));
}

/// A device is written in place, never replaced by a renamed temporary (as root, /dev/full would
/// become a regular file): /dev/full's write error is reported, /dev/null takes the text.
TEST_F(AtomicFileTest, WritesDevicesInPlaceAndReportsTheirErrors) {
  const Status full = writeFileAtomically("/dev/full", "{}");
  ASSERT_FALSE(full);
  EXPECT_EQ(full.error().message, "/dev/full: cannot write file (No space left on device)");
  EXPECT_TRUE(fs::is_character_file("/dev/full"));
  EXPECT_TRUE(writeFileAtomically("/dev/null", "{}"));
  EXPECT_TRUE(fs::is_character_file("/dev/null"));
}

}  // namespace
}  // namespace autopar
