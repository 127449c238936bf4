#include "src/base/fd_limit.h"

#include <sys/resource.h>

#include <cerrno>

namespace base {

fd_limit raise_fd_limit() {
  fd_limit r;
  rlimit rl{};
  if (::getrlimit(RLIMIT_NOFILE, &rl) != 0) {
    r.error = errno;
    return r;
  }
  r.before = r.now = rl.rlim_cur;
  r.hard = rl.rlim_max;
  if (rl.rlim_cur >= rl.rlim_max) return r;
  rl.rlim_cur = rl.rlim_max;
  if (::setrlimit(RLIMIT_NOFILE, &rl) != 0) {
    r.error = errno;
    return r;
  }
  r.now = rl.rlim_cur;
  return r;
}

}  // namespace base
