#include "src/base/errc.h"

namespace base {

std::string_view errc_name(errc e) noexcept {
  switch (e) {
    case errc::ok: return "ok";
    case errc::invalid_argument: return "invalid argument";
    case errc::out_of_range: return "out of range";
    case errc::not_found: return "not found";
    case errc::already_exists: return "already exists";
    case errc::would_block: return "would block";
    case errc::closed: return "closed";
    case errc::io_error: return "i/o error";
    case errc::no_space: return "no space left on device";
    case errc::short_write: return "short write";
    case errc::corrupt: return "corrupt data";
    case errc::unsupported: return "unsupported";
    case errc::timed_out: return "timed out";
    case errc::limit_exceeded: return "limit exceeded";
    case errc::internal: return "internal error";
  }
  return "unknown";
}

}  // namespace base
