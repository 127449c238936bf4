#include "src/core/config_file.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace core {

namespace {

char lower(char c) noexcept { return (c >= 'A' && c <= 'Z') ? char(c - 'A' + 'a') : c; }

bool iequals(std::string_view a, std::string_view b) noexcept {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

bool is_space(char c) noexcept { return c == ' ' || c == '\t'; }
bool is_nl(char c) noexcept { return c == '\n' || c == '\r'; }

constexpr int kMaxIncludeDepth = 10;
constexpr int kMaxNesting = 64;

// A later definition replaces an earlier one and moves to the end, so file order stays
// "last wins" also for keys that differ only in case (option lookup ignores case).
void set_entry(config_value& map, std::string key, config_value v) {
  for (auto it = map.entries.begin(); it != map.entries.end(); ++it) {
    if (it->first == key) {
      v.used_as_variable = v.used_as_variable || it->second.used_as_variable;
      map.entries.erase(it);
      break;
    }
  }
  map.entries.emplace_back(std::move(key), std::move(v));
}

class parser {
 public:
  parser(std::string_view text, const std::string& file, int include_depth)
      : _text(text), _file(file), _include_depth(include_depth) {}

  bool parse(config_value& root, std::string& error) {
    root = config_value{};
    root.type = config_value::kind::map;
    root.file = _file;
    root.line = 1;
    root.col = 1;
    _scopes.push_back(&root);
    bool ok;
    skip_blank();
    if (peek() == '{') {  // a whole file wrapped in braces (JSON style)
      advance();
      ok = map_body(root, '}');
      if (ok) {
        skip_blank();
        if (!at_end()) ok = fail("unexpected content after the closing '}'");
      }
    } else {
      ok = map_body(root, 0);
    }
    if (!ok) error = _error;
    return ok;
  }

 private:
  std::string_view _text;
  const std::string& _file;
  int _include_depth;
  std::size_t _pos = 0;
  int _line = 1;
  int _col = 1;
  int _nesting = 0;
  std::vector<config_value*> _scopes;  // maps being built, outermost first (variable lookup)
  std::string _error;

  bool at_end() const noexcept { return _pos >= _text.size(); }
  char peek(std::size_t ahead = 0) const noexcept {
    return _pos + ahead < _text.size() ? _text[_pos + ahead] : '\0';
  }
  void advance() noexcept {
    if (at_end()) return;
    if (_text[_pos] == '\n') {
      ++_line;
      _col = 1;
    } else {
      ++_col;
    }
    ++_pos;
  }
  bool fail(const std::string& reason) { return fail_at(_line, _col, reason); }
  bool fail_at(int line, int col, const std::string& reason) {
    _error = _file + ":" + std::to_string(line) + ":" + std::to_string(col) + ": " + reason;
    return false;
  }
  static std::string show(char c) {
    if (c == '\0') return "end of file";
    if (c == '\n' || c == '\r') return "end of line";
    return std::string("'") + c + "'";
  }

  bool at_comment() const noexcept { return peek() == '#' || (peek() == '/' && peek(1) == '/'); }
  void skip_comment() noexcept {
    while (!at_end() && !is_nl(peek())) advance();
  }
  void skip_spaces() noexcept {
    while (is_space(peek())) advance();
  }
  // Whitespace, newlines and comments.
  void skip_blank() noexcept {
    for (;;) {
      if (is_space(peek()) || is_nl(peek())) {
        advance();
      } else if (at_comment()) {
        skip_comment();
      } else {
        return;
      }
    }
  }

  // Entries until `closing` ('}' or 0 for end of file). Entries are separated by newlines,
  // ',' or ';'.
  bool map_body(config_value& map, char closing) {
    for (;;) {
      skip_blank();
      while (peek() == ',' || peek() == ';') {
        advance();
        skip_blank();
      }
      if (at_end()) {
        if (closing) return fail("unexpected end of file, expected '}'");
        return true;
      }
      if (closing && peek() == closing) {
        advance();
        return true;
      }
      if (!entry(map)) return false;
      // After a value: spaces, then a comment, separator, newline, or the closing brace.
      skip_spaces();
      if (at_comment()) skip_comment();
      const char c = peek();
      if (at_end() || is_nl(c) || c == ',' || c == ';' || (closing && c == closing)) continue;
      return fail("unexpected " + show(c) + " after value, expected a new line, ',' or ';'");
    }
  }

  bool key(std::string& out, bool& quoted) {
    const char q = peek();
    if (q == '"' || q == '\'') {
      const int line = _line, col = _col;
      advance();
      while (!at_end() && peek() != q && !is_nl(peek())) {
        out += peek();
        advance();
      }
      if (peek() != q) return fail_at(line, col, "unterminated quoted key");
      advance();
      quoted = true;
      return true;
    }
    while (!at_end()) {
      const char c = peek();
      if (is_space(c) || is_nl(c) || c == ':' || c == '=' || c == '{' || c == '[' || c == ',' ||
          c == ';' || c == '}' || c == ']' || c == '#' || c == '"' || c == '\'') {
        break;
      }
      out += c;
      advance();
    }
    if (out.empty()) return fail("expected a key but found " + show(peek()));
    return true;
  }

  bool entry(config_value& map) {
    const int kline = _line, kcol = _col;
    std::string name;
    bool quoted = false;
    if (!key(name, quoted)) return false;
    const bool spaced = is_space(peek());
    skip_spaces();
    if (!quoted && iequals(name, "include") && spaced && peek() != ':' && peek() != '=' &&
        !is_nl(peek()) && !at_end()) {
      return include(map);
    }
    if (peek() == ':' || peek() == '=') {
      advance();
      skip_spaces();
    } else if (!spaced && peek() != '{' && peek() != '[') {
      return fail("expected ':', '=' or a space after key '" + name + "'");
    }
    if (at_end() || is_nl(peek()) || at_comment() || peek() == ',' || peek() == ';' ||
        peek() == '}') {
      return fail_at(kline, kcol, "missing value for key '" + name + "'");
    }
    config_value v;
    if (!value(v)) return false;
    v.key_line = kline;
    v.key_col = kcol;
    set_entry(map, std::move(name), std::move(v));
    return true;
  }

  bool include(config_value& map) {
    const int line = _line, col = _col;
    std::string path;
    const char q = peek();
    if (q == '"' || q == '\'') {
      advance();
      while (!at_end() && peek() != q && !is_nl(peek())) {
        path += peek();
        advance();
      }
      if (peek() != q) return fail_at(line, col, "unterminated include path");
      advance();
    } else {
      while (!at_end() && !is_space(peek()) && !is_nl(peek()) && peek() != ';' && peek() != ',' &&
             peek() != '}') {
        path += peek();
        advance();
      }
    }
    if (path.empty()) return fail_at(line, col, "include needs a file name");
    if (_include_depth >= kMaxIncludeDepth) {
      return fail_at(line, col, "includes nested too deeply (an include cycle?)");
    }
    std::filesystem::path p(path);
    if (p.is_relative()) p = std::filesystem::path(_file).parent_path() / p;
    std::ifstream in(p, std::ios::binary);
    if (!in) {
      return fail_at(line, col,
                     "cannot read include file '" + p.string() + "': " + std::strerror(errno));
    }
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string text = ss.str();
    const std::string inc_file = p.string();
    config_value sub;
    parser inner(text, inc_file, _include_depth + 1);
    if (!inner.parse(sub, _error)) return false;  // the inner error names the included file
    for (auto& [k, v] : sub.entries) set_entry(map, k, std::move(v));
    return true;
  }

  bool value(config_value& v) {
    v.file = _file;
    v.line = _line;
    v.col = _col;
    const char c = peek();
    if (c == '{' || c == '[') {
      if (++_nesting > kMaxNesting) return fail("maps and arrays nested too deeply");
      advance();
      bool ok;
      if (c == '{') {
        v.type = config_value::kind::map;
        _scopes.push_back(&v);
        ok = map_body(v, '}');
        _scopes.pop_back();
      } else {
        v.type = config_value::kind::array;
        ok = array_body(v);
      }
      --_nesting;
      return ok;
    }
    if (c == '"') return dq_string(v);
    if (c == '\'') {
      advance();
      while (!at_end() && peek() != '\'') {
        v.text += peek();
        advance();
      }
      if (at_end()) return fail_at(v.line, v.col, "unterminated string");
      advance();
      v.quoted = true;
      return true;
    }
    // Unquoted: runs to whitespace or a structural character.
    while (!at_end()) {
      const char u = peek();
      if (is_space(u) || is_nl(u) || u == ',' || u == ';' || u == ']' || u == '}') break;
      v.text += u;
      advance();
    }
    if (v.text.empty()) return fail("expected a value but found " + show(peek()));
    if (v.text.size() > 1 && v.text[0] == '$') return variable(v);
    return true;
  }

  bool dq_string(config_value& v) {
    advance();
    for (;;) {
      if (at_end()) return fail_at(v.line, v.col, "unterminated string");
      const char c = peek();
      if (c == '"') {
        advance();
        break;
      }
      if (c != '\\') {
        v.text += c;
        advance();
        continue;
      }
      advance();
      const char e = peek();
      switch (e) {
        case 't': v.text += '\t'; break;
        case 'n': v.text += '\n'; break;
        case 'r': v.text += '\r'; break;
        case '"': v.text += '"'; break;
        case '\\': v.text += '\\'; break;
        case 'x': {
          advance();
          const char h[3] = {peek(), peek(1), 0};
          char* endp = nullptr;
          const long b = std::strtol(h, &endp, 16);
          if (endp != h + 2) return fail("expected two hex digits after '\\x'");
          v.text += char(b);
          advance();
          break;
        }
        default:
          return fail("invalid escape " + show(e) + " (allowed: \\t \\n \\r \\\" \\\\ \\xHH)");
      }
      advance();
    }
    v.quoted = true;
    return true;
  }

  // Values separated by ',' or newlines; a trailing ',' is allowed.
  bool array_body(config_value& arr) {
    for (;;) {
      skip_blank();
      if (at_end()) return fail("unexpected end of file, expected ']'");
      if (peek() == ']') {
        advance();
        return true;
      }
      if (peek() == ',') return fail("unexpected ',' in array");
      config_value item;
      if (!value(item)) return false;
      arr.items.push_back(std::move(item));
      skip_spaces();
      if (at_comment()) skip_comment();
      if (peek() == ',') {
        advance();
      } else if (peek() != ']' && !is_nl(peek())) {
        return fail("unexpected " + show(peek()) + " in array, expected ',' or ']'");
      }
    }
  }

  // $NAME: a key defined earlier in an enclosing map, else the environment.
  bool variable(config_value& v) {
    const std::string name = v.text.substr(1);
    for (auto s = _scopes.rbegin(); s != _scopes.rend(); ++s) {
      for (auto& [k, def] : (*s)->entries) {
        if (k != name) continue;
        def.used_as_variable = true;
        const int line = v.line, col = v.col;
        v = def;
        v.used_as_variable = false;
        v.file = _file;
        v.line = line;
        v.col = col;
        return true;
      }
    }
    if (const char* env = std::getenv(name.c_str())) {
      v.text = env;  // taken as an unquoted scalar, so numbers and booleans still convert
      return true;
    }
    return fail_at(v.line, v.col, "variable '$" + name + "' is not defined");
  }
};

}  // namespace

const config_value* config_value::find(std::string_view key) const noexcept {
  for (auto it = entries.rbegin(); it != entries.rend(); ++it) {
    if (iequals(it->first, key)) return &it->second;
  }
  return nullptr;
}

std::string config_value::where() const {
  return file + ":" + std::to_string(line) + ":" + std::to_string(col);
}

std::string config_value::key_where() const {
  return file + ":" + std::to_string(key_line) + ":" + std::to_string(key_col);
}

bool parse_config_text(std::string_view text, const std::string& file, config_value& root,
                       std::string& error) {
  parser p(text, file, 0);
  return p.parse(root, error);
}

bool parse_config_file(const std::string& path, config_value& root, std::string& error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = path + ": cannot open config file: " + std::strerror(errno);
    return false;
  }
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_config_text(ss.str(), path, root, error);
}

