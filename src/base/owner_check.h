#pragma once
// One owner thread per object: debug builds (and the sanitizer build) record the thread
// that owns an object and check that its entry points run there; release builds compile
// the check out. An object not claimed yet (constructed, not started) passes.
#include <thread>

#include "src/base/assert.h"

namespace base {

class thread_owner {
 public:
#ifdef NDEBUG
  void claim() {}
  bool held() const { return true; }
#else
  // The calling thread owns the object from now on.
  void claim() { _id = std::this_thread::get_id(); }
  bool held() const { return _id == std::thread::id() || _id == std::this_thread::get_id(); }

 private:
  std::thread::id _id;
#endif
};

}  // namespace base

// At an owned object's entry point: the caller must be its owner thread (debug builds).
#define PG_ASSERT_OWNER(owner) PG_DASSERT((owner).held())
