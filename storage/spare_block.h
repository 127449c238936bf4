#pragma once
// The next block file, created, preallocated and zero-filled on a helper thread while the
// current block fills, so rolling over to a new block costs a rename instead of a 64 MiB
// write on the append path (that write was the p99.9 spike of file-backed publishing).
#include <cstdint>
#include <string>
#include <thread>

#include "src/base/result.h"

namespace storage {

class spare_block {
 public:
  spare_block() = default;
  ~spare_block();  // waits for the helper and removes an unused spare
  spare_block(const spare_block&) = delete;
  spare_block& operator=(const spare_block&) = delete;

  // Starts preparing `path` (size bytes, zero-filled when `zero`); no-op if already started.
  void start(std::string path, std::uint64_t size, bool zero);
  bool started() const { return _worker.joinable() || _ready; }
  std::uint64_t size() const { return _size; }
  // Waits for the helper, then renames the spare to `dest`. An error leaves no file behind
  // and the caller creates the block itself.
  base::status take(const std::string& dest);
  // Waits and deletes the spare (store close).
  void discard();

  static constexpr const char* kSuffix = ".blk.spare";

 private:
  void join();

  std::thread _worker;
  std::string _path;
  std::uint64_t _size = 0;
  base::status _result;
  bool _ready = false;
};

}  // namespace storage
