#include "storage/memory_store.h"

namespace storage {

int memory_store::poll() {
  if (_reported == last_seq()) return 0;
  _reported = last_seq();
  if (_on_durable) _on_durable(_reported);
  return 1;
}

base::status memory_store::persist_msg(std::uint64_t, msg_entry& e, std::string_view,
                                       std::string_view headers, std::string_view payload) {
  std::uint64_t slot;
  if (!_free_slots.empty()) {
    slot = _free_slots.back();
    _free_slots.pop_back();
  } else {
    slot = _slab.size();
    _slab.emplace_back();
  }
  std::string& b = _slab[slot];
  b.reserve(headers.size() + payload.size());
  b.assign(headers);
  b.append(payload);
  e.loc = slot;
  return {};
}

base::result<stored_msg> memory_store::fetch(std::uint64_t seq, const msg_entry& e) {
  stored_msg m;
  m.seq = seq;
  m.ts = e.ts;
  m.ttl = e.ttl;
  m.subject = subject_name(e.subj);
  const std::string& b = _slab[e.loc];
  m.headers.assign(b, 0, e.hdr_len);
  m.payload.assign(b, e.hdr_len, e.payload_len);
  return m;
}

void memory_store::dropped(std::uint64_t, const msg_entry& e) {
  std::string().swap(_slab[e.loc]);
  _free_slots.push_back(e.loc);
}

}  // namespace storage
