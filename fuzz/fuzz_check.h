#pragma once
/// \file
/// What every fuzz target checks besides "no crash, no sanitizer report": a rejected input gets
/// an error that says something, and an accepted one survives its own writer where the format
/// has one. A failed check aborts, which libFuzzer reports as a crash and saves the input.

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "util/expected.h"

namespace autopar::fuzz {

/// The fuzzer's bytes as text.
inline std::string textOf(const uint8_t* data, size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

/// Aborts with `what` (and `detail`, e.g. the second parse's error) unless `condition` holds.
inline void check(bool condition, std::string_view what, std::string_view detail = {}) {
  if (condition) return;
  std::string message = "fuzz check failed: " + std::string(what);
  if (!detail.empty()) message += ": " + std::string(detail);
  std::fprintf(stderr, "%s\n", message.c_str());
  std::abort();
}

/// A rejection must come with a message (the CLI prints it as the one error line).
inline void checkError(const Error& error) {
  check(!error.message.empty(), "an input was rejected with an empty error message");
}

/// Whether `result` (an Expected or a Status) holds a value; a rejection is checked to carry a
/// message. The targets' `if (!accepted(parsed)) return 0;`.
template <typename Result>
bool accepted(const Result& result) {
  if (result) return true;
  checkError(result.error());
  return false;
}

/// Aborts with `what` and the result's error unless `result` (an Expected or a Status) holds a
/// value: for what must succeed once an input is accepted (its writer's output read back).
template <typename Result>
void checkOk(const Result& result, std::string_view what) {
  check(result.ok(), what, result ? std::string_view{} : std::string_view{result.error().message});
}

}  // namespace autopar::fuzz
