// Fast-ingest batch publishing on a stream: the stream-level checks, then
// each message stored like a plain publish (same checks, same append and group commit) with
// fast_batch_table deciding what the publisher hears; flow acks leave at the durability
// point (flush_acks feeds the table the store's durable sequence).
#include "src/js/json_util.h"
#include "src/js/stream.h"

namespace js {

void stream::send_fast_out() {
  for (auto& o : _fast_out) _host.publish(o.subject, "", "", o.body);
  _fast_out.clear();
}

void stream::on_fast_batch_msg(const core::inbound_msg& m) {
  auto fail = [&](const api_error& e) { reply_error(m.reply, e); };
  if (_cfg.sealed) return fail(make_error(err::sealed));
  if (_host.storage_exhausted(_cfg.storage)) return fail(make_error(err::insufficient_resources));
  auto a = admit_fast_batch_msg(m.reply, m.headers, m.payload.size(), _cfg.max_msg_size, _cfg.allow_batched, kApiLevel);
  if (a.drop_batch) _fast.drop(a.reply->id);
  if (a.error) return fail(*a.error);
  const fi_reply& r = *a.reply;
  // A required API level we meet is stripped before storing.
  const std::string_view hdr = a.headers ? std::string_view(*a.headers) : m.headers;
  const js_headers h = hdr.empty() ? js_headers{} : parse_js_headers(hdr);

  const auto d = _fast.on_msg(r, m.reply, _host.now(), _store->durable_seq(), _fast_out);
  send_fast_out();  // the initial ack goes before the message is persisted
  if (d.what != fast_batch_table::decision::store) return;

  std::string transformed;
  const std::string_view subject = _rewrites.ingest(m.subject, transformed);
  publish_result res;
  if (h.expected_stream && *h.expected_stream != _cfg.name) {
    res = {publish_result::failed, 0, make_error(err::expected_stream)};
  } else {
    res = store_msg(subject, hdr, h, m.payload);
  }
  const std::uint64_t durable = _store->durable_seq();
  switch (res.what) {
    case publish_result::stored:
      _fast.stored(d.b, res.seq, durable, _fast_out);
      break;
    case publish_result::duplicate:
      _fast.duplicate(d.b, res.seq, durable, _fast_out);
      break;
    case publish_result::failed:
      _fast.failed(d.b, res.error, durable, _fast_out);
      break;
  }
  send_fast_out();
}

}  // namespace js
