#include "util/text_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "util/limits.h"

namespace autopar {

namespace {

/// Closes a descriptor when it goes out of scope.
struct Descriptor {
  int fd = -1;
  ~Descriptor() {
    if (fd >= 0) ::close(fd);
  }
};

std::string tooLarge(const std::string& path) {
  return fmt::format("{}: more than {} bytes, the limit (docs/limits.md)", path,
                     limits::kMaxInputFileBytes);
}

/// Reads `fd` to its end, at most limits::kMaxInputFileBytes, waiting for a pipe's writer at
/// most limits::kMaxInputReadSeconds in all.
Expected<std::string> readAll(int fd, const std::string& path) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::seconds(limits::kMaxInputReadSeconds);
  std::string text;
  char chunk[1 << 16];
  while (true) {
    const ssize_t got = ::read(fd, chunk, sizeof chunk);
    if (got > 0) {
      if (static_cast<int64_t>(text.size()) + got > limits::kMaxInputFileBytes) {
        return Error{tooLarge(path)};
      }
      text.append(chunk, static_cast<size_t>(got));
      continue;
    }
    if (got == 0) return text;
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) {
      return Error{fmt::format("{}: read error: {}", path, std::strerror(errno))};
    }
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    pollfd waiting{fd, POLLIN, 0};
    if (left <= 0 || ::poll(&waiting, 1, static_cast<int>(left)) == 0) {
      return Error{fmt::format("{}: no end of input within {} s (a pipe with no writer?)", path,
                               limits::kMaxInputReadSeconds)};
    }
  }
}

}  // namespace

// POSIX open and fstat rather than std::ifstream: the file's kind is read from the descriptor
// that is read (no race with a rename), a FIFO opens without waiting for a writer (O_NONBLOCK),
// and a pipe's read can be bounded in time and bytes, which a stream buffer cannot.
Expected<std::string> readTextFile(const std::string& path) {
  Descriptor file{::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC)};
  if (file.fd < 0) {
    if (errno == ELOOP) return Error{fmt::format("{}: a loop of symbolic links", path)};
    return Error{fmt::format("{}: cannot open file for reading", path)};
  }
  struct stat status {};
  if (::fstat(file.fd, &status) != 0) return Error{fmt::format("{}: cannot stat file", path)};
  if (S_ISDIR(status.st_mode)) {
    return Error{fmt::format("{}: is a directory, expected a file", path)};
  }
  if (S_ISCHR(status.st_mode) || S_ISBLK(status.st_mode)) {
    return Error{fmt::format("{}: is a device, expected a file or a pipe", path)};
  }
  if (S_ISREG(status.st_mode)) {
    if (status.st_size > limits::kMaxInputFileBytes) {
      return Error{fmt::format("{}: {} bytes is above the limit {} (docs/limits.md)", path,
                               status.st_size, limits::kMaxInputFileBytes)};
    }
  }
  auto text = readAll(file.fd, path);
  // A FIFO read before any writer opened it ends at once: say so rather than parse nothing.
  if (text && text->empty() && S_ISFIFO(status.st_mode)) {
    return Error{fmt::format("{}: no input (a pipe with no writer?)", path)};
  }
  return text;
}

}  // namespace autopar
