#include "src/js/source_link.h"

#include <random>

#include "src/js/json_util.h"

namespace js {

namespace {

std::string random_id(std::size_t n) {
  static constexpr char kAlpha[] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  std::string s(n, '0');
  for (auto& c : s) c = kAlpha[rng() % (sizeof(kAlpha) - 1)];
  return s;
}

}  // namespace

source_link::source_link(link_bus& host, copy_target& owner, source_spec spec, bool mirror, std::uint64_t copied)
    : _host(host),
      _owner(owner),
      _spec(std::move(spec)),
      _mirror(mirror),
      _tracker(mirror, copied, _spec.durable()) {}

source_link::~source_link() { stop(false); }

void source_link::stop(bool delete_consumer) {
  if (_stopped) return;
  _stopped = true;
  drop_consumer(delete_consumer);
  _inbox.clear();
}

// Forgets the current consumer: its deliveries stop reaching us (the subscription goes), and
// the origin is asked to delete it (it would expire by inactive_threshold anyway).
void source_link::drop_consumer(bool delete_consumer) {
  for (auto id : _subs) _host.unsubscribe(id);
  _subs.clear();
  // A durable origin consumer belongs to the user: it is never deleted, only left unbound.
  if (!_consumer_name.empty() && delete_consumer && !_spec.durable()) {
    const std::string api = _spec.external_api.empty() ? "$JS.API" : _spec.external_api;
    _host.publish(api + ".CONSUMER.DELETE." + _spec.name + "." + _consumer_name, "", "", "");
    _consumer_name.clear();
  }
  _deliver_subject.clear();
  _reply_subject.clear();
  _inbox.clear();  // all of it came from the consumer we just dropped
  _held.clear();   // answers for the dropped consumer's requests
}

void source_link::on_msg(const core::inbound_msg& m) {
  if (_stopped) return;
  queued q;
  q.create_reply = m.subject == _reply_subject;  // deliveries show the origin's subject
  q.subject = std::string(m.subject);
  q.reply = std::string(m.reply);
  q.headers = std::string(m.headers);
  q.payload = std::string(m.payload);
  _inbox.push_back(std::move(q));
}

void source_link::send_create(std::uint64_t start_seq, std::int64_t now) {
  (void)now;
  drop_consumer();
  if (_spec.durable()) {
    // Reset first and bind the deliver subject only after the answer: the consumer then
    // delivers from its ack floor with delivery sequence 1, nothing from before the reset.
    _reply_subject = "$JSC.R." + random_id(12);
    if (auto sid = _host.subscribe_cluster(_reply_subject, this)) _subs.push_back(sid);
    _host.publish(consumer_reset_subject(_spec), _reply_subject, "", "");
    return;
  }
  const std::string id = random_id(12);
  _deliver_subject = _spec.external_deliver.empty() ? std::string(_mirror ? "$JS.M." : "$JS.S.") + id
                                                    : _spec.external_deliver + (_mirror ? ".M." : ".S.") + id;
  _reply_subject = "$JSC.R." + random_id(12);
  auto& h = _host;
  if (auto sid = h.subscribe_cluster(_deliver_subject, this)) _subs.push_back(sid);
  if (auto sid = h.subscribe_cluster(_reply_subject, this)) _subs.push_back(sid);
  h.publish(consumer_create_subject(_spec), _reply_subject, "",
            consumer_create_body(_spec, _deliver_subject, start_seq, _owner.copy_stream_name(), _mirror));
}

std::size_t source_link::poll(std::int64_t now) {
  if (_stopped) return 0;
  std::size_t work = 0;
  if (auto start = _tracker.due_create(now)) {
    send_create(*start, now);
    ++work;
  }
  // Handle what is queued now; anything queued while handling (a reply to our own publish)
  // waits for the next turn.
  for (std::size_t n = _inbox.size(); n > 0 && !_inbox.empty() && !_stopped; --n) {
    if (!handle(_inbox.front(), now)) break;  // the target is full: the rest waits too
    if (!_inbox.empty()) _inbox.pop_front();  // (a dropped consumer cleared it)
    ++work;
  }
  if (!_held.empty()) send_held_answers();
  return work;
}

bool source_link::handle(const queued& q, std::int64_t now) {
  if (q.create_reply) {
    handle_create_reply(q, now);
    return true;
  }
  if (q.headers.starts_with("NATS/1.0 100")) {
    handle_status(q, now);
    return true;
  }
  auto meta = parse_delivery_reply(q.reply);
  if (!meta) return true;
  const source_tracker before = _tracker;  // a `later` leaves the message unseen
  const auto d = _tracker.on_data(*meta, now);
  switch (d.v) {
    case source_tracker::verdict::store: {
      auto subject = apply_source_transforms(_spec, q.subject);
      if (!subject) {  // filtered out by the transforms (the consumer filter already did)
        _tracker.stored(meta->stream_seq);
        return true;
      }
      switch (_owner.store_copied(_spec, _mirror, *subject, q.subject, q.headers, q.payload, *meta, d.skip)) {
        case copy_target::copy_result::stored: _tracker.stored(meta->stream_seq); return true;
        case copy_target::copy_result::later: _tracker = before; return false;
        case copy_target::copy_result::refused:
          _tracker.store_failed(now);
          drop_consumer();
          return true;
      }
      return true;
    }
    case source_tracker::verdict::recreate: drop_consumer(); return true;
    default: return true;
  }
}

void source_link::handle_create_reply(const queued& q, std::int64_t now) {
  auto j = ojson::parse(q.payload, nullptr, false);
  if (_spec.durable()) {
    if (auto e = check_reset_response(j, _mirror)) {
      _tracker.create_failed(std::move(*e), now);
      drop_consumer();
      return;
    }
    _consumer_name = _spec.consumer_name;
    _deliver_subject = _spec.consumer_deliver;
    if (auto sid = _host.subscribe_cluster(_deliver_subject, this)) _subs.push_back(sid);
    _tracker.create_ok(now);
    return;
  }
  if (j.is_discarded() || !j.is_object()) {
    _tracker.create_failed(make_error(_mirror ? 10029 : 10045, "invalid consumer create response"), now);
    return;
  }
  if (auto e = j.find("error"); e != j.end() && e->is_object()) {
    api_error err;
    err.code = e->value("code", 500);
    err.err_code = e->value("err_code", std::uint16_t(0));
    err.description = e->value("description", std::string());
    _tracker.create_failed(std::move(err), now);
    drop_consumer();
    return;
  }
  _consumer_name = j.value("name", std::string());
  _tracker.create_ok(now);
}

void source_link::handle_status(const queued& q, std::int64_t now) {
  if (q.headers.find("FlowControl Request") != std::string::npos) {
    // Everything before it is stored by now (handled in order): let the origin go on.
    if (!q.reply.empty()) answer_flow_control(q.reply);
    return;
  }
  if (q.headers.find("Idle Heartbeat") == std::string::npos) return;
  if (auto stalled = find_header(q.headers, "Nats-Consumer-Stalled"); stalled && !stalled->empty())
    answer_flow_control(std::string(*stalled));
  std::uint64_t last_consumer = 0, last_stream = 0;
  if (auto v = find_header(q.headers, "Nats-Last-Consumer"))
    if (auto n = parse_u64(*v)) last_consumer = *n;
  if (auto v = find_header(q.headers, "Nats-Last-Stream"))
    if (auto n = parse_u64(*v)) last_stream = *n;
  if (_tracker.on_heartbeat(last_consumer, last_stream, now)) drop_consumer();
}

void source_link::answer_flow_control(const std::string& to) {
  if (!_spec.durable()) {
    _host.publish(to, "", "", "");
    return;
  }
  // The answer acks what it names on the origin, so it waits until that is durable here.
  _held.push_back({_owner.taken_seq(), to,
                   flow_control_answer(_tracker.last_delivery(), _tracker.copied())});
  send_held_answers();
}

void source_link::send_held_answers() {
  const std::uint64_t durable = _owner.durable_seq();
  while (!_held.empty() && _held.front().wait_seq <= durable) {
    _host.publish(_held.front().to, "", _held.front().headers, "");
    _held.pop_front();
  }
}

ojson source_link::info_json(std::int64_t now) const {
  ojson j;
  j["name"] = _spec.name;
  if (!_spec.external_api.empty() || !_spec.external_deliver.empty())
    j["external"] = ojson{{"api", _spec.external_api}, {"deliver", _spec.external_deliver}};
  j["lag"] = _tracker.lag();
  j["active"] = _tracker.active(now);
  if (_tracker.error()) j["error"] = to_json(*_tracker.error());
  if (!_spec.filter_subject.empty()) j["filter_subject"] = _spec.filter_subject;
  if (!_spec.transforms.empty()) {
    ojson t = ojson::array();
    for (const auto& [src, dest] : _spec.transforms) t.push_back(ojson{{"src", src}, {"dest", dest}});
    j["subject_transforms"] = t;
  }
  return j;
}

}  // namespace js
