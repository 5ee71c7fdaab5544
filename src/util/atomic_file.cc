#include "util/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace autopar {

namespace {

Error writeError(const std::string& path, int code) {
  return Error{path + ": cannot write file (" + std::strerror(code) + ")"};
}

/// Writes all of `text` to `fd` (write(2) may write less than asked); 0 or the errno.
int writeAll(int fd, std::string_view text) {
  while (!text.empty()) {
    const ssize_t written = ::write(fd, text.data(), text.size());
    if (written < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    text.remove_prefix(static_cast<size_t>(written));
  }
  return 0;
}

/// Writes `text` into an existing file that is not a regular one (a device such as /dev/stdout or
/// /dev/full, a pipe): renaming a temporary over it would replace the device itself. Such a file
/// has nothing to flush to disk.
Status writeInPlace(const std::string& path, std::string_view text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_TRUNC);
  if (fd < 0) return writeError(path, errno);
  int code = writeAll(fd, text);
  if (::close(fd) != 0 && code == 0) code = errno;
  return code == 0 ? Status{} : writeError(path, code);
}

}  // namespace

Status writeFileAtomically(const std::string& path, std::string_view text) {
  struct stat existing {};
  if (::stat(path.c_str(), &existing) == 0) {
    if (S_ISDIR(existing.st_mode)) return writeError(path, EISDIR);
    if (!S_ISREG(existing.st_mode)) return writeInPlace(path, text);
  }
  std::string temporary = path + ".XXXXXX";
  const int fd = ::mkstemp(temporary.data());
  if (fd < 0) return writeError(path, errno);
  // mkstemp creates the file 0600; an output file is as readable as any other the user writes.
  const mode_t mask = ::umask(0);
  ::umask(mask);
  ::fchmod(fd, 0666 & ~mask);
  int code = writeAll(fd, text);
  // Flushed to disk before the rename, so a crash leaves the old file or the whole new one.
  if (code == 0 && ::fsync(fd) != 0) code = errno;
  if (::close(fd) != 0 && code == 0) code = errno;
  if (code == 0 && std::rename(temporary.c_str(), path.c_str()) != 0) code = errno;
  if (code == 0) return {};
  ::unlink(temporary.c_str());
  return writeError(path, code);
}

}  // namespace autopar
