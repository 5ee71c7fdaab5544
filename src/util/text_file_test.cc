// The bounded reader every input goes through: regular files and pipes, never a directory or a
// device, never more than the byte limit, never a wait without end.

#include "util/text_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "util/limits.h"

namespace autopar {
namespace {

std::filesystem::path scratch(const std::string& name) {
  return std::filesystem::temp_directory_path() /
         (name + "." + std::to_string(::getpid()) + ".autopar-test");
}

TEST(ReadTextFile, ReadsARegularFile) {
  const auto path = scratch("text");
  std::ofstream(path) << "a: 1\n";
  EXPECT_EQ(readTextFile(path.string()).value(), "a: 1\n");
  std::filesystem::remove(path);
}

TEST(ReadTextFile, RefusesDirectoriesDevicesAndFilesOverTheLimit) {
  EXPECT_EQ(readTextFile("/").error().message, "/: is a directory, expected a file");
  EXPECT_EQ(readTextFile("/dev/zero").error().message,
            "/dev/zero: is a device, expected a file or a pipe");
  const auto sparse = scratch("sparse");
  std::ofstream{sparse};
  std::filesystem::resize_file(sparse, limits::kMaxInputFileBytes + 1);  // no blocks written
  auto read = readTextFile(sparse.string());
  ASSERT_FALSE(read);
  EXPECT_NE(read.error().message.find("is above the limit"), std::string::npos);
  std::filesystem::remove(sparse);
  EXPECT_EQ(readTextFile("/no/such/file").error().message,
            "/no/such/file: cannot open file for reading");
}

/// A FIFO nobody writes opens without waiting and is refused as giving no input: no hang.
TEST(ReadTextFile, AFifoWithNoWriterDoesNotWait) {
  const auto fifo = scratch("fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(readTextFile(fifo.string()).error().message,
            fifo.string() + ": no input (a pipe with no writer?)");
  std::filesystem::remove(fifo);
}

}  // namespace
}  // namespace autopar
