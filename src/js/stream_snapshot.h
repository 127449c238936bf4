#pragma once
// STREAM.SNAPSHOT and STREAM.RESTORE (stream_snapshot.cc): the chunk sessions that outlive
// the API request. A snapshot sends its archive (snapshot_archive.h) to the client's deliver
// subject in chunks, each with an ack reply `$JS.SNAPSHOT.ACK.<stream>.<id>.<size>.<index>`,
// at most `window_size` bytes unacked, then an empty message (EOF). A restore takes chunks on
// `$JS.SNAPSHOT.RESTORE.<stream>.<id>`, acks each with an empty reply, and builds the stream
// on the empty chunk that ends it.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "src/core/service.h"
#include "src/js/stream_config.h"
#include "src/shard/loop.h"

namespace js {

class jetstream;

// chunk_size and window_size as nats-server clamps them (0 = default), chunks also capped
// at the server's max_payload.
struct snapshot_sizes {
  std::size_t chunk = 0;
  std::size_t window = 0;
};
snapshot_sizes clamp_snapshot_sizes(std::int64_t chunk_size, std::int64_t window_size, std::int64_t max_payload);

// Pure flow control of one snapshot: what may be sent now, given the acks and the clock.
class snapshot_flow {
 public:
  struct chunk_ref {
    std::size_t offset = 0;
    std::size_t len = 0;
    std::uint64_t index = 0;  // 1-based, as in the ack subject
  };
  snapshot_flow(std::size_t total, snapshot_sizes sizes, std::int64_t stall_ns, std::int64_t now)
      : _total(total), _sizes(sizes), _stall_ns(stall_ns), _last_progress(now) {}
  // The next chunk when the window has room (at least one chunk is always allowed).
  std::optional<chunk_ref> next(std::int64_t now);
  void on_ack(std::size_t bytes, std::int64_t now);
  bool done() const { return _offset >= _total; }
  // Window full and no ack for stall_ns: nats-server's "408 No Flow Response".
  bool stalled(std::int64_t now) const { return !done() && now - _last_progress >= _stall_ns; }
  std::int64_t stall_deadline() const { return _last_progress + _stall_ns; }
  std::size_t outstanding() const { return _outstanding; }

 private:
  std::size_t _total;
  snapshot_sizes _sizes;
  std::int64_t _stall_ns;
  std::int64_t _last_progress;
  std::size_t _offset = 0;
  std::size_t _outstanding = 0;
  std::uint64_t _index = 0;
};

class snapshot_sessions final : public core::internal_handler, public shard::poller {
 public:
  explicit snapshot_sessions(jetstream& js) : _js(js) {}
  void add_snapshot(const std::string& stream, std::string deliver, std::string archive, snapshot_sizes sizes);
  // Returns the subject the client sends its chunks to; empty when it cannot subscribe.
  std::string add_restore(const stream_config& cfg);
  bool restoring(std::string_view stream) const;
  void clear();  // server stopping

  void on_msg(const core::inbound_msg& m) override;
  std::size_t poll(base::nanos now) override;
  base::nanos idle_limit(base::nanos now) override;

 private:
  struct snapshot {
    std::string stream, deliver, ack_prefix, archive;
    std::uint64_t sub = 0;
    snapshot_flow flow;
    std::int64_t no_interest_since = 0;
  };
  struct restore {
    stream_config cfg;
    std::uint64_t sub = 0;
    std::string data;
    std::int64_t last_activity = 0;
  };
  std::size_t pump(snapshot& s, std::int64_t now);
  void end_snapshot(std::map<std::string, snapshot>::iterator it, std::string_view status_headers);
  void on_chunk(std::map<std::string, restore>::iterator it, const core::inbound_msg& m);
  std::string new_id();

  jetstream& _js;
  bool _polled = false;  // registered as the hub's poller on first use
  std::map<std::string, snapshot> _snapshots;  // by ack prefix "$JS.SNAPSHOT.ACK.<stream>.<id>."
  std::map<std::string, restore> _restores;    // by restore subject
};

}  // namespace js
