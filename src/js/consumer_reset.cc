// $JS.API.CONSUMER.RESET.<stream>.<consumer> (nats-server 2.14, ADR-57): the consumer's
// delivery state starts over, at its ack floor (empty body) or at a requested sequence
// (`{"seq":N}`), and the reply is its ConsumerInfo plus `reset_seq`.
#include "src/base/log.h"
#include "src/js/consumer_agent.h"
#include "src/js/jetstream_service.h"
#include "src/js/json_decode.h"

namespace js {

// JSApiConsumerResetRequest {"seq": uint64}; an absent or zero seq keeps the ack floor.
std::optional<api_error> parse_reset_request(std::string_view body, std::optional<std::uint64_t>& seq) {
  jdec::json req;
  seq.reset();
  if (auto e = jdec::decode_request(body, "JSApiConsumerResetRequest", {{"seq", jdec::field_kind::u64}}, req))
    return e;
  if (auto it = req.find("seq"); it != req.end() && !it->is_null())
    if (const std::uint64_t n = jdec::get_u64(*it); n != 0) seq = n;
  return std::nullopt;
}

std::optional<api_error> reset_floor(const consumer_config& cfg, std::optional<std::uint64_t> seq,
                                     std::uint64_t ack_floor, message_source& src, std::uint64_t& floor) {
  if (!seq) {
    floor = ack_floor;
    return std::nullopt;
  }
  // Only where the config allows starting there (a new consumer could not start lower).
  switch (cfg.deliver) {
    case deliver_policy::all:
      break;
    case deliver_policy::by_start_sequence:
      if (*seq < cfg.opt_start_seq) return make_error(err::invalid_reset, "below start seq");
      break;
    case deliver_policy::by_start_time:
      if (auto m = src.next_matching(*seq); m && m->timestamp < cfg.opt_start_time.value_or(0))
        return make_error(err::invalid_reset, "below start time");
      break;
    default:
      return make_error(err::invalid_reset, "not allowed");
  }
  floor = *seq - 1;
  return std::nullopt;
}

std::optional<api_error> consumer_agent::reset(std::optional<std::uint64_t> seq, std::int64_t now,
                                               std::uint64_t& reset_seq) {
  if (off_thread()) {
    std::optional<api_error> e;
    std::uint64_t gen = 0;
    _exec->run_sync([&] {
      e = reset(seq, now, reset_seq);
      gen = _link_keep->reader.release_gen();
    });
    if (!e) {  // back on the owner: its picture of what the consumer needs starts over too
      _link_keep->interest = remote_interest(reset_seq);
      _link_keep->release_gen = gen;
    }
    return e;
  }
  // On a consumer thread the owner waits in run_sync (as for purge_now): the checks and the
  // first deliveries read its store, and the window pages again from the new start, which
  // may lie below what it holds.
  struct store_reads {
    consumer_agent& a;
    const bool on = a._link != nullptr;
    explicit store_reads(consumer_agent& c) : a(c) {
      if (on) a.feed_link_off();
    }
    ~store_reads() {
      if (on) a.feed_link_on();
    }
  } reads{*this};
  std::uint64_t floor = 0;
  if (auto e = reset_floor(_cfg, seq, _m->numbers(now).ack_floor.stream_seq, *this, floor)) return e;
  reset_seq = floor + 1;
  _cache.clear();
  if (reads.on) {
    _link_keep->reader.rewind(reset_seq);
    _link_keep->reader.restart_releases(reset_seq);
  }
  actions out;
  _m->reset(floor, now, out);
  _dirty = true;
  run(out, now);
  // num_pending until the first page: the store's count.
  if (reads.on) _link_keep->seed_pending = recount(_m->next_stream_seq());
  return std::nullopt;
}

void jetstream::api_consumer_reset(std::string_view stream_name, std::string_view name, const core::inbound_msg& m) {
  constexpr std::string_view type = "consumer_reset_response";
  std::optional<std::uint64_t> seq;
  if (auto e = parse_reset_request(m.payload, seq)) return respond_error(m.reply, type, *e);
  if (!find(stream_name)) return respond_error(m.reply, type, make_error(err::stream_not_found));
  consumer_agent* c = find_consumer(stream_name, name);
  if (!c) return respond_error(m.reply, type, make_error(err::consumer_not_found));
  const std::int64_t t = now();
  std::uint64_t reset_seq = 0;
  if (auto e = c->reset(seq, t, reset_seq)) return respond_error(m.reply, type, *e);
  ojson j = ojson::object();
  j["type"] = "io.nats.jetstream.api.v1." + std::string(type);
  const ojson info = c->info_json(t);
  for (auto it = info.cbegin(); it != info.cend(); ++it) j[it.key()] = it.value();
  j["reset_seq"] = reset_seq;
  respond(m.reply, j);
}

}  // namespace js
