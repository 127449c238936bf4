#pragma once
// memory_store: the reference stream store. Everything lives in RAM; an append is durable
// the moment it returns (durable_seq == last_seq).
//
// Message bytes are packed into chunks (a record: sequence, length, headers + payload) rather
// than one heap string per message: an append is a copy, not an allocation, and a million
// small messages do not cost a million mallocs. Chunks double from 512 B to 256 KiB, so a small
// stream stays small. A chunk is freed when its last message goes; one left mostly dead
// (under a quarter live) has its live records moved to the current chunk, so memory stays
// within about 4x what is live.
#include <memory>

#include "storage/index.h"

namespace storage {

class memory_store final : public indexed_store {
 public:
  explicit memory_store(byte_accounting acct = byte_accounting::memory) : indexed_store(acct) {}

  int poll() override;
  std::uint64_t durable_seq() const override { return last_seq(); }
  std::uint64_t backlog_bytes() const override { return 0; }
  void on_durable(durable_fn fn) override { _on_durable = std::move(fn); }
  void on_error(error_fn fn) override { _on_error = std::move(fn); }
  base::status flush() override {
    poll();
    return {};
  }
  base::status close() override { return {}; }
  base::status reset() override;
  std::unique_ptr<stream_store> clone() const override;

  // Bytes held in chunks (live, dead and unused), for tests and monitoring.
  std::uint64_t chunk_bytes() const { return _chunk_bytes; }

 protected:
  base::status persist_msg(std::uint64_t seq, msg_entry& e, std::string_view subject,
                           std::string_view headers, std::string_view payload) override;
  base::result<stored_msg> fetch(std::uint64_t seq, const msg_entry& e) override;
  void persist_remove(std::uint64_t, const msg_entry&, bool) override {}
  void persist_purge(std::uint64_t) override {}
  void persist_skip(std::uint64_t) override {}
  void dropped(std::uint64_t seq, const msg_entry& e) override;

 private:
  memory_store(const memory_store& other);  // clone(): chunks copied, callbacks not

  struct chunk {
    std::unique_ptr<char[]> bytes;
    std::uint32_t cap = 0;
    std::uint32_t used = 0;
    std::uint32_t live = 0;  // bytes of live records
  };
  static constexpr std::uint32_t kRecHeader = 12;  // u64 sequence, u32 length
  static constexpr std::uint32_t kFirstChunk = 512;
  static constexpr std::uint32_t kMaxChunk = 256 << 10;

  // Room for a record of `rec` bytes: the chunk id and offset to write it at.
  std::pair<std::uint32_t, std::uint32_t> reserve(std::uint32_t rec);
  std::uint64_t put(std::uint64_t seq, std::string_view a, std::string_view b);
  const char* bytes_at(std::uint64_t loc) const;
  void release(std::uint32_t id);
  void compact(std::uint32_t id, std::uint64_t dropping);

  std::vector<chunk> _chunks;  // by id; a released one has no bytes
  std::vector<std::uint32_t> _free_ids;
  std::uint32_t _cur = 0xffffffffu;  // the chunk being filled
  std::uint32_t _next_cap = kFirstChunk;
  std::uint64_t _chunk_bytes = 0;
  std::uint64_t _reported = 0;
  durable_fn _on_durable;
  error_fn _on_error;
};

}  // namespace storage
