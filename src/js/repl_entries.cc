#include "src/js/repl_entries.h"

#include <type_traits>

namespace js::repl_entries {

namespace {

class writer {
 public:
  explicit writer(op o) { _b = {kFormatVersion, static_cast<std::uint8_t>(o)}; }
  void u(std::uint64_t v) {
    while (v >= 0x80) {
      _b.push_back(static_cast<std::uint8_t>(v | 0x80));
      v >>= 7;
    }
    _b.push_back(static_cast<std::uint8_t>(v));
  }
  void i(std::int64_t v) {
    const auto x = static_cast<std::uint64_t>(v);
    u((x << 1) ^ (v < 0 ? ~std::uint64_t(0) : 0));
  }
  void s(const std::string& v) {
    u(v.size());
    _b.insert(_b.end(), v.begin(), v.end());
  }
  void strings(const std::vector<std::string>& v) {
    u(v.size());
    for (const auto& x : v) s(x);
  }
  void reserve(std::size_t n) { _b.reserve(n); }
  std::vector<std::uint8_t> take() { return std::move(_b); }

 private:
  std::vector<std::uint8_t> _b;
};

class reader {
 public:
  explicit reader(std::span<const std::uint8_t> d) : _d(d) {}
  bool ok() const { return _ok; }
  bool at_end() const { return _ok && _pos == _d.size(); }
  std::uint64_t u() {
    std::uint64_t v = 0;
    for (unsigned shift = 0; shift < 64; shift += 7) {
      if (_pos >= _d.size()) return fail();
      const std::uint8_t c = _d[_pos++];
      if (shift == 63 && c > 1) return fail();  // more than 64 bits
      v |= std::uint64_t(c & 0x7f) << shift;
      if ((c & 0x80) == 0) return v;
    }
    return fail();
  }
  std::int64_t i() {
    const std::uint64_t z = u();
    return static_cast<std::int64_t>((z >> 1) ^ (~(z & 1) + 1));
  }
  bool flag() {
    const std::uint64_t v = u();
    if (v > 1) fail();
    return v == 1;
  }
  std::string s() {
    const std::uint64_t n = u();
    if (!_ok || n > _d.size() - _pos) return fail(), std::string();
    std::string out(reinterpret_cast<const char*>(_d.data() + _pos), n);
    _pos += n;
    return out;
  }
  // A count of items each at least `min_bytes` long: bounded by what is left, so a forged
  // count cannot make the decoder reserve memory the entry does not hold.
  std::uint64_t count(std::size_t min_bytes) {
    const std::uint64_t n = u();
    if (_ok && n > (_d.size() - _pos) / min_bytes) fail();
    return _ok ? n : 0;
  }
  void fail_now() { _ok = false; }
  std::vector<std::string> strings() {
    std::vector<std::string> out(count(1));
    for (auto& x : out) x = s();
    return out;
  }

