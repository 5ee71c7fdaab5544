#pragma once
/// \file
/// A fresh directory under /tmp (mkdtemp), removed with everything in it when the object goes, on
/// every return path.

#include <stdlib.h>

#include <filesystem>
#include <optional>
#include <string>
#include <system_error>

namespace autopar::util {

class TemporaryDirectory {
 public:
  /// `/tmp/PREFIX-XXXXXX`; empty() when it cannot be created.
  explicit TemporaryDirectory(const std::string& prefix) {
    std::string pattern = "/tmp/" + prefix + "-XXXXXX";
    if (mkdtemp(pattern.data()) != nullptr) path_ = pattern;
  }
  ~TemporaryDirectory() {
    std::error_code ignored;
    if (path_) std::filesystem::remove_all(*path_, ignored);
  }
  TemporaryDirectory(const TemporaryDirectory&) = delete;
  TemporaryDirectory& operator=(const TemporaryDirectory&) = delete;

  [[nodiscard]] bool empty() const { return !path_; }
  [[nodiscard]] const std::string& path() const { return *path_; }

 private:
  std::optional<std::string> path_;
};

}  // namespace autopar::util
