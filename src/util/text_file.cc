#include "util/text_file.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "util/limits.h"

namespace autopar {

Expected<std::string> readTextFile(const std::string& path) {
  std::error_code error;
  const auto status = std::filesystem::status(path, error);
  if (std::filesystem::is_directory(status)) {
    return Error{fmt::format("{}: is a directory, expected a file", path)};
  }
  if (std::filesystem::is_regular_file(status)) {
    const auto size = std::filesystem::file_size(path, error);
    if (!error && size > static_cast<uintmax_t>(limits::kMaxInputFileBytes)) {
      return Error{fmt::format("{}: {} bytes is above the limit {} (docs/limits.md)", path, size,
                               limits::kMaxInputFileBytes)};
    }
  }
  std::ifstream file(path, std::ios::binary);
  if (!file) return Error{fmt::format("{}: cannot open file for reading", path)};
  std::ostringstream text;
  text << file.rdbuf();
  if (file.bad()) return Error{fmt::format("{}: read error", path)};
  return text.str();
}

}  // namespace autopar
