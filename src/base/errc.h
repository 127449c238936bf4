#pragma once
// The base-layer error enum. Protocol codes (-ERR texts, JetStream err_code) are mapped
// only at the protocol edge; everything below speaks errc.
#include <cstdint>
#include <string_view>

namespace base {

enum class errc : std::uint16_t {
  ok = 0,
  invalid_argument,
  out_of_range,
  not_found,
  already_exists,
  would_block,
  closed,
  io_error,
  no_space,
  short_write,
  corrupt,
  unsupported,
  timed_out,
  limit_exceeded,
  internal,
};

std::string_view errc_name(errc e) noexcept;

}  // namespace base
