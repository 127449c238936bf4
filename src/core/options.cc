#include "src/core/options.h"

#include <cctype>
#include <cstdlib>

namespace core {

bool valid_cpu_list(std::string_view s) {
  if (s.empty()) return false;
  std::size_t i = 0;
  for (;;) {
    auto number = [&](long& v) {
      const std::size_t start = i;
      v = 0;
      while (i < s.size() && s[i] >= '0' && s[i] <= '9' && i - start < 6) v = v * 10 + (s[i++] - '0');
      return i > start && (i == s.size() || s[i] < '0' || s[i] > '9');
    };
    long lo = 0, hi = 0;
    if (!number(lo)) return false;
    if (i < s.size() && s[i] == '-') {
      ++i;
      if (!number(hi) || hi < lo) return false;
    }
    if (i == s.size()) return true;
    if (s[i] != ',') return false;
    ++i;
  }
}

bool parse_route_url(const std::string& url, std::string& host, int& port) {
  std::string rest = url;
  if (const auto scheme = rest.find("://"); scheme != std::string::npos) rest = rest.substr(scheme + 3);
  if (const auto at = rest.rfind('@'); at != std::string::npos) rest = rest.substr(at + 1);  // user:pass
  while (!rest.empty() && rest.back() == '/') rest.pop_back();
  const auto colon = rest.rfind(':');
  if (colon == std::string::npos || colon == 0) return false;
  std::string h = rest.substr(0, colon);
  const std::string p = rest.substr(colon + 1);
  if (h.size() >= 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
  if (p.empty() || p.size() > 5 || p.find_first_not_of("0123456789") != std::string::npos) {
    if (p != "-1") return false;
  }
  const int n = std::stoi(p);
  if (n > 65535) return false;
  host = h;
  port = n;
  return true;
}

void route_url_credentials(const std::string& url, std::string& user, std::string& pass) {
  user.clear();
  pass.clear();
  std::string rest = url;
  if (const auto scheme = rest.find("://"); scheme != std::string::npos) rest = rest.substr(scheme + 3);
  const auto at = rest.rfind('@');
  if (at == std::string::npos) return;
  const std::string info = rest.substr(0, at);
  auto decode = [](std::string_view in) {
    std::string out;
    for (std::size_t i = 0; i < in.size(); ++i) {
      const bool escape = in[i] == '%' && i + 2 < in.size() && std::isxdigit((unsigned char)in[i + 1]) &&
                          std::isxdigit((unsigned char)in[i + 2]);
      if (escape) {
        out.push_back(char(std::stoi(std::string(in.substr(i + 1, 2)), nullptr, 16)));
        i += 2;
      } else {
        out.push_back(in[i]);
      }
    }
    return out;
  };
  const auto colon = info.find(':');
  user = decode(std::string_view(info).substr(0, colon));
  if (colon != std::string::npos) pass = decode(std::string_view(info).substr(colon + 1));
}

std::string default_store_dir() {
  std::string base = "/tmp";
  if (const char* t = std::getenv("TMPDIR"); t != nullptr && *t != '\0') base = t;
  while (base.size() > 1 && base.back() == '/') base.pop_back();
  return base + "/peregrine/jetstream";
}

}  // namespace core
