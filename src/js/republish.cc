#include "src/js/republish.h"

#include "src/js/json_util.h"

namespace js {
void subject_rewrites::configure(const stream_config& cfg) {
  std::string error;
  _ingest.reset();
  _republish.reset();
  if (cfg.subject_transform.is_object())
    _ingest = subject_transform::parse(string_field(cfg.subject_transform, "src"), string_field(cfg.subject_transform, "dest"), error);
  if (cfg.republish.is_object()) {
    _republish = subject_transform::parse(string_field(cfg.republish, "src"), string_field(cfg.republish, "dest"), error);
    auto h = cfg.republish.find("headers_only");
    _headers_only = h != cfg.republish.end() && h->is_boolean() && h->get<bool>();
  }
}

std::string_view subject_rewrites::ingest(std::string_view subject, std::string& scratch) const {
  if (!_ingest) return subject;
  auto t = _ingest->apply(subject);
  if (!t) return subject;
  scratch = std::move(*t);
  return scratch;
}

std::optional<subject_rewrites::copy> subject_rewrites::republish(std::string_view stream, std::string_view subject,
                                                                  std::string_view headers, std::size_t payload_size,
                                                                  std::uint64_t seq, std::int64_t ts,
                                                                  std::uint64_t last_seq_on_subject) const {
  if (!_republish) return std::nullopt;
  auto to = _republish->apply(subject);
  if (!to) return std::nullopt;
  copy c;
  c.subject = std::move(*to);
  c.headers_only = _headers_only;
  // The stored headers first, then the server's, in nats-server's order.
  c.headers = append_header(headers, "Nats-Stream", stream);
  c.headers = append_header(c.headers, "Nats-Subject", subject);
  c.headers = append_header(c.headers, "Nats-Sequence", std::to_string(seq));
  c.headers = append_header(c.headers, "Nats-Time-Stamp", base::rfc3339_nano(ts));
  c.headers = append_header(c.headers, "Nats-Last-Sequence", std::to_string(last_seq_on_subject));
  if (_headers_only) c.headers = append_header(c.headers, "Nats-Msg-Size", std::to_string(payload_size));
  return c;
}

}  // namespace js
