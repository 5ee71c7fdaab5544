/// \file
/// fuzz_replay: every fuzz target's seeds and saved regressions run through the target's own
/// entry point in the ordinary build, without clang or libFuzzer, so an input that once crashed a
/// parser fails the test run if it crashes it again (fuzz/CMakeLists.txt's targets; the ordinary
/// build renames each target's LLVMFuzzerTestOneInput to autopar_fuzz_NAME).
///
///   fuzz_replay NAME PATH...    PATH: an input file, or a directory whose files are inputs
///
/// A target's checks abort on failure (fuzz/fuzz_check.h), which fails the test; otherwise it
/// prints how many inputs it replayed.

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#define AUTOPAR_FUZZ_TARGETS(X) \
  X(graph_json)                 \
  X(iopddl)                     \
  X(iopddl_solution)            \
  X(mindformers_yaml)           \
  X(model_config)               \
  X(plan_json)                  \
  X(cluster_yaml)               \
  X(profile_table)              \
  X(strategy)                   \
  X(onnx)

#define AUTOPAR_DECLARE(name) int autopar_fuzz_##name(const uint8_t* data, size_t size);
extern "C" {
AUTOPAR_FUZZ_TARGETS(AUTOPAR_DECLARE)
}

namespace {

using Target = int (*)(const uint8_t*, size_t);

std::vector<std::filesystem::path> inputsUnder(const std::filesystem::path& path) {
  if (!std::filesystem::is_directory(path)) return {path};
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(path)) {
    if (entry.is_regular_file()) files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace

int main(int argc, char** argv) {
#define AUTOPAR_ENTRY(name) {#name, autopar_fuzz_##name},
  const std::map<std::string, Target> targets{AUTOPAR_FUZZ_TARGETS(AUTOPAR_ENTRY)};
  if (argc < 3 || targets.count(argv[1]) == 0) {
    std::fprintf(stderr, "usage: fuzz_replay NAME PATH... (NAME: a fuzz target)\n");
    return 2;
  }
  const Target target = targets.at(argv[1]);
  int replayed = 0;
  for (int i = 2; i < argc; ++i) {
    if (!std::filesystem::exists(argv[i])) {
      std::fprintf(stderr, "fuzz_replay: %s: no such file or directory\n", argv[i]);
      return 2;
    }
    for (const auto& file : inputsUnder(argv[i])) {
      std::ifstream in(file, std::ios::binary);
      const std::vector<uint8_t> bytes{std::istreambuf_iterator<char>(in), {}};
      target(bytes.data(), bytes.size());
      ++replayed;
    }
  }
  std::printf("fuzz_replay %s: %d inputs replayed\n", argv[1], replayed);
  return replayed > 0 ? 0 : 1;
}
