#pragma once
// result<T>: a value or an errc (plus an optional errno for I/O), never an exception on
// the data path.
#include <utility>
#include <variant>

#include "src/base/errc.h"

namespace base {

struct error {
  errc code = errc::internal;
  int sys_errno = 0;  // the errno behind an I/O error, 0 otherwise
};

template <typename T>
class result {
 public:
  result(T v) : _v(std::move(v)) {}                   // NOLINT(implicit)
  result(error e) : _v(e) {}                          // NOLINT(implicit)
  result(errc c) : _v(error{c, 0}) {}                 // NOLINT(implicit)
  bool ok() const noexcept { return _v.index() == 0; }
  explicit operator bool() const noexcept { return ok(); }
  T& value() & { return std::get<0>(_v); }
  const T& value() const& { return std::get<0>(_v); }
  T&& value() && { return std::get<0>(std::move(_v)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  error err() const { return ok() ? error{errc::ok, 0} : std::get<1>(_v); }
  errc code() const { return ok() ? errc::ok : std::get<1>(_v).code; }

 private:
  std::variant<T, error> _v;
};

template <>
class result<void> {
 public:
  result() = default;
  result(error e) : _e(e) {}            // NOLINT(implicit)
  result(errc c) : _e(error{c, 0}) {}   // NOLINT(implicit)
  bool ok() const noexcept { return _e.code == errc::ok; }
  explicit operator bool() const noexcept { return ok(); }
  error err() const { return _e; }
  errc code() const { return _e.code; }

 private:
  error _e{errc::ok, 0};
};

using status = result<void>;

}  // namespace base
