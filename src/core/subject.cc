#include "src/core/subject.h"

namespace core {

namespace {

// Characters nats-server refuses inside a token.
constexpr bool is_bad_char(char c) noexcept {
  return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f';
}

// Yields tokens left to right; `done` turns true once the last token was returned (so
// "a." yields "a" and then an empty final token).
struct tokenizer {
  std::string_view rest;
  bool done = false;
  std::string_view next() noexcept {
    const auto dot = rest.find('.');
    std::string_view tok;
    if (dot == std::string_view::npos) {
      tok = rest;
      rest = {};
      done = true;
    } else {
      tok = rest.substr(0, dot);
      rest.remove_prefix(dot + 1);
    }
    return tok;
  }
};

bool is_pwc(std::string_view t) noexcept { return t.size() == 1 && t[0] == '*'; }
bool is_fwc(std::string_view t) noexcept { return t.size() == 1 && t[0] == '>'; }

// Tokens non-empty and free of whitespace; wildcards are not interpreted. This is the
// shape a published subject must have to be routed at all.
bool well_formed(std::string_view s) noexcept {
  if (s.empty()) return false;
  char prev = '.';
  for (char c : s) {
    if (is_bad_char(c)) return false;
    if (c == '.' && prev == '.') return false;
    prev = c;
  }
  return prev != '.';
}

}  // namespace

bool valid_subject(std::string_view s) noexcept {
  if (!well_formed(s)) return false;
  tokenizer tk{s};
  while (!tk.done) {
    const auto t = tk.next();
    if (is_fwc(t) && !tk.done) return false;  // '>' only as the last token
  }
  return true;
}

bool valid_literal_subject(std::string_view s) noexcept {
  if (!well_formed(s)) return false;
  tokenizer tk{s};
  while (!tk.done) {
    const auto t = tk.next();
    if (is_pwc(t) || is_fwc(t)) return false;
  }
  return true;
}

bool valid_queue_name(std::string_view q) noexcept {
  if (q.empty()) return false;
  for (char c : q) {
    if (is_bad_char(c)) return false;
  }
  return true;
}

bool subject_matches(std::string_view filter, std::string_view subject) noexcept {
  if (!valid_subject(filter) || !well_formed(subject)) return false;
  tokenizer f{filter}, s{subject};
  while (!f.done) {
    const auto ft = f.next();
    if (s.done) return false;  // subject ran out of tokens
    const auto st = s.next();
    if (is_fwc(ft)) return true;  // '>' takes this and every remaining token
    if (!is_pwc(ft) && ft != st) return false;
  }
  return s.done;
}

bool subject_is_subset(std::string_view a, std::string_view b) noexcept {
  if (!valid_subject(a) || !valid_subject(b)) return false;
  tokenizer ta{a}, tb{b};
  while (!ta.done) {
    const auto x = ta.next();
    if (tb.done) return false;  // `a` is longer than `b` can be
    const auto y = tb.next();
    if (is_fwc(y)) return true;
    if (is_fwc(x)) return false;  // `a` spans any length, `b` does not
    if (is_pwc(y)) continue;
    if (is_pwc(x) || x != y) return false;
  }
  return tb.done;
}

bool subjects_overlap(std::string_view a, std::string_view b) noexcept {
  if (!valid_subject(a) || !valid_subject(b)) return false;
  tokenizer ta{a}, tb{b};
  while (!ta.done && !tb.done) {
    const auto x = ta.next();
    const auto y = tb.next();
    if (is_fwc(x) || is_fwc(y)) return true;
    if (is_pwc(x) || is_pwc(y)) continue;
    if (x != y) return false;
  }
  return ta.done && tb.done;
}

std::size_t subject_token_count(std::string_view s) noexcept {
  if (s.empty()) return 0;
  std::size_t n = 1;
  for (char c : s) n += (c == '.');
  return n;
}

std::vector<std::string_view> split_tokens(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  for (;;) {
    const std::size_t at = s.find(sep, start);
    out.push_back(s.substr(start, at == std::string_view::npos ? std::string_view::npos : at - start));
    if (at == std::string_view::npos) return out;
    start = at + 1;
  }
}

}  // namespace core