 private:
  std::uint64_t fail() {
    _ok = false;
    return 0;
  }
  std::span<const std::uint8_t> _d;
  std::size_t _pos = 2;
  bool _ok = true;
};

void put(writer& w, const msg& m) {
  w.u(m.seq);
  w.i(m.ts);
  w.i(m.ttl);
  w.s(m.subject);
  w.s(m.headers);
  w.s(m.payload);
}

msg get_msg(reader& r) {
  msg m;
  m.seq = r.u();
  m.ts = r.i();
  m.ttl = r.i();
  m.subject = r.s();
  m.headers = r.s();
  m.payload = r.s();
  return m;
}

void put_seed(writer& w, const consumer_seed& st) {
  w.u(st.delivered_consumer);
  w.u(st.delivered_stream);
  w.u(st.floor_consumer);
  w.u(st.floor_stream);
  w.u(st.pending_acks.size());
  for (const auto& p : st.pending_acks) {
    w.u(p.sseq);
    w.u(p.dseq);
    w.i(p.ts);
  }
  w.u(st.redelivered.size());
  for (const auto& [sseq, n] : st.redelivered) {
    w.u(sseq);
    w.u(n);
  }
}

consumer_seed get_seed(reader& r) {
  consumer_seed st;
  st.delivered_consumer = r.u();
  st.delivered_stream = r.u();
  st.floor_consumer = r.u();
  st.floor_stream = r.u();
  st.pending_acks.resize(r.count(3));
  for (auto& p : st.pending_acks) {
    p.sseq = r.u();
    p.dseq = r.u();
    p.ts = r.i();
  }
  st.redelivered.resize(r.count(2));
  for (auto& [sseq, n] : st.redelivered) {
    sseq = r.u();
    n = r.u();
  }
  return st;
}

void put_consumer(writer& w, const consumer_assign& v) {
  w.s(v.account);
  w.s(v.stream);
  w.s(v.name);
  w.s(v.config_json);
  w.strings(v.peers);
  w.i(v.created_ns);
  w.u(v.group_id);
  if (v.state) put_seed(w, *v.state);
}

void get_consumer(reader& r, consumer_assign& a) {
  a.account = r.s();
  a.stream = r.s();
  a.name = r.s();
  a.config_json = r.s();
  a.peers = r.strings();
  a.created_ns = r.i();
  a.group_id = r.u();
  if (r.at_end() || !r.ok()) return;
  a.state = get_seed(r);
}

void put_assign(writer& w, const stream_assign& a) {
  w.s(a.account);
  w.s(a.name);
  w.s(a.config_json);
  w.strings(a.peers);
  w.i(a.created_ns);
  w.u(a.group_id);
  if (!a.seed_from.empty() || !a.consumers.empty()) w.s(a.seed_from);
  if (a.consumers.empty()) return;
  w.u(a.consumers.size());
  for (const auto& c : a.consumers) {
    const auto bytes = encode(meta_op{c});
    w.s(std::string(bytes.begin(), bytes.end()));
  }
}

void get_assign(reader& r, stream_assign& a) {
  a.account = r.s();
  a.name = r.s();
  a.config_json = r.s();
  a.peers = r.strings();
  a.created_ns = r.i();
  a.group_id = r.u();
  if (!r.at_end()) a.seed_from = r.s();
  if (r.at_end() || !r.ok()) return;
  const std::uint64_t n = r.count(3);
  for (std::uint64_t i = 0; i < n && r.ok(); ++i) {
    const std::string blob = r.s();
    // Only a consumer assign may nest (no recursion through forged stream entries).
    if (blob.size() < 2 || std::uint8_t(blob[1]) != std::uint8_t(op::consumer_assign)) {
      r.fail_now();
      return;
    }
    auto decoded = decode_meta(std::span(reinterpret_cast<const std::uint8_t*>(blob.data()), blob.size()));
    auto* c = decoded ? std::get_if<consumer_assign>(&*decoded) : nullptr;
    if (!c) {
      r.fail_now();
      return;
    }
    a.consumers.push_back(std::move(*c));
  }
}

// The version and op bytes, or nullopt.
std::optional<op> header(std::span<const std::uint8_t> d) {
  if (d.size() < 2 || d[0] != kFormatVersion) return std::nullopt;
  return static_cast<op>(d[1]);
}

template <class T>
std::optional<T> finish(const reader& r, T v) {
  if (!r.at_end()) return std::nullopt;
  return v;
}

}  // namespace

std::vector<std::uint8_t> encode(const meta_op& o) {
  return std::visit(
      [](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, stream_assign> || std::is_same_v<T, stream_update>) {
          writer w(std::is_same_v<T, stream_assign> ? op::stream_assign : op::stream_update);
          put_assign(w, v);
          return w.take();
        } else if constexpr (std::is_same_v<T, stream_remove>) {
          writer w(op::stream_remove);
          w.s(v.account);
          w.s(v.name);
          return w.take();
        } else if constexpr (std::is_same_v<T, consumer_assign>) {
          writer w(op::consumer_assign);
          put_consumer(w, v);
          return w.take();
        } else if constexpr (std::is_same_v<T, consumer_update>) {
          writer w(op::consumer_update);
          w.s(v.account);
          w.s(v.stream);
          w.s(v.name);
          w.s(v.config_json);
          return w.take();
        } else if constexpr (std::is_same_v<T, server_remove>) {
          writer w(op::server_remove);
          w.s(v.name);
          return w.take();
        } else if constexpr (std::is_same_v<T, r1_streams>) {
          writer w(op::r1_streams);
          w.s(v.server);
          w.u(v.streams.size());
          for (const auto& st : v.streams) {
            w.s(st.name);
            w.strings(st.subjects);
          }
          if (!v.tags.empty()) w.strings(v.tags);
          return w.take();
        } else {
          writer w(op::consumer_remove);
          w.s(v.account);
          w.s(v.stream);
          w.s(v.name);
          return w.take();
        }
      },
      o);
}

