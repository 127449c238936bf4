#include "src/repl/link_codec.h"

#include <charconv>

namespace repl {
namespace {

void put_u32(std::vector<std::uint8_t>& out, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(std::uint8_t(v >> (8 * i)));
}
std::uint32_t get_u32(const std::uint8_t* p) {
  return std::uint32_t(p[0]) | std::uint32_t(p[1]) << 8 | std::uint32_t(p[2]) << 16 |
         std::uint32_t(p[3]) << 24;
}

}  // namespace

bool valid_link_name(std::string_view name) {
  if (name.empty() || name.size() > 255) return false;
  for (char c : name)
    if (c <= ' ' || c > '~') return false;
  return true;
}

std::string encode_hello(const link_hello& h) {
  return std::string(kLinkMagic) + " " + std::to_string(h.version) + " " + h.server_name + " " +
         h.cluster + "\r\n";
}

link_parse parse_hello(std::span<const std::uint8_t> buf, link_hello& out, std::size_t& consumed) {
  const std::string_view s(reinterpret_cast<const char*>(buf.data()), buf.size());
  const std::size_t prefix = std::min(s.size(), kLinkMagic.size());
  if (s.substr(0, prefix) != kLinkMagic.substr(0, prefix)) return link_parse::error;
  const std::size_t eol = s.find("\r\n");
  if (eol == std::string_view::npos)
    return s.size() >= kMaxHelloLine ? link_parse::error : link_parse::need_more;
  if (eol + 2 > kMaxHelloLine) return link_parse::error;
  std::string_view line = s.substr(0, eol);
  std::string_view parts[4];
  for (int i = 0; i < 4; ++i) {
    const std::size_t sp = i < 3 ? line.find(' ') : std::string_view::npos;
    if (i < 3 && sp == std::string_view::npos) return link_parse::error;
    parts[i] = line.substr(0, sp);
    line = sp == std::string_view::npos ? std::string_view{} : line.substr(sp + 1);
  }
  if (parts[0] != kLinkMagic) return link_parse::error;
  std::uint32_t version = 0;
  const auto [p, ec] = std::from_chars(parts[1].data(), parts[1].data() + parts[1].size(), version);
  if (ec != std::errc{} || p != parts[1].data() + parts[1].size() || version == 0)
    return link_parse::error;
  if (!valid_link_name(parts[2]) || !valid_link_name(parts[3])) return link_parse::error;
  out.version = version;
  out.server_name = std::string(parts[2]);
  out.cluster = std::string(parts[3]);
  consumed = eol + 2;
  return link_parse::ok;
}

void append_link_message(std::vector<std::uint8_t>& out, link_kind kind,
                         std::span<const std::uint8_t> payload) {
  put_u32(out, std::uint32_t(payload.size() + 1));
  out.push_back(std::uint8_t(kind));
  out.insert(out.end(), payload.begin(), payload.end());
}

link_parse parse_link_message(std::span<const std::uint8_t> buf, link_message& out,
                              std::size_t& consumed) {
  if (buf.size() < 4) return link_parse::need_more;
  const std::uint32_t len = get_u32(buf.data());
  if (len == 0 || len > kMaxLinkMessage) return link_parse::error;
  if (buf.size() < 4 + std::size_t(len)) return link_parse::need_more;
  const std::uint8_t kind = buf[4];
  if (kind < std::uint8_t(link_kind::raft) || kind > std::uint8_t(link_kind::stepdown))
    return link_parse::error;
  out.kind = link_kind(kind);
  out.payload = buf.subspan(5, len - 1);
  consumed = 4 + std::size_t(len);
  return link_parse::ok;
}

std::vector<std::uint8_t> encode_view(const membership_view& v) {
  std::vector<std::uint8_t> out;
  out.push_back(v.frozen ? 1 : 0);
  out.push_back(std::uint8_t(v.members.size()));
  out.push_back(std::uint8_t(v.members.size() >> 8));
  for (const std::string& m : v.members) {
    out.push_back(std::uint8_t(m.size()));
    out.insert(out.end(), m.begin(), m.end());
  }
  return out;
}

bool decode_view(std::span<const std::uint8_t> payload, membership_view& out) {
  if (payload.size() < 3 || payload[0] > 1) return false;
  membership_view v;
  v.frozen = payload[0] == 1;
  const std::size_t n = std::size_t(payload[1]) | std::size_t(payload[2]) << 8;
  std::size_t at = 3;
  for (std::size_t i = 0; i < n; ++i) {
    if (at >= payload.size()) return false;
    const std::size_t len = payload[at++];
    if (payload.size() - at < len) return false;
    std::string name(reinterpret_cast<const char*>(payload.data() + at), len);
    if (!valid_link_name(name)) return false;
    if (!v.members.empty() && !(v.members.back() < name)) return false;  // sorted, unique
    v.members.push_back(std::move(name));
    at += len;
  }
  if (at != payload.size()) return false;
  out = std::move(v);
  return true;
}

std::vector<std::uint8_t> encode_group_id(std::uint64_t group) {
  std::vector<std::uint8_t> out;
  for (int i = 0; i < 8; ++i) out.push_back(std::uint8_t(group >> (8 * i)));
  return out;
}

bool decode_group_id(std::span<const std::uint8_t> payload, std::uint64_t& group) {
  if (payload.size() != 8) return false;
  group = 0;
  for (int i = 0; i < 8; ++i) group |= std::uint64_t(payload[std::size_t(i)]) << (8 * i);
  return true;
}

}  // namespace repl
