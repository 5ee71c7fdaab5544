#include "util/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "util/held_signals.h"

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
/// has nothing to flush to disk. A FIFO is opened without blocking, so one nobody reads is an
/// error, not a hang.
Status writeInPlace(const std::string& path, std::string_view text, bool fifo) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_TRUNC | (fifo ? O_NONBLOCK : 0));
  if (fd < 0) {
    if (errno == ENXIO) return Error{path + ": cannot write file (a pipe nobody reads)"};
    return writeError(path, errno);
  }
  if (fifo) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  int code = writeAll(fd, text);
  if (::close(fd) != 0 && code == 0) code = errno;
  return code == 0 ? Status{} : writeError(path, code);
}

/// The file a write to `path` lands in: `path` itself, or the file a symbolic link names (the
/// link stays a link). A link to nothing is refused rather than guessed at.
Expected<std::string> targetOf(const std::string& path) {
  struct stat link {};
  if (::lstat(path.c_str(), &link) != 0 || !S_ISLNK(link.st_mode)) return path;
  std::unique_ptr<char, decltype(&std::free)> resolved(::realpath(path.c_str(), nullptr),
                                                       &std::free);
  if (!resolved) {
    return Error{path + ": cannot write file (a symbolic link to a missing file: " +
                 std::strerror(errno) + ")"};
  }
  return std::string(resolved.get());
}

/// Writes `text` to a temporary file beside `path` with `mode`, flushes it to disk and renames
/// it over `path`: a reader (or a crash) sees the old file or the whole new one.
Status replaceAtomically(const std::string& path, std::string_view text, mode_t mode) {
  // The signals that end a planning process from outside wait until the temporary file is
  // renamed or removed, so no signal but SIGKILL leaves a `*.XXXXXX` file behind.
  const HeldSignals held({SIGINT, SIGTERM, SIGHUP, SIGQUIT}, HeldSignals::OnRelease::kDeliver);
  std::string temporary = path + ".XXXXXX";
  const int fd = ::mkstemp(temporary.data());
  if (fd < 0) return writeError(path, errno);
  ::fchmod(fd, mode);
  int code = writeAll(fd, text);
  if (code == 0 && ::fsync(fd) != 0) code = errno;
  if (::close(fd) != 0 && code == 0) code = errno;
  if (code == 0 && std::rename(temporary.c_str(), path.c_str()) != 0) code = errno;
  if (code == 0) return {};
  ::unlink(temporary.c_str());
  return writeError(path, code);
}

/// The standard stream (1 or 2) that `file` is already open as, as when `--out /dev/stdout` names
/// the file the shell redirected standard output to; -1 when none. Writing there keeps the
/// stream's order and offset, where replacing the file would send the rest of the output to the
/// replaced copy.
int standardStreamOf(const struct stat& file) {
  for (const int fd : {STDOUT_FILENO, STDERR_FILENO}) {
    struct stat stream {};
    if (::fstat(fd, &stream) == 0 && stream.st_dev == file.st_dev && stream.st_ino == file.st_ino) {
      return fd;
    }
  }
  return -1;
}

Status writeStream(int fd, const std::string& name, std::string_view text) {
  const int code = writeAll(fd, text);
  return code == 0 ? Status{} : writeError(name, code);
}

}  // namespace

Status writeFileAtomically(const std::string& given, std::string_view text) {
  if (given == "-") return writeStream(STDOUT_FILENO, "standard output", text);
  auto path = targetOf(given);
  if (!path) return path.error();
  // mkstemp creates the file 0600; a new output file is as readable as any other the user
  // writes, and a replaced one keeps its own mode.
  const mode_t mask = ::umask(0);
  ::umask(mask);
  mode_t mode = 0666 & ~mask;
  struct stat existing {};
  if (::stat(path->c_str(), &existing) == 0) {
    if (S_ISDIR(existing.st_mode)) return writeError(given, EISDIR);
    if (!S_ISREG(existing.st_mode)) return writeInPlace(*path, text, S_ISFIFO(existing.st_mode));
    if (const int fd = standardStreamOf(existing); fd >= 0) return writeStream(fd, given, text);
    // Rename would replace a file its owner made read-only (root's writes pass access(2)).
    if ((existing.st_mode & 0222) == 0 || ::access(path->c_str(), W_OK) != 0) {
      return Error{given + ": cannot write file (it is read-only)"};
    }
    mode = existing.st_mode & 07777;
  }
  if (auto written = replaceAtomically(*path, text, mode); !written) {
    return *path == given ? written : Error{given + " -> " + written.error().message};
  }
  return {};
}

}  // namespace autopar