bool parse_size(std::string_view s, std::int64_t& out) noexcept {
  std::size_t i = 0;
  const bool neg = !s.empty() && s[0] == '-';
  if (neg) ++i;
  const std::size_t digits_start = i;
  std::int64_t n = 0;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
    if (__builtin_mul_overflow(n, 10, &n) || __builtin_add_overflow(n, s[i] - '0', &n)) return false;
    ++i;
  }
  if (i == digits_start) return false;
  std::string suf;
  for (; i < s.size(); ++i) suf += lower(s[i]);
  std::int64_t mul = 1;
  if (!suf.empty()) {
    const char unit = suf[0];
    const std::string rest = suf.substr(1);
    int power;
    switch (unit) {
      case 'k': power = 1; break;
      case 'm': power = 2; break;
      case 'g': power = 3; break;
      case 't': power = 4; break;
      default: return false;
    }
    std::int64_t base;
    if (rest.empty()) {
      base = 1000;
    } else if (rest == "b" || rest == "i" || rest == "ib") {
      base = 1024;
    } else {
      return false;
    }
    for (int p = 0; p < power; ++p) mul *= base;
  }
  if (__builtin_mul_overflow(n, mul, &n)) return false;
  out = neg ? -n : n;
  return true;
}

bool parse_duration_ms(std::string_view s, std::int64_t& out) noexcept {
  if (s.empty()) return false;
  // A bare number: seconds (nats-server's integer timeouts), fractions allowed.
  {
    std::string tmp(s);
    char* end = nullptr;
    errno = 0;
    const double secs = std::strtod(tmp.c_str(), &end);
    if (end == tmp.c_str() + tmp.size() && (tmp[0] >= '0' && tmp[0] <= '9')) {
      if (errno != 0 || !std::isfinite(secs) || secs > 9.2e15) return false;
      out = static_cast<std::int64_t>(secs * 1000.0);
      return true;
    }
  }
  double total_ns = 0;
  std::size_t i = 0;
  while (i < s.size()) {
    const std::size_t start = i;
    while (i < s.size() && ((s[i] >= '0' && s[i] <= '9') || s[i] == '.')) ++i;
    if (i == start) return false;
    const std::string num(s.substr(start, i - start));
    char* end = nullptr;
    const double v = std::strtod(num.c_str(), &end);
    if (end != num.c_str() + num.size()) return false;
    const std::size_t ustart = i;
    while (i < s.size() && !((s[i] >= '0' && s[i] <= '9') || s[i] == '.')) ++i;
    const std::string_view unit = s.substr(ustart, i - ustart);
    double scale;
    if (unit == "ns") {
      scale = 1;
    } else if (unit == "us" || unit == "\xC2\xB5s" || unit == "\xCE\xBCs") {
      scale = 1e3;
    } else if (unit == "ms") {
      scale = 1e6;
    } else if (unit == "s") {
      scale = 1e9;
    } else if (unit == "m") {
      scale = 60e9;
    } else if (unit == "h") {
      scale = 3600e9;
    } else {
      return false;
    }
    total_ns += v * scale;
  }
  if (!std::isfinite(total_ns) || total_ns > 9.2e18) return false;
  out = static_cast<std::int64_t>(total_ns / 1e6);
  return true;
}

bool parse_bool(std::string_view s, bool& out) noexcept {
  for (const char* t : {"true", "yes", "on"}) {
    if (iequals(s, t)) {
      out = true;
      return true;
    }
  }
  for (const char* f : {"false", "no", "off"}) {
    if (iequals(s, f)) {
      out = false;
      return true;
    }
  }
  return false;
}

}  // namespace core
