#pragma once
// memory_store: the reference stream store. Everything lives in RAM; an append is durable
// the moment it returns (durable_seq == last_seq).
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

 protected:
  base::status persist_msg(std::uint64_t seq, msg_entry& e, std::string_view subject,
                           std::string_view headers, std::string_view payload) override;
  base::result<stored_msg> fetch(std::uint64_t seq, const msg_entry& e) override;
  void persist_remove(std::uint64_t, const msg_entry&, bool) override {}
  void persist_purge(std::uint64_t) override {}
  void persist_skip(std::uint64_t) override {}
  void dropped(std::uint64_t seq, const msg_entry& e) override;

 private:
  std::vector<std::string> _slab;  // headers + payload per live message, by slot
  std::vector<std::uint64_t> _free_slots;
  std::uint64_t _reported = 0;
  durable_fn _on_durable;
  error_fn _on_error;
};

}  // namespace storage
