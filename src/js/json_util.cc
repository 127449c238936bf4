#include "src/js/json_util.h"

#include <cctype>

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <ctime>

#include <fmt/core.h>

namespace js {

namespace {
constexpr std::int64_t kNs = 1'000'000'000;
// Seconds between 0001-01-01 and 1970-01-01: Go's zero time expressed as unix seconds.
constexpr std::int64_t kGoZeroUnix = -62135596800;

// Days from civil (Howard Hinnant's algorithm): no timegm, no locale.
std::int64_t days_from_civil(std::int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<std::int64_t>(doe) - 719468;
}

bool digits(std::string_view s, std::size_t pos, std::size_t n, int& out) {
  if (pos + n > s.size()) return false;
  out = 0;
  for (std::size_t i = pos; i < pos + n; ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    out = out * 10 + (s[i] - '0');
  }
  return true;
}
}  // namespace

std::optional<std::int64_t> parse_time(std::string_view s) {
  int y, mo, d, h, mi, se;
  if (s.size() < 20 || !digits(s, 0, 4, y) || s[4] != '-' || !digits(s, 5, 2, mo) || s[7] != '-' ||
      !digits(s, 8, 2, d) || (s[10] != 'T' && s[10] != 't') || !digits(s, 11, 2, h) || s[13] != ':' ||
      !digits(s, 14, 2, mi) || s[16] != ':' || !digits(s, 17, 2, se))
    return std::nullopt;
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || se > 60) return std::nullopt;
  std::size_t pos = 19;
  std::int64_t frac = 0;
  if (pos < s.size() && s[pos] == '.') {
    ++pos;
    std::int64_t scale = 100'000'000;
    std::size_t start = pos;
    while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9') {
      frac += (s[pos] - '0') * scale;
      scale /= 10;
      ++pos;
    }
    if (pos == start) return std::nullopt;
  }
  std::int64_t offset = 0;
  if (pos < s.size() && (s[pos] == 'Z' || s[pos] == 'z')) {
    ++pos;
  } else if (pos < s.size() && (s[pos] == '+' || s[pos] == '-')) {
    int oh, om;
    if (!digits(s, pos + 1, 2, oh) || pos + 3 >= s.size() || s[pos + 3] != ':' || !digits(s, pos + 4, 2, om))
      return std::nullopt;
    offset = (oh * 3600 + om * 60) * (s[pos] == '-' ? -1 : 1);
    pos += 6;
  } else {
    return std::nullopt;
  }
  if (pos != s.size()) return std::nullopt;
  std::int64_t secs = days_from_civil(y, static_cast<unsigned>(mo), static_cast<unsigned>(d)) * 86400 +
                      h * 3600 + mi * 60 + se - offset;
  if (secs == kGoZeroUnix && frac == 0) return 0;
  // Unix ns in an int64 spans 1677-2262; other times cannot be represented: refused, not wrapped.
  std::int64_t ns;
  if (__builtin_mul_overflow(secs, kNs, &ns) || __builtin_add_overflow(ns, frac, &ns)) return std::nullopt;
  return ns;
}

std::string base64_encode(std::string_view in) {
  static constexpr char tbl[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  std::size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    std::uint32_t v = (std::uint8_t(in[i]) << 16) | (std::uint8_t(in[i + 1]) << 8) | std::uint8_t(in[i + 2]);
    out += tbl[v >> 18];
    out += tbl[(v >> 12) & 63];
    out += tbl[(v >> 6) & 63];
    out += tbl[v & 63];
  }
  if (i + 1 == in.size()) {
    std::uint32_t v = std::uint8_t(in[i]) << 16;
    out += tbl[v >> 18];
    out += tbl[(v >> 12) & 63];
    out += "==";
  } else if (i + 2 == in.size()) {
    std::uint32_t v = (std::uint8_t(in[i]) << 16) | (std::uint8_t(in[i + 1]) << 8);
    out += tbl[v >> 18];
    out += tbl[(v >> 12) & 63];
    out += tbl[(v >> 6) & 63];
    out += '=';
  }
  return out;
}

std::optional<std::string_view> find_header(std::string_view block, std::string_view name) {
  std::size_t pos = block.find("\r\n");
  while (pos != std::string_view::npos) {
    pos += 2;
    std::size_t end = block.find("\r\n", pos);
    if (end == std::string_view::npos || end == pos) return std::nullopt;
    std::string_view line = block.substr(pos, end - pos);
    if (line.size() > name.size() && line.substr(0, name.size()) == name && line[name.size()] == ':') {
      std::string_view v = line.substr(name.size() + 1);
      while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
      while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
      return v;
    }
    pos = end;
  }
  return std::nullopt;
}

std::optional<std::uint64_t> parse_u64(std::string_view s) {
  std::uint64_t v = 0;
  if (s.empty()) return std::nullopt;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || p != s.data() + s.size()) return std::nullopt;
  return v;
}

std::string remove_header(std::string_view block, std::string_view name) {
  std::string out;
  std::size_t pos = block.find("\r\n");
  if (pos == std::string_view::npos) return std::string(block);
  out.assign(block.substr(0, pos + 2));
  for (pos += 2; pos < block.size();) {
    std::size_t end = block.find("\r\n", pos);
    if (end == std::string_view::npos) end = block.size() - 2;
    const std::string_view line = block.substr(pos, end - pos);
    if (!(line.size() > name.size() && line.substr(0, name.size()) == name && line[name.size()] == ':'))
      out.append(block.substr(pos, end + 2 - pos));
    pos = end + 2;
  }
  return out;
}

std::string append_header(std::string_view block, std::string_view name, std::string_view value) {
  std::string out;
  if (block.size() >= 4 && block.ends_with("\r\n\r\n")) {
    out.assign(block.substr(0, block.size() - 2));
  } else {
    out = "NATS/1.0\r\n";
  }
  out += name;
  out += ": ";
  out += value;
  out += "\r\n\r\n";
  return out;
}

bool write_file_atomic(const std::string& dir, const std::string& name, std::string_view content,
                       std::string& error) {
  const std::string path = dir + "/" + name, tmp = path + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  bool ok = fd >= 0;
  for (std::size_t done = 0; ok && done < content.size();) {
    const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    ok = n > 0;
    if (ok) done += std::size_t(n);
  }
  ok = ok && ::fsync(fd) == 0;
  if (fd >= 0) ::close(fd);
  ok = ok && ::rename(tmp.c_str(), path.c_str()) == 0;
  if (!ok) {
    error = fmt::format("cannot write {}: {}", path, std::strerror(errno));
    ::unlink(tmp.c_str());
    return false;
  }
  if (int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
  return true;
}

std::string ascii_lower(std::string_view s) {
  std::string o(s);
  for (auto& c : o) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return o;
}

}  // namespace js