std::vector<std::uint8_t> encode(const stream_op& o) {
  return std::visit(
      [](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, msg>) {
          writer w(op::msg);
          put(w, v);
          return w.take();
        } else if constexpr (std::is_same_v<T, purge>) {
          writer w(op::purge);
          w.s(v.filter);
          w.u(v.seq);
          w.u(v.keep);
          return w.take();
        } else if constexpr (std::is_same_v<T, msg_delete>) {
          writer w(op::msg_delete);
          w.u(v.seq);
          w.u(v.erase ? 1 : 0);
          return w.take();
        } else if constexpr (std::is_same_v<T, batch>) {
          writer w(op::batch);
          w.u(v.msgs.size());
          for (const auto& m : v.msgs) put(w, m);
          return w.take();
        } else if constexpr (std::is_same_v<T, leader_start>) {
          writer w(op::leader_start);
          w.u(v.term);
          w.s(v.leader);
          return w.take();
        } else if constexpr (std::is_same_v<T, expire>) {
          writer w(op::expire);
          w.i(v.now);
          return w.take();
        } else if constexpr (std::is_same_v<T, seed_done>) {
          writer w(op::seed_done);
          w.u(v.last_seq);
          return w.take();
        } else if constexpr (std::is_same_v<T, no_interest>) {
          writer w(op::no_interest);
          w.u(v.seq);
          w.i(v.ts);
          w.s(v.msg_id);
          return w.take();
        } else {
          writer w(op::stream_config);
          w.u(v.meta_index);
          w.s(v.config_json);
          return w.take();
        }
      },
      o);
}

std::vector<std::uint8_t> encode(const consumer_op& o) {
  return std::visit(
      [](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, consumer_delivered>) {
          writer w(op::consumer_delivered);
          w.u(v.dseq);
          w.u(v.sseq);
          w.u(v.deliveries);
          w.i(v.ts);
          return w.take();
        } else if constexpr (std::is_same_v<T, consumer_acked>) {
          writer w(op::consumer_acked);
          w.u(v.sseq);
          w.u(v.dseq);
          return w.take();
        } else if constexpr (std::is_same_v<T, consumer_reset>) {
          writer w(op::consumer_reset);
          w.u(v.floor);
          return w.take();
        } else if constexpr (std::is_same_v<T, consumer_updates>) {
          writer w(op::consumer_updates);
          w.u(v.updates.size());
          for (const auto& u : v.updates) {
            if (const auto* d = std::get_if<consumer_delivered>(&u)) {
              w.u(0);
              w.u(d->dseq);
              w.u(d->sseq);
              w.u(d->deliveries);
              w.i(d->ts);
            } else {
              const auto& a = std::get<consumer_acked>(u);
              w.u(1);
              w.u(a.sseq);
              w.u(a.dseq);
            }
          }
          return w.take();
        } else {
          writer w(op::consumer_leader_start);
          w.u(v.term);
          w.s(v.leader);
          return w.take();
        }
      },
      o);
}

std::optional<meta_op> decode_meta(std::span<const std::uint8_t> data) {
  const auto o = header(data);
  if (!o) return std::nullopt;
  reader r(data);
  switch (*o) {
    case op::stream_assign: {
      stream_assign a;
      get_assign(r, a);
      return finish<meta_op>(r, std::move(a));
    }
    case op::stream_update: {
      stream_update a;
      get_assign(r, a);
      return finish<meta_op>(r, std::move(a));
    }
    case op::stream_remove: {
      stream_remove a;
      a.account = r.s();
      a.name = r.s();
      return finish<meta_op>(r, std::move(a));
    }
    case op::consumer_assign: {
      consumer_assign a;
      get_consumer(r, a);
      return finish<meta_op>(r, std::move(a));
    }
    case op::consumer_remove: {
      consumer_remove a;
      a.account = r.s();
      a.stream = r.s();
      a.name = r.s();
      return finish<meta_op>(r, std::move(a));
    }
    case op::consumer_update: {
      consumer_update u;
      u.account = r.s();
      u.stream = r.s();
      u.name = r.s();
      u.config_json = r.s();
      return finish<meta_op>(r, std::move(u));
    }
    case op::server_remove: {
      server_remove v;
      v.name = r.s();
      return finish<meta_op>(r, std::move(v));
    }
    case op::r1_streams: {
      r1_streams v;
      v.server = r.s();
      v.streams.resize(r.count(2));
      for (auto& st : v.streams) {
        st.name = r.s();
        st.subjects = r.strings();
      }
      if (!r.at_end()) v.tags = r.strings();
      return finish<meta_op>(r, std::move(v));
    }
    default:
      return std::nullopt;
  }
}

std::optional<stream_op> decode_stream(std::span<const std::uint8_t> data) {
  const auto o = header(data);
  if (!o) return std::nullopt;
  reader r(data);
  switch (*o) {
    case op::msg:
      return finish<stream_op>(r, get_msg(r));
    case op::purge: {
      purge p;
      p.filter = r.s();
      p.seq = r.u();
      p.keep = r.u();
      return finish<stream_op>(r, std::move(p));
    }
    case op::msg_delete: {
      msg_delete d;
      d.seq = r.u();
      d.erase = r.flag();
      return finish<stream_op>(r, d);
    }
    case op::batch: {
      batch b;
      b.msgs.resize(r.count(6));  // a message is at least six bytes
      for (auto& m : b.msgs) m = get_msg(r);
      return finish<stream_op>(r, std::move(b));
    }
    case op::leader_start: {
      leader_start l;
      l.term = r.u();
      l.leader = r.s();
      return finish<stream_op>(r, std::move(l));
    }
    case op::expire: {
      expire x;
      x.now = r.i();
      return finish<stream_op>(r, x);
    }
    case op::seed_done: {
      seed_done d;
      d.last_seq = r.u();
      return finish<stream_op>(r, d);
    }
    case op::stream_config: {
      config_change c;
      c.meta_index = r.u();
      c.config_json = r.s();
      return finish<stream_op>(r, std::move(c));
    }
    case op::no_interest: {
      no_interest n;
      n.seq = r.u();
      n.ts = r.i();
      n.msg_id = r.s();
      return finish<stream_op>(r, std::move(n));
    }
    default:
      return std::nullopt;
  }
}

