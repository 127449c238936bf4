#include "src/js/ack.h"

#include <charconv>
#include <cstddef>
#include <cstdlib>

namespace js {

std::size_t decimal_digits(std::uint64_t v) {
  std::size_t n = 1;
  while (v >= 10) {
    v /= 10;
    ++n;
  }
  return n;
}

namespace {

std::size_t digits_signed(std::int64_t v) {
  const auto mag = v < 0 ? std::uint64_t(0) - std::uint64_t(v) : std::uint64_t(v);
  return (v < 0 ? 1 : 0) + decimal_digits(mag);
}

template <typename T>
std::optional<T> parse_num(std::string_view s) {
  T v{};
  if (s.empty()) return std::nullopt;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

std::string_view trim(std::string_view s) {
  auto sp = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; };
  while (!s.empty() && sp(s.front())) s.remove_prefix(1);
  while (!s.empty() && sp(s.back())) s.remove_suffix(1);
  return s;
}

// `{"delay":<ns>}` as nats.js/nats.c send it; a tiny scan instead of a JSON dependency.
std::optional<base::nanos> parse_delay_json(std::string_view s) {
  auto k = s.find("\"delay\"");
  if (k == std::string_view::npos) return std::nullopt;
  s.remove_prefix(k + 7);
  s = trim(s);
  if (s.empty() || s.front() != ':') return std::nullopt;
  s = trim(s.substr(1));
  std::size_t n = 0;
  while (n < s.size() && (s[n] == '-' || (s[n] >= '0' && s[n] <= '9'))) ++n;
  return parse_num<std::int64_t>(s.substr(0, n));
}

}  // namespace

std::string encode_ack_subject(std::string_view stream, std::string_view consumer,
                               std::uint64_t delivered, std::uint64_t stream_seq,
                               std::uint64_t consumer_seq, std::int64_t timestamp,
                               std::uint64_t pending) {
  std::string s;
  s.reserve(ack_subject_len(stream.size(), consumer.size(), delivered, stream_seq, consumer_seq,
                            timestamp, pending));
  s.append("$JS.ACK.").append(stream).append(".").append(consumer).append(".");
  s.append(std::to_string(delivered)).append(".").append(std::to_string(stream_seq)).append(".");
  s.append(std::to_string(consumer_seq)).append(".").append(std::to_string(timestamp));
  s.append(".").append(std::to_string(pending));
  return s;
}

std::size_t ack_subject_len(std::size_t stream_len, std::size_t consumer_len,
                            std::uint64_t delivered, std::uint64_t stream_seq,
                            std::uint64_t consumer_seq, std::int64_t timestamp,
                            std::uint64_t pending) {
  return 8 + stream_len + 1 + consumer_len + 1 + decimal_digits(delivered) + 1 + decimal_digits(stream_seq) + 1 +
         decimal_digits(consumer_seq) + 1 + digits_signed(timestamp) + 1 + decimal_digits(pending);
}

std::optional<ack_subject> decode_ack_subject(std::string_view subject) {
  std::string_view tok[16];
  std::size_t n = 0;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= subject.size(); ++i) {
    if (i == subject.size() || subject[i] == '.') {
      if (n < 16) tok[n] = subject.substr(start, i - start);
      ++n;
      start = i + 1;
    }
  }
  if (n < 9 || n == 10 || tok[0] != "$JS" || tok[1] != "ACK") return std::nullopt;
  const std::size_t b = n == 9 ? 2 : 4;  // v2 carries domain and account hash first
  ack_subject a;
  a.stream = tok[b];
  a.consumer = tok[b + 1];
  auto d = parse_num<std::uint64_t>(tok[b + 2]);
  auto ss = parse_num<std::uint64_t>(tok[b + 3]);
  auto cs = parse_num<std::uint64_t>(tok[b + 4]);
  auto ts = parse_num<std::int64_t>(tok[b + 5]);
  auto pd = parse_num<std::uint64_t>(tok[b + 6]);
  if (!d || !ss || !cs || !ts || !pd || a.stream.empty() || a.consumer.empty()) return std::nullopt;
  a.delivered = *d;
  a.stream_seq = *ss;
  a.consumer_seq = *cs;
  a.timestamp = *ts;
  a.pending = *pd;
  return a;
}

ack_body parse_ack_body(std::string_view p) {
  ack_body b;
  if (p.empty() || p == "+ACK" || p == "+OK") {
    b.kind = ack_kind::ack;
  } else if (p.starts_with("-NAK")) {
    b.kind = ack_kind::nak;
    auto rest = trim(p.substr(4));
    if (!rest.empty()) {
      // Unparseable delays fall back to a plain NAK, as the server does.
      auto d = rest.front() == '{' ? parse_delay_json(rest) : parse_go_duration(rest);
      if (d && *d > 0) b.delay = *d;
    }
  } else if (p == "+WPI") {
    b.kind = ack_kind::progress;
  } else if (p.starts_with("+NXT")) {
    b.kind = ack_kind::next;
    b.next_body = trim(p.substr(4));
  } else if (p.starts_with("+TERM")) {
    b.kind = ack_kind::term;
    b.reason = trim(p.substr(5));
  }
  return b;
}

std::optional<base::nanos> parse_go_duration(std::string_view s) {
  if (s == "0") return 0;
  if (s.empty()) return std::nullopt;
  if (s.front() == '+') s.remove_prefix(1);
  if (s.empty() || s.front() == '-') return std::nullopt;
  double total = 0;
  while (!s.empty()) {
    std::size_t i = 0;
    while (i < s.size() && ((s[i] >= '0' && s[i] <= '9') || s[i] == '.')) ++i;
    if (i == 0) return std::nullopt;
    std::string num(s.substr(0, i));
    char* end = nullptr;
    double v = std::strtod(num.c_str(), &end);
    if (end != num.c_str() + num.size()) return std::nullopt;
    s.remove_prefix(i);
    std::size_t u = 0;
    while (u < s.size() && !((s[u] >= '0' && s[u] <= '9') || s[u] == '.')) ++u;
    std::string_view unit = s.substr(0, u);
    s.remove_prefix(u);
    double mul = 0;
    if (unit == "ns") mul = 1;
    else if (unit == "us" || unit == "\xc2\xb5s" || unit == "\xce\xbcs") mul = 1e3;
    else if (unit == "ms") mul = 1e6;
    else if (unit == "s") mul = 1e9;
    else if (unit == "m") mul = 60e9;
    else if (unit == "h") mul = 3600e9;
    else return std::nullopt;
    total += v * mul;
  }
  if (total > 9.2e18) return std::nullopt;
  return base::nanos(total + 0.5);
}

}  // namespace js
