#include "src/js/fast_batch.h"

#include <algorithm>
#include <charconv>
#include <limits>

#include <nlohmann/json.hpp>

#include "src/js/js_headers.h"
#include "src/js/json_util.h"

namespace js {
namespace {

constexpr std::string_view kSuffix = ".$FI";

std::string json_str(std::string_view s) { return nlohmann::json(std::string(s)).dump(); }

std::string gap_msg(std::uint64_t last_seq, std::uint64_t seq) {
  return "{\"type\":\"gap\",\"last_seq\":" + std::to_string(last_seq) + ",\"seq\":" + std::to_string(seq) + "}";
}

}  // namespace

bool is_fast_batch_reply(std::string_view reply) {
  return reply.size() > kSuffix.size() && reply.substr(reply.size() - kSuffix.size()) == kSuffix;
}

fi_admission admit_fast_batch_msg(std::string_view reply, std::string_view headers, std::size_t payload_size,
                                  std::int64_t max_msg_size, bool allow_batched, int api_level) {
  fi_admission out;
  if (max_msg_size >= 0 && headers.size() + payload_size > std::uint64_t(max_msg_size)) {
    out.error = make_error(err::message_too_large);
    return out;
  }
  if (!allow_batched) {
    out.error = make_error(err::fast_batch_disabled);
    return out;
  }
  auto parsed = parse_fast_batch_reply(reply);
  if (!parsed.reply) {
    out.error = std::move(parsed.error);
    return out;
  }
  out.reply = parsed.reply;
  // Header names are matched exactly (js_headers): no full parse for the usual message.
  if (headers.find("Nats-Required-Api-Level") == std::string_view::npos) return out;
  const js_headers h = parse_js_headers(headers);
  if (!h.required_api_level) return out;
  const auto want = parse_u64(*h.required_api_level);
  if (!want || *want > std::uint64_t(api_level)) {
    out.error = make_error(err::min_api_level);
    out.drop_batch = true;
    return out;
  }
  out.headers = remove_header(headers, "Nats-Required-Api-Level");
  return out;
}

fi_parse parse_fast_batch_reply(std::string_view reply) {
  fi_parse out;
  auto bad = [&] {
    out.error = make_error(err::fast_batch_pattern);
    return out;
  };
  if (!is_fast_batch_reply(reply)) return bad();
  std::string_view rest = reply.substr(0, reply.size() - kSuffix.size());
  // The five tokens before the suffix, right to left: op, seq, gap, flow, id.
  std::string_view tok[5];
  for (auto& t : tok) {
    const auto dot = rest.rfind('.');
    if (dot == std::string_view::npos) return bad();  // the prefix needs a token of its own
    t = rest.substr(dot + 1);
    rest = rest.substr(0, dot);
    if (t.empty()) return bad();
  }
  if (rest.empty()) return bad();
  auto to_int = [](std::string_view s, auto& v) {
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    return ec == std::errc() && p == s.data() + s.size();
  };
  fi_reply r;
  unsigned op = 0;
  if (tok[0].size() != 1 || !to_int(tok[0], op) || op > 4) return bad();
  r.op = static_cast<fi_op>(op);
  if (tok[1][0] == '+' || !to_int(tok[1], r.seq) || r.seq == 0 ||
      r.seq == std::numeric_limits<std::uint64_t>::max())
    return bad();
  if ((r.op == fi_op::start && r.seq != 1) || (r.op == fi_op::append && r.seq == 1) ||
      (r.op == fi_op::commit_eob && r.seq == 1))
    return bad();
  if (tok[2] == "ok") {
    r.gap_fail = false;
  } else if (tok[2] != "fail") {
    return bad();
  }
  std::int64_t flow = 0;
  if (tok[3][0] == '+' || !to_int(tok[3], flow)) return bad();
  r.flow = flow <= 0 ? 10 : static_cast<std::uint16_t>(std::min<std::int64_t>(flow, 65535));
  if (tok[4].size() > 64) {
    out.error = make_error(err::fast_batch_id_invalid);
    return out;
  }
  r.id = tok[4];
  out.reply = r;
  return out;
}

fast_batch_table::fast_batch_table(std::string stream, std::string domain, fast_batch_limits l,
                                   std::size_t* server_open)
    : _stream(std::move(stream)), _domain(std::move(domain)), _limits(l),
      _server_open(server_open ? server_open : &_own_count) {}

fast_batch_table::decision fast_batch_table::on_msg(const fi_reply& r, std::string_view reply, std::int64_t now,
                                                    std::uint64_t durable, std::vector<fi_send>& out) {
  auto send = [&](std::string body) { out.push_back({std::string(reply), std::move(body)}); };
  auto it = _open.find(r.id);
  if (it == _open.end() || it->second.dead) {
    if (r.seq != 1 || r.op == fi_op::ping) {
      send(error_ack(make_error(err::fast_batch_unknown)));
      return {decision::done};
    }
    if (live() >= _limits.max_per_stream || *_server_open >= _limits.max_per_server) {
      send(error_ack(make_error(err::fast_batch_inflight)));
      return {decision::done};
    }
    if (it != _open.end()) {  // a finished batch of the same id, not yet swept
      _open.erase(it);
      --_dead;
    }
    it = _open.emplace(std::string(r.id), batch{}).first;
    ++*_server_open;
    batch& b = it->second;
    b.id = std::string(r.id);
    b.reply = std::string(reply);
    b.client_flow = r.flow;
    b.gap_fail = r.gap_fail;
    // Alone on the stream it starts fast; beside others it starts at 1 and doubles up.
    b.msgs = live() == 1 ? std::min<std::uint32_t>(_limits.max_flow, r.flow) : 1;
    b.next_seq = 2;
    b.current = 1;
    b.current_commits = r.op == fi_op::commit;
    b.last_activity = now;
    if (r.op == fi_op::start) send(flow_ack(b));  // before the message is persisted
    return {decision::store, &b};
  }
  batch& b = it->second;
  b.last_activity = now;
  if (b.ending) return {decision::ignore};  // after the batch started committing
  b.reply.assign(reply);
  if (r.op == fi_op::ping) {
    if (r.seq >= b.next_seq) {  // the client sent messages we never saw
      send(gap_msg(b.next_seq, r.seq + 1));
      if (b.gap_fail) {
        end(b, b.next_seq - 1, durable, out);
      } else {
        b.next_seq = r.seq + 1;
      }
    } else {
      send(flow_ack(b));
    }
    sweep();
    return {decision::done};
  }
  if (r.seq < b.next_seq) {  // a re-sent older message ends the batch in both modes
    end(b, b.next_seq - 1, durable, out);
    sweep();
    return {decision::done};
  }
  if (r.seq > b.next_seq) {
    send(gap_msg(b.next_seq, r.seq));
    if (b.gap_fail) {
      end(b, b.next_seq - 1, durable, out);
      sweep();
      return {decision::done};
    }
  }
  b.next_seq = r.seq + 1;
  if (r.op == fi_op::commit_eob) {
    end(b, r.seq - 1, durable, out);
    sweep();
    return {decision::done};
  }
  b.current = r.seq;
  b.current_commits = r.op == fi_op::commit;
  return {decision::store, &b};
}

void fast_batch_table::stored(batch* b, std::uint64_t sseq, std::uint64_t durable, std::vector<fi_send>& out) {
  b->pending.emplace_back(b->current, sseq);
  b->last_sseq = sseq;
  if (b->current_commits) {
    end(*b, b->current, durable, out);
  } else {
    advance(*b, durable, out);
  }
  sweep();
}

void fast_batch_table::duplicate(batch* b, std::uint64_t orig_seq, std::uint64_t durable, std::vector<fi_send>& out) {
  if (b->current == 1 && b->current_commits && b->gap_fail) {
    std::string body = "{\"stream\":" + json_str(_stream) + ",";
    if (!_domain.empty()) body += "\"domain\":" + json_str(_domain) + ",";
    body += "\"seq\":" + std::to_string(orig_seq) + ",\"duplicate\": true,\"batch\":" + json_str(b->id) + ",\"count\":1}";
    out.push_back({b->reply, std::move(body)});
    erase(*b);
    sweep();
    return;
  }
  b->pending.emplace_back(b->current, 0);  // skipped, but it counts for flow control
  if (b->current_commits) {
    end(*b, b->current, durable, out);
  } else {
    advance(*b, durable, out);
  }
  sweep();
}

void fast_batch_table::failed(batch* b, const api_error& e, std::uint64_t durable, std::vector<fi_send>& out) {
  if (b->gap_fail && b->current == 1) {  // the first message: a plain error PubAck, batch gone
    out.push_back({b->reply, error_ack(e)});
    erase(*b);
    sweep();
    return;
  }
  out.push_back({b->reply, "{\"type\":\"err\",\"seq\":" + std::to_string(b->current) +
                               ",\"error\":" + to_json(e).dump() + "}"});
  if (b->gap_fail || b->current_commits) {
    end(*b, b->current - 1, durable, out);
  } else {
    b->pending.emplace_back(b->current, 0);
    advance(*b, durable, out);
  }
  sweep();
}

void fast_batch_table::on_durable(std::uint64_t durable, std::vector<fi_send>& out) {
  for (auto& [id, b] : _open)
    if (!b.dead && !b.pending.empty() && b.pending.front().second <= durable) advance(b, durable, out);
  sweep();
}

void fast_batch_table::end(batch& b, std::uint64_t count, std::uint64_t durable, std::vector<fi_send>& out) {
  b.ending = true;
  b.count = count;
  advance(b, durable, out);
}

void fast_batch_table::advance(batch& b, std::uint64_t durable, std::vector<fi_send>& out) {
  while (!b.pending.empty() && b.pending.front().second <= durable) {
    b.persisted = b.pending.front().first;
    b.pending.pop_front();
  }
  if (!b.ending && b.persisted >= b.last_ack + b.msgs) {
    // One ack for the highest multiple reached, then move the frequency toward the share
    // of the stream's budget this batch gets: doubling up, halving down.
    b.last_ack += (b.persisted - b.last_ack) / b.msgs * b.msgs;
    const std::uint32_t target =
        std::min<std::uint32_t>(b.client_flow, std::max<std::uint32_t>(1, _limits.max_flow / std::max<std::size_t>(1, live())));
    if (b.msgs < target) {
      b.msgs = std::min(b.msgs * 2, target);
    } else if (b.msgs > target) {
      b.msgs = std::max(b.msgs / 2, target);
    }
    out.push_back({b.reply, flow_ack(b)});
  }
  if (b.ending && b.pending.empty()) {
    out.push_back({b.reply, pub_ack(b)});
    erase(b);
  }
}

std::size_t fast_batch_table::expire(std::int64_t now) {
  std::size_t n = 0;
  for (auto& [id, b] : _open) {
    // An ending batch still waiting goes too: its messages failed in the store (no durable
    // sequence will reach them), and the publisher has long timed out.
    if (!b.dead && now - b.last_activity >= _limits.timeout_ns) {
      erase(b);
      ++n;
    }
  }
  sweep();
  return n;
}

void fast_batch_table::drop(std::string_view id) {
  if (auto it = _open.find(id); it != _open.end()) erase(it->second);
  sweep();
}

fast_batch_table::batch* fast_batch_table::find(std::string_view id) {
  auto it = _open.find(id);
  return it == _open.end() || it->second.dead ? nullptr : &it->second;
}

void fast_batch_table::clear() {
  *_server_open -= live();
  _open.clear();
  _dead = 0;
}

void fast_batch_table::erase(batch& b) {
  if (b.dead) return;
  b.dead = true;
  ++_dead;
  --*_server_open;
}

void fast_batch_table::sweep() {
  if (_dead == 0) return;
  std::erase_if(_open, [](const auto& kv) { return kv.second.dead; });
  _dead = 0;
}

std::string fast_batch_table::flow_ack(const batch& b) const {
  return "{\"type\":\"ack\",\"seq\":" + std::to_string(b.last_ack) + ",\"msgs\":" + std::to_string(b.msgs) + "}";
}

std::string fast_batch_table::pub_ack(const batch& b) const {
  std::string s = "{\"stream\":" + json_str(_stream) + ",";
  if (!_domain.empty()) s += "\"domain\":" + json_str(_domain) + ",";
  s += "\"seq\":" + std::to_string(b.last_sseq) + ",\"batch\":" + json_str(b.id) + ",\"count\":" + std::to_string(b.count) +
       "}";
  return s;
}

std::string fast_batch_table::error_ack(const api_error& e) const {
  std::string s = "{\"error\":" + to_json(e).dump() + ",\"stream\":" + json_str(_stream) + ",";
  if (!_domain.empty()) s += "\"domain\":" + json_str(_domain) + ",";
  return s + "\"seq\":0}";
}

}  // namespace js
