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

TEST_F(AtomicFileTest, WritesThroughASymbolicLinkAndKeepsTheLink) {
  const fs::path target = dir_ / "plan.json";
  const fs::path link = dir_ / "latest.json";
  ASSERT_TRUE(writeFileAtomically(target.string(), "old\n"));
  fs::create_symlink(target.filename(), link);
  ASSERT_TRUE(writeFileAtomically(link.string(), "new\n"));
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(readAll(target), "new\n");
  EXPECT_EQ(entries(), 2u);
}

TEST_F(AtomicFileTest, RefusesALinkToNothing) {
  const fs::path link = dir_ / "dangling.json";
  fs::create_symlink(dir_ / "missing" / "plan.json", link);
  const Status status = writeFileAtomically(link.string(), "{}");
  ASSERT_FALSE(status);
  EXPECT_EQ(status.error().message,
            link.string() +
                ": cannot write file (a symbolic link to a missing file: No such file or "
                "directory)");
  EXPECT_TRUE(fs::is_symlink(link));
}

TEST_F(AtomicFileTest, KeepsAReplacedFilesModeAndRefusesAReadOnlyOne) {
  const fs::path path = dir_ / "secret.json";
  ASSERT_TRUE(writeFileAtomically(path.string(), "{}"));
  fs::permissions(path, fs::perms::owner_read | fs::perms::owner_write);
  ASSERT_TRUE(writeFileAtomically(path.string(), "{\"v\": 2}"));
  EXPECT_EQ(fs::status(path).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write);
  fs::permissions(path, fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
  const Status status = writeFileAtomically(path.string(), "{}");
  ASSERT_FALSE(status);
  EXPECT_EQ(status.error().message, path.string() + ": cannot write file (it is read-only)");
  EXPECT_EQ(readAll(path), "{\"v\": 2}");
  EXPECT_EQ(entries(), 1u);
}

TEST_F(AtomicFileTest, APipeNobodyReadsIsAnErrorNotAHang) {
  const fs::path fifo = dir_ / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const Status status = writeFileAtomically(fifo.string(), "{}");
  ASSERT_FALSE(status);
  EXPECT_EQ(status.error().message, fifo.string() + ": cannot write file (a pipe nobody reads)");
  EXPECT_TRUE(fs::is_fifo(fifo));
}

}  // namespace
}  // namespace autopar
