// Fast-ingest batches on a replicated stream's leader (cluster_streams.h): the standalone
// stream's checks (stream_fast_batch.cc) and its fast_batch_table, each message proposed like
// a plain publish without a reply of its own. The stream's "durable" sequence is its applied
// one: an entry is applied once committed (a majority holds it at its durability point), so
// flow acks and the final PubAck leave as the group applies. A message the table took while
// the hand-over queue to the replication thread was full waits at the head of the stream's
// publish backlog, remembering its batch, so every later publish waits behind it.
#include <nlohmann/json.hpp>

#include "src/js/cluster_streams.h"
#include "src/js/cluster_streams_hosted.h"

namespace js {

bool cluster_streams::submit_fast(hosted& h, waiting_publish& p) {
  const std::int64_t now = _host.clk().wall_ns();
  if (!h.fast) h.fast = std::make_unique<fast_batch_table>(h.cfg.name, _domain, fast_batch_limits{}, &_fast_open);
  fast_batch_table& table = *h.fast;
  std::vector<fi_send> out;
  auto send = [&] {
    for (auto& o : out) _host.publish(o.subject, "", "", o.body);
    out.clear();
  };
  fast_batch_table::batch* b = nullptr;
  if (p.fast_batch.empty()) {
    auto fail = [&](const api_error& e) {
      publish_error(h, p.reply, e);
      return true;
    };
    if (h.cfg.sealed) return fail(make_error(err::sealed));
    auto a = admit_fast_batch_msg(p.reply, p.headers, p.payload.size(), h.cfg.max_msg_size, h.cfg.allow_batched,
                                  kApiLevel);
    if (a.drop_batch) table.drop(a.reply->id);
    if (a.error) return fail(*a.error);
    if (a.headers) p.headers = std::move(*a.headers);
    const fi_reply& r = *a.reply;
    const auto d = table.on_msg(r, p.reply, now, h.store->last_seq(), out);
    send();  // the initial ack goes before the message is proposed
    if (d.what != fast_batch_table::decision::store) return true;
    b = d.b;
    p.fast_batch = std::string(r.id);
  } else {
    b = table.find(p.fast_batch);
    if (!b) return true;  // the batch was forgotten (idle too long) meanwhile
  }
  std::vector<replica_reply> replies;
  const auto st = h.replica->publish(now, p.subject, p.headers, p.payload, 0, replies);
  if (st == submit_status::busy) return false;
  const std::uint64_t applied = h.store->last_seq();
  if (st == submit_status::proposed) {
    table.stored(b, h.replica->taken_seq(), applied, out);
  } else if (st == submit_status::answered && !replies.empty() && replies.front().error) {
    table.failed(b, *replies.front().error, applied, out);
  } else if (st == submit_status::answered && !replies.empty()) {
    table.duplicate(b, replies.front().seq, applied, out);
  } else {
    table.failed(b, make_error(err::cluster_unavailable), applied, out);
  }
  send();
  return true;
}

void cluster_streams::fast_applied(hosted& h) {
  if (!h.fast || h.fast->empty()) return;
  std::vector<fi_send> out;
  h.fast->on_durable(h.store->last_seq(), out);
  for (auto& o : out) _host.publish(o.subject, "", "", o.body);
}

}  // namespace js
