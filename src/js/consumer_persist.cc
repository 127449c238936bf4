// consumer_agent: persisting durable state, and the ack sync replies that wait for it.
//
// Plain state changes are snapshotted at most every kFlushInterval. An ack with a reply
// subject makes the next snapshot go out at once, and its reply is sent only when that
// snapshot (or a later one) is written at the server's durability point: `write` = written
// and renamed into place (survives a crash of the process), `sync` = also fdatasync'd. Acks
// arriving while a snapshot is written wait for the next one, so a burst costs one write.
#include <cstring>

#include "src/base/log.h"
#include "src/js/consumer_agent.h"
#include "src/js/stream.h"

namespace js {

namespace {
constexpr std::int64_t kFlushInterval = 50 * base::kMilli;
constexpr std::int64_t kFlushRetry = 1 * base::kMilli;
constexpr std::int64_t kSyncInterval = 1 * base::kSecond;
}  // namespace

storage::consumer_state consumer_agent::durable_state() const {
  if (off_thread()) {
    storage::consumer_state st;
    _exec->run_sync([&] { st = durable_state(); });
    return st;
  }
  const consumer_snapshot snap = _m->snapshot();
  storage::consumer_state s;
  s.delivered = {snap.delivered.consumer_seq, snap.delivered.stream_seq};
  s.ack_floor = {snap.ack_floor.consumer_seq, snap.ack_floor.stream_seq};
  for (const auto& [seq, e] : snap.pending) s.pending[seq] = {e.consumer_seq, e.delivered_at};
  for (const auto& [seq, n] : snap.redelivered) s.redelivered[seq] = n;
  return s;
}

std::size_t consumer_agent::persist(std::int64_t now) {
  if (_store->writing()) {
    // Without the writer's wake-up the loop must keep turning while replies wait.
    return !_held.empty() && !_wake_on_written ? 1 : 0;
  }
  std::size_t work = confirm_written(now);
  const bool confirm = _held.needs_snapshot(_store->handed()) && now >= _confirm_retry_at;
  if (confirm || (_dirty && now >= _next_flush) || (_store->unsynced() && now >= _next_sync)) {
    flush_state(false);
    if (confirm) ++work;
  }
  return work;
}

std::size_t consumer_agent::confirm_written(std::int64_t now) {
  const std::uint64_t done = _store->written();
  if (done == _seen_written) return 0;
  _seen_written = done;
  if (const int err = _store->take_async_error(); err != 0) {
    PG_WARN("JetStream consumer '{} > {}': cannot persist state: {}", _sname, _cfg.name,
            std::strerror(err));
    // Not durable: write it again, later (a failing disk is not retried in a loop), and
    // keep every held reply for that write.
    _dirty = true;
    _next_flush = _confirm_retry_at = now + kFlushInterval;
    _held.failed(_store->handed() + 1);
    return 0;
  }
  const auto replies = _held.written(done);
  for (const auto& r : replies) _host.publish(r, "", "", "");
  return replies.empty() ? 0 : 1;
}

void consumer_agent::flush_state(bool wait) {
  _dirty = false;
  _next_flush = _host.now() + kFlushInterval;
  if (!_store) return;
  (void)_store->update(durable_state());
  if (!wait) {
    // The state writer thread writes it; while it still writes the previous snapshot, try
    // again shortly (snapshots coalesce). Only one snapshot per kSyncInterval is fdatasync'd
    // unless an ack sync waits for it under `durability: sync`: every fdatasync is a device
    // cache flush that stalls the stream's O_DIRECT writes queued behind it (the file-stream
    // p99.9), and an unsynced snapshot already survives a crash of the process.
    const std::int64_t now = _host.now();
    const bool sync = now >= _next_sync || (_sync_acks && _held.needs_snapshot(_store->handed()));
    if (!_store->flush_async(sync)) {
      _dirty = true;
      _next_flush = now + kFlushRetry;
    } else if (sync) {
      _next_sync = now + kSyncInterval;
    }
    return;
  }
  if (const int err = _store->take_async_error(); err != 0)
    PG_WARN("JetStream consumer '{} > {}': cannot persist state: {}", _sname, _cfg.name,
            std::strerror(err));
  if (auto st = _store->flush(); !st.ok())
    PG_WARN("JetStream consumer '{} > {}': cannot persist state: {}", _sname, _cfg.name,
            base::errc_name(st.code()));
}

bool consumer_agent::awaits_write() const { return _store && !_held.empty() && _store->writing(); }

}  // namespace js
