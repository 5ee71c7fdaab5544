#pragma once
/// \file
/// Output files written atomically: a reader (or a crash) sees the old file or the whole new one,
/// never a half-written one. The text goes to a temporary file beside the target (same directory,
/// so the same file system), is flushed to disk, and is renamed over the target; rename(2) is
/// atomic within a file system (POSIX). A symbolic link is written through to its file, a
/// replaced file keeps its mode, a read-only one is refused, a device or pipe is written in place
/// ("-" is standard output), and no signal but SIGKILL leaves the temporary behind.

#include <string>
#include <string_view>

#include "util/expected.h"

namespace autopar {

/// Writes `text` to `path`. The error names the path and the system's reason, e.g.
///   "out/plan.json: cannot write file (No such file or directory)"
Status writeFileAtomically(const std::string& path, std::string_view text);

}  // namespace autopar
