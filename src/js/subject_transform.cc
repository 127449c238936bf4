#include "src/js/subject_transform.h"

#include <algorithm>
#include <cctype>
#include <charconv>

#include "src/core/subject.h"

namespace js {
namespace {

constexpr std::string_view kBadDest = "invalid mapping destination: ";

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::optional<std::int64_t> to_int(std::string_view s) {
  s = trim(s);
  std::int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

bool has_space(std::string_view s) {
  return std::any_of(s.begin(), s.end(), [](char c) { return std::isspace(static_cast<unsigned char>(c)); });
}

}  // namespace

std::uint32_t fnv1a32(std::string_view data) {
  std::uint32_t h = 0x811C9DC5u;
  for (unsigned char c : data) {
    h ^= c;
    h *= 0x01000193u;
  }
  return h;
}

std::optional<subject_transform> subject_transform::parse(std::string_view src, std::string_view dest,
                                                          std::string& error) {
  subject_transform t;
  t._src = src.empty() ? ">" : std::string(src);
  t._dest = std::string(dest);
  if (!core::valid_subject(t._src)) {
    error = "invalid subject";
    return std::nullopt;
  }
  int wildcards = 0;
  for (auto tok : core::split_tokens(t._src)) {
    t._src_tokens.emplace_back(tok);
    wildcards += tok == "*";
  }
  t._src_rest = t._src_tokens.back() == ">";
  if (dest.empty()) {  // keep the subject: a filter only
    t._dest = t._src;
  }
  const auto dest_tokens = core::split_tokens(t._dest);
  // Errors about one destination token name it, as nats-server does ("... in <token>").
  std::string_view current;
  auto bad = [&](std::string_view why) {
    error = std::string(kBadDest) + std::string(why);
    if (why != "invalid transform") error += " in " + std::string(current);
    return std::nullopt;
  };
  for (std::size_t i = 0; i < dest_tokens.size(); ++i) {
    std::string_view tok = dest_tokens[i];
    current = tok;
    part p;
    if (tok.empty()) return bad("invalid transform");
    if (tok == ">") {
      if (i + 1 != dest_tokens.size() || !t._src_rest) {
        error = "invalid subject";
        return std::nullopt;
      }
      p.kind = fn::rest;
      t._parts.push_back(std::move(p));
      continue;
    }
    if (tok == "*") {
      error = "invalid subject";
      return std::nullopt;
    }
    if (tok.size() >= 2 && tok[0] == '$' && std::isdigit(static_cast<unsigned char>(tok[1]))) {
      auto n = to_int(tok.substr(1));
      if (!n) return bad("function argument is invalid or in the wrong format");
      if (*n < 1 || *n > wildcards) return bad("wildcard index out of range");
      p.kind = fn::wildcard;
      p.indexes.push_back(int(*n));
      t._parts.push_back(std::move(p));
      continue;
    }
    if (!tok.starts_with("{{") || !tok.ends_with("}}")) {
      if (tok.find("{{") != std::string_view::npos || tok.find("}}") != std::string_view::npos || has_space(tok))
        return bad("invalid transform");
      p.text = std::string(tok);
      t._parts.push_back(std::move(p));
      continue;
    }
    std::string_view body = trim(tok.substr(2, tok.size() - 4));
    const std::size_t open = body.find('(');
    if (open == std::string_view::npos || !body.ends_with(')')) return bad("invalid transform");
    std::string name(trim(body.substr(0, open)));
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    std::vector<std::string_view> args;
    const std::string_view inner = trim(body.substr(open + 1, body.size() - open - 2));
    if (!inner.empty()) {
      std::size_t j = 0;
      for (;;) {
        const std::size_t comma = inner.find(',', j);
        args.push_back(trim(inner.substr(j, comma == std::string_view::npos ? std::string_view::npos : comma - j)));
        if (comma == std::string_view::npos) break;
        j = comma + 1;
      }
    }
    auto index_arg = [&](std::string_view a) -> std::optional<int> {
      auto n = to_int(a);
      if (!n) return std::nullopt;
      return int(*n);
    };
    // arity: {min, max}; -1 = any number of wildcard indexes after the first argument
    if (name == "wildcard") {
      p.kind = fn::wildcard;
    } else if (name == "partition") {
      p.kind = fn::partition;
    } else if (name == "split") {
      p.kind = fn::split;
    } else if (name == "splitfromleft") {
      p.kind = fn::split_left;
    } else if (name == "splitfromright") {
      p.kind = fn::split_right;
    } else if (name == "slicefromleft") {
      p.kind = fn::slice_left;
    } else if (name == "slicefromright") {
      p.kind = fn::slice_right;
    } else if (name == "random") {
      p.kind = fn::random;
    } else {
      return bad("unknown function");  // left/right too: stream configs do not accept them
    }
    const std::size_t min_args = p.kind == fn::wildcard || p.kind == fn::partition || p.kind == fn::random ? 1 : 2;
    const std::size_t max_args = p.kind == fn::partition ? SIZE_MAX : min_args;
    if (args.size() < min_args) return bad("not enough arguments passed to the function");
    if (args.size() > max_args) return bad("too many arguments passed to the function");
    switch (p.kind) {
      case fn::wildcard: {
        auto n = index_arg(args[0]);
        if (!n) return bad("function argument is invalid or in the wrong format");
        if (*n < 1 || *n > wildcards) return bad("wildcard index out of range");
        p.indexes.push_back(*n);
        break;
      }
      case fn::partition:
      case fn::random: {
        auto n = to_int(args[0]);
        if (!n || *n < 0) return bad("function argument is invalid or in the wrong format");
        p.n = *n;
        for (std::size_t a = 1; a < args.size(); ++a) {
          auto idx = index_arg(args[a]);
          if (!idx) return bad("function argument is invalid or in the wrong format");
          if (*idx < 1 || *idx > wildcards) return bad("wildcard index out of range");
          p.indexes.push_back(*idx);
        }
        break;
      }
      case fn::split: {
        auto idx = index_arg(args[0]);
        if (!idx) return bad("function argument is invalid or in the wrong format");
        if (*idx < 1 || *idx > wildcards) return bad("wildcard index out of range");
        if (args[1].empty() || args[1].find('.') != std::string_view::npos || has_space(args[1]))
          return bad("function argument is invalid or in the wrong format");
        p.indexes.push_back(*idx);
        p.text = std::string(args[1]);
        break;
      }
      default: {  // split/slice from left/right: (index, count)
        auto idx = index_arg(args[0]);
        auto n = to_int(args[1]);
        if (!idx || !n) return bad("function argument is invalid or in the wrong format");
        if (*idx < 1 || *idx > wildcards) return bad("wildcard index out of range");
        p.indexes.push_back(*idx);
        p.n = *n;
        break;
      }
    }
    t._parts.push_back(std::move(p));
  }
  return t;
}

std::optional<std::string> subject_transform::apply(std::string_view subject) const {
  const auto toks = core::split_tokens(subject);
  if (toks.size() < _src_tokens.size() || (!_src_rest && toks.size() != _src_tokens.size())) return std::nullopt;
  std::vector<std::string_view> wild;
  for (std::size_t i = 0; i < _src_tokens.size(); ++i) {
    const std::string& s = _src_tokens[i];
    if (s == ">") break;
    if (s == "*") {
      wild.push_back(toks[i]);
    } else if (s != toks[i]) {
      return std::nullopt;
    }
  }
  std::string out;
  auto add = [&out](std::string_view tok) {
    if (!out.empty()) out.push_back('.');
    out.append(tok);
  };
  for (const part& p : _parts) {
    const std::string_view w = p.indexes.empty() ? std::string_view() : wild[std::size_t(p.indexes[0] - 1)];
    const auto len = std::int64_t(w.size());
    switch (p.kind) {
      case fn::literal:
        add(p.text);
        break;
      case fn::wildcard:
        add(w);
        break;
      case fn::partition: {
        std::string key;
        if (p.indexes.empty()) {
          key = std::string(subject);
        } else {
          for (int i : p.indexes) key.append(wild[std::size_t(i - 1)]);
        }
        add(std::to_string(p.n == 0 ? 0 : fnv1a32(key) % std::uint64_t(p.n)));
        break;
      }
      case fn::random:
        add(std::to_string(p.n == 0 || !rng ? 0 : rng() % std::uint64_t(p.n)));
        break;
      case fn::split: {
        std::size_t i = 0;
        for (;;) {
          const std::size_t at = w.find(p.text, i);
          const std::string_view piece = w.substr(i, at == std::string_view::npos ? std::string_view::npos : at - i);
          if (!piece.empty()) add(piece);
          if (at == std::string_view::npos) break;
          i = at + p.text.size();
        }
        break;
      }
      case fn::split_left:
      case fn::split_right: {
        const std::int64_t k = p.kind == fn::split_left ? p.n : len - p.n;
        if (p.n <= 0 || p.n >= len) {
          add(w);
        } else {
          add(w.substr(0, std::size_t(k)));
          add(w.substr(std::size_t(k)));
        }
        break;
      }
      case fn::slice_left:
      case fn::slice_right: {
        if (p.n <= 0 || p.n >= len) {
          add(w);
          break;
        }
        // From the right, the first piece takes the remainder.
        std::size_t i = 0;
        const auto k = std::size_t(p.n);
        if (p.kind == fn::slice_right && w.size() % k != 0) {
          add(w.substr(0, w.size() % k));
          i = w.size() % k;
        }
        for (; i < w.size(); i += k) add(w.substr(i, k));
        break;
      }
      case fn::rest:
        for (std::size_t i = _src_tokens.size() - 1; i < toks.size(); ++i) add(toks[i]);
        break;
    }
  }
  return out;
}

}  // namespace js
