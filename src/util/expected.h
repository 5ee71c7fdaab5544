#pragma once
/// \file
/// Errors as values. std::expected is C++23; this project is C++20 (GCC 12 on Debian 12), so a
/// minimal Expected<T> is written here. It carries either a value or an Error whose message is
/// one line that names where the problem is, the field, and what was expected, e.g.
///   "model.json: ops[3].inputs[1]: unknown tensor 'w9'".

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace autopar {

/// A user-facing error: one line, no trailing newline.
struct Error {
  std::string message;

  /// Returns the error with `context` prepended, e.g. Error{"shape mismatch"}.in("ffn.json")
  /// reads "ffn.json: shape mismatch".
  [[nodiscard]] Error in(const std::string& context) const {
    if (context.empty()) return *this;
    return Error{context + ": " + message};
  }
};

template <class T>
class [[nodiscard]] Expected {
 public:
  Expected(T value) : state_(std::move(value)) {}      // NOLINT(google-explicit-constructor)
  Expected(Error error) : state_(std::move(error)) {}  // NOLINT(google-explicit-constructor)

  [[nodiscard]] bool ok() const { return state_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & {
    assert(ok());
    return std::get<0>(state_);
  }
  const T& value() const& {
    assert(ok());
    return std::get<0>(state_);
  }
  T&& value() && {
    assert(ok());
    return std::get<0>(std::move(state_));
  }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  [[nodiscard]] const Error& error() const {
    assert(!ok());
    return std::get<1>(state_);
  }

 private:
  std::variant<T, Error> state_;
};

/// Success or an Error, for functions that return nothing.
template <>
class [[nodiscard]] Expected<void> {
 public:
  Expected() = default;
  Expected(Error error) : error_(std::move(error)), failed_(true) {}  // NOLINT

  [[nodiscard]] bool ok() const { return !failed_; }
  explicit operator bool() const { return ok(); }
  [[nodiscard]] const Error& error() const {
    assert(failed_);
    return error_;
  }

 private:
  Error error_;
  bool failed_ = false;
};

using Status = Expected<void>;

}  // namespace autopar
