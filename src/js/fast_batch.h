#pragma once
// Fast-ingest batch publishing: the control data rides in each message's
// reply subject `<prefix>.<id>.<flow>.<gap>.<seq>.<op>.$FI`. Messages are stored one by one
// like plain publishes; this table tracks each batch's sequence, gaps, the flow acks sent
// once messages are durable (the doubling/halving rule) and the final PubAck. Pure: the
// stream feeds it messages, store results, its durable sequence and `now`, and sends what it
// returns; nothing here touches the store or the network.
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "src/js/api_errors.h"

namespace js {

enum class fi_op : std::uint8_t { start = 0, append = 1, commit = 2, commit_eob = 3, ping = 4 };

struct fi_reply {
  std::string_view id;
  std::uint16_t flow = 10;  // requested ack frequency, clamped to 1..65535
  bool gap_fail = true;
  std::uint64_t seq = 0;
  fi_op op = fi_op::start;
};

// True when the reply subject asks for the fast-ingest path (ends in ".$FI").
bool is_fast_batch_reply(std::string_view reply);
// Parses the grammar from the right; an error is 10206 (pattern) or 10207 (id too long).
struct fi_parse {
  std::optional<fi_reply> reply;
  std::optional<api_error> error;
};
fi_parse parse_fast_batch_reply(std::string_view reply);

// A stream's checks of a fast-ingest message before its batch table sees it (the standalone
// stream and a replicated stream's leader; each checks `sealed` and its storage first):
// max_msg_size (10054), allow_batched (10205), the reply's grammar, and
// Nats-Required-Api-Level: one above `api_level` is 10185 and the batch is to be dropped, one
// met is removed from the headers to store (`headers`, set only then).
struct fi_admission {
  std::optional<fi_reply> reply;       // the parsed reply (views into the reply subject)
  std::optional<api_error> error;      // refused; with drop_batch, the batch reply->id goes too
  bool drop_batch = false;
  std::optional<std::string> headers;  // the headers without Nats-Required-Api-Level
};
fi_admission admit_fast_batch_msg(std::string_view reply, std::string_view headers, std::size_t payload_size,
                                  std::int64_t max_msg_size, bool allow_batched, int api_level);

struct fast_batch_limits {
  std::size_t max_per_stream = 1000;
  std::size_t max_per_server = 50000;
  std::int64_t timeout_ns = 10'000'000'000;  // inactivity before a batch is forgotten
  std::uint32_t max_flow = 500;             // server-side ceiling of the ack frequency
};

// A message for the batch's reply subject.
struct fi_send {
  std::string subject;
  std::string body;
};

class fast_batch_table {
 public:
  struct batch;
  // `server_open` counts open fast batches across every stream (the 50,000 limit); the
  // tables share it. Null = this table alone.
  fast_batch_table(std::string stream, std::string domain, fast_batch_limits l = {},
                   std::size_t* server_open = nullptr);
  ~fast_batch_table() { clear(); }
  fast_batch_table(const fast_batch_table&) = delete;
  fast_batch_table& operator=(const fast_batch_table&) = delete;

  struct decision {
    enum kind { ignore, store, done } what = ignore;
    batch* b = nullptr;  // store: report the result with stored/duplicate/failed
  };
  // One message whose reply parsed as `r`. Replies to send are appended to `out`.
  decision on_msg(const fi_reply& r, std::string_view reply, std::int64_t now, std::uint64_t durable,
                  std::vector<fi_send>& out);
  // The message on_msg said to store: appended as stream sequence `sseq`, a duplicate of
  // `orig_seq`, or refused by a per-message check. `durable` = the store's durable sequence.
  void stored(batch* b, std::uint64_t sseq, std::uint64_t durable, std::vector<fi_send>& out);
  void duplicate(batch* b, std::uint64_t orig_seq, std::uint64_t durable, std::vector<fi_send>& out);
  void failed(batch* b, const api_error& e, std::uint64_t durable, std::vector<fi_send>& out);
  // The store is durable up to `durable`: flow acks and final PubAcks that were waiting.
  void on_durable(std::uint64_t durable, std::vector<fi_send>& out);
  // Batches idle past the timeout (ending ones still waiting for the store included) are
  // forgotten silently; returns how many.
  std::size_t expire(std::int64_t now);
  void clear();
  bool empty() const { return _open.empty(); }
  std::size_t size() const { return live(); }
  // A batch refused as a whole (10185): forgotten without a PubAck.
  void drop(std::string_view id);
  // The open batch `id` (null when it ended or was forgotten): where a store result goes
  // when the message could not be stored at once (a replicated stream's full hand-over queue).
  batch* find(std::string_view id);

  struct batch {
    std::string id;
    std::string reply;            // the latest reply subject: where acks go
    std::uint16_t client_flow = 0;
    bool gap_fail = true;
    std::uint64_t next_seq = 1;   // the batch sequence expected next
    std::uint64_t current = 0;    // batch seq of the message being stored
    bool current_commits = false; // ... and whether it ends the batch
    std::uint32_t msgs = 1;       // current ack frequency
    std::uint64_t last_ack = 0;   // batch seq of the last flow ack
    std::uint64_t persisted = 0;  // highest durable batch seq
    std::uint64_t last_sseq = 0;  // stream seq of the last stored message
    bool ending = false;          // no more messages; PubAck once pending drains
    std::uint64_t count = 0;      // the PubAck's count
    std::int64_t last_activity = 0;
    bool dead = false;            // erased at the end of the current call
    // (batch seq, stream seq) handled but not yet durable; stream seq 0 = nothing stored.
    std::deque<std::pair<std::uint64_t, std::uint64_t>> pending;
  };

 private:
  void end(batch& b, std::uint64_t count, std::uint64_t durable, std::vector<fi_send>& out);
  void advance(batch& b, std::uint64_t durable, std::vector<fi_send>& out);
  void finish_if_drained(batch& b, std::vector<fi_send>& out);
  void erase(batch& b);
  void sweep();
  std::string flow_ack(const batch& b) const;
  std::string pub_ack(const batch& b) const;
  std::string error_ack(const api_error& e) const;

  std::string _stream;
  std::string _domain;
  fast_batch_limits _limits;
  std::size_t _own_count = 0;
  std::size_t* _server_open;
  struct id_hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, batch, id_hash, std::equal_to<>> _open;
  std::size_t _dead = 0;
  std::size_t live() const { return _open.size() - _dead; }
};

}  // namespace js