std::optional<consumer_op> decode_consumer(std::span<const std::uint8_t> data) {
  const auto o = header(data);
  if (!o) return std::nullopt;
  reader r(data);
  switch (*o) {
    case op::consumer_delivered: {
      consumer_delivered d;
      d.dseq = r.u();
      d.sseq = r.u();
      d.deliveries = r.u();
      d.ts = r.i();
      return finish<consumer_op>(r, d);
    }
    case op::consumer_acked: {
      consumer_acked a;
      a.sseq = r.u();
      a.dseq = r.u();
      return finish<consumer_op>(r, a);
    }
    case op::consumer_leader_start: {
      consumer_leader_start l;
      l.term = r.u();
      l.leader = r.s();
      return finish<consumer_op>(r, std::move(l));
    }
    case op::consumer_reset: {
      consumer_reset x;
      x.floor = r.u();
      return finish<consumer_op>(r, x);
    }
    case op::consumer_updates: {
      consumer_updates x;
      x.updates.resize(r.count(3));  // an update is at least three bytes
      for (auto& u : x.updates) {
        const std::uint64_t kind = r.u();
        if (kind == 0) {
          consumer_delivered d;
          d.dseq = r.u();
          d.sseq = r.u();
          d.deliveries = r.u();
          d.ts = r.i();
          u = d;
        } else if (kind == 1) {
          consumer_acked a;
          a.sseq = r.u();
          a.dseq = r.u();
          u = a;
        } else {
          r.fail_now();
          break;
        }
      }
      return finish<consumer_op>(r, std::move(x));
    }
    default:
      return std::nullopt;
  }
}

std::vector<std::uint8_t> encode(const stream_snapshot& v) {
  writer w(op::stream_snapshot);
  std::size_t size = 256 + v.config_json.size() + 32 * v.dedup.size();
  for (const auto& m : v.msgs) size += 48 + m.subject.size() + m.headers.size() + m.payload.size();
  w.reserve(size);  // one allocation: a large stream's snapshot holds its thread (snapshot_policy.h)
  w.u(v.applied_index);
  w.u(v.config_index);
  w.s(v.config_json);
  w.u(v.seeded ? 1 : 0);
  w.s(v.seed_origin);
  w.s(v.last_msg_id);
  w.u(v.dedup.size());
  for (const auto& d : v.dedup) {
    w.s(d.id);
    w.u(d.seq);
    w.i(d.ts);
  }
  w.u(v.first_seq);
  w.u(v.last_seq);
  w.u(v.msgs.size());
  for (const auto& m : v.msgs) put(w, m);
  return w.take();
}

std::vector<std::uint8_t> encode(const consumer_snapshot& v) {
  writer w(op::consumer_snapshot);
  w.u(v.applied_index);
  w.u(v.was_reset ? 1 : 0);
  put_seed(w, v.state);
  return w.take();
}

std::optional<stream_snapshot> decode_stream_snapshot(std::span<const std::uint8_t> data) {
  if (header(data) != op::stream_snapshot) return std::nullopt;
  reader r(data);
  stream_snapshot v;
  v.applied_index = r.u();
  v.config_index = r.u();
  v.config_json = r.s();
  v.seeded = r.flag();
  v.seed_origin = r.s();
  v.last_msg_id = r.s();
  v.dedup.resize(r.count(3));
  for (auto& d : v.dedup) {
    d.id = r.s();
    d.seq = r.u();
    d.ts = r.i();
  }
  v.first_seq = r.u();
  v.last_seq = r.u();
  v.msgs.resize(r.count(6));
  for (auto& m : v.msgs) m = get_msg(r);
  return finish(r, std::move(v));
}

std::optional<consumer_snapshot> decode_consumer_snapshot(std::span<const std::uint8_t> data) {
  if (header(data) != op::consumer_snapshot) return std::nullopt;
  reader r(data);
  consumer_snapshot v;
  v.applied_index = r.u();
  v.was_reset = r.flag();
  v.state = get_seed(r);
  return finish(r, std::move(v));
}

}  // namespace js::repl_entries
