#pragma once
// ASSERT is always on: a broken invariant stops the process with file:line instead of
// corrupting a stream. DASSERT is for hot-path checks compiled out of release builds.
#include <cstdio>
#include <cstdlib>

#define PG_ASSERT(cond)                                                         \
  do {                                                                          \
    if (__builtin_expect(!(cond), 0)) {                                         \
      std::fprintf(stderr, "assertion failed: %s at %s:%d\n", #cond, __FILE__, \
                   __LINE__);                                                   \
      std::abort();                                                             \
    }                                                                           \
  } while (0)

#ifdef NDEBUG
#define PG_DASSERT(cond) ((void)0)
#else
#define PG_DASSERT(cond) PG_ASSERT(cond)
#endif
