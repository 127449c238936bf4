#include "src/core/sublist.h"

#include <algorithm>
#include <array>
#include <functional>
#include <string>
#include <unordered_map>

#include "src/base/inc_map.h"
#include "src/core/subject.h"

namespace core {

namespace {

// Transparent hash so lookups by string_view do not build a std::string.
struct sv_hash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const noexcept {
    return std::hash<std::string_view>{}(s);
  }
};

template <typename V>
using sv_map = std::unordered_map<std::string, V, sv_hash, std::equal_to<>>;

bool is_pwc(std::string_view t) noexcept { return t.size() == 1 && t[0] == '*'; }
bool is_fwc(std::string_view t) noexcept { return t.size() == 1 && t[0] == '>'; }

// A subject's first token and what follows it (empty after the last token): each walk down
// the trie takes one a level.
struct token_step {
  std::string_view tok;
  std::string_view after;
  bool last;
};
token_step first_token(std::string_view rest) noexcept {
  const auto dot = rest.find('.');
  if (dot == std::string_view::npos) return {rest, {}, true};
  return {rest.substr(0, dot), rest.substr(dot + 1), false};
}

// A published subject is routable when its tokens are non-empty and free of whitespace;
// '*' and '>' inside it are ordinary tokens.
bool routable(std::string_view s) noexcept {
  if (s.empty()) return false;
  char prev = '.';
  for (char c : s) {
    if (c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f') return false;
    if (c == '.' && prev == '.') return false;
    prev = c;
  }
  return prev != '.';
}

bool has_wildcard(std::string_view filter) noexcept {
  std::size_t start = 0;
  while (start <= filter.size()) {
    auto dot = filter.find('.', start);
    if (dot == std::string_view::npos) dot = filter.size();
    const auto tok = filter.substr(start, dot - start);
    if (is_pwc(tok) || is_fwc(tok)) return true;
    start = dot + 1;
  }
  return false;
}

// subject_matches without the validation: `filter` was validated on insert and cache keys
// are routable. Cache invalidation runs this over every cached subject.
bool filter_matches(std::string_view filter, std::string_view subject) noexcept {
  std::size_t i = 0, j = 0;
  for (;;) {
    auto fe = filter.find('.', i);
    if (fe == std::string_view::npos) fe = filter.size();
    if (j > subject.size()) return false;  // subject has no tokens left
    auto se = subject.find('.', j);
    if (se == std::string_view::npos) se = subject.size();
    const auto ft = filter.substr(i, fe - i);
    if (is_fwc(ft)) return true;
    if (!is_pwc(ft) && ft != subject.substr(j, se - j)) return false;
    i = fe + 1;
    j = se + 1;
    if (i > filter.size()) return j > subject.size();
  }
}

struct node;

// A level's literal children. A stream's 74,000 subjects `b.<n>.x` put 74,000 under one
// level in a burst; inc_map grows a few buckets per insert rather than rehashing all of them
// in one (issue 15 item 5).
using lit_map = base::inc_map<std::string, std::unique_ptr<node>, sv_hash, std::equal_to<>>;

struct level {
  lit_map lits;
  std::unique_ptr<node> pwc;  // '*'
  std::unique_ptr<node> fwc;  // '>'
  bool empty() const noexcept { return lits.empty() && !pwc && !fwc; }
};

struct queue_group {
  std::string name;
  std::vector<subscription*> members;
};

struct node {
  std::unique_ptr<level> next;
  std::vector<subscription*> plain;
  std::vector<queue_group> queues;
  bool empty() const noexcept {
    return plain.empty() && queues.empty() && (!next || next->empty());
  }
};

void add_node(const node& n, match_result& r) {
  r.plain.insert(r.plain.end(), n.plain.begin(), n.plain.end());
  for (const auto& g : n.queues) r.queues.push_back(g.members);
}

// Walks the trie for a literal subject: iterates down literal children and recurses only
// into '*' branches, so a subject without wildcard subscribers never recurses.
void collect(const level* l, std::string_view rest, match_result& r) {
  for (;;) {
    const auto [tok, after, last] = first_token(rest);
    if (l->fwc) add_node(*l->fwc, r);
    if (l->pwc) {
      if (last) {
        add_node(*l->pwc, r);
      } else if (l->pwc->next) {
        collect(l->pwc->next.get(), after, r);
      }
    }
    const auto it = l->lits.find(tok);
    if (it == l->lits.end()) return;
    const node* n = it->second.get();
    if (last) {
      add_node(*n, r);
      return;
    }
    if (!n->next) return;
    l = n->next.get();
    rest = after;
  }
}

bool node_has_subs(const node& n) noexcept { return !n.plain.empty() || !n.queues.empty(); }

bool any_match(const level* l, std::string_view rest) {
  for (;;) {
    const auto [tok, after, last] = first_token(rest);
    if (l->fwc && node_has_subs(*l->fwc)) return true;
    if (l->pwc) {
      if (last) {
        if (node_has_subs(*l->pwc)) return true;
      } else if (l->pwc->next && any_match(l->pwc->next.get(), after)) {
        return true;
      }
    }
    const auto it = l->lits.find(tok);
    if (it == l->lits.end()) return false;
    const node* n = it->second.get();
    if (last) return node_has_subs(*n);
    if (!n->next) return false;
    l = n->next.get();
    rest = after;
  }
}

}  // namespace

struct sublist::impl {
  // A cached result and the change generation up to which it is known to be current.
  struct cached {
    match_result r;
    std::uint64_t gen = 0;
  };
  // Wildcard changes since the cache was last emptied are checked lazily, on a hit: a
  // wildcard insert scanning every cached subject cost ~0.2 ms at 4,096 entries, several
  // times per stream + consumer create (issue 15 item 7). After this many the cache is
  // dropped instead, so a hit checks at most this many filters once.
  static constexpr std::size_t kMaxPending = 64;

  level root;
  std::size_t count = 0;
  std::size_t nodes = 0;
  std::size_t cache_max;
  sv_map<cached> cache;
  std::vector<std::string> pending;  // pending[i] is change base_gen + i + 1
  std::uint64_t base_gen = 0;
  std::uint64_t checks = 0;
  match_result scratch;  // result storage when the cache is off, the subject unroutable or new
  // Admission: a subject is cached on its second miss while its hash is still here. Subjects
  // seen once (every ack subject, unique inboxes) would otherwise each cost a string and a
  // node allocated, a result built and an eviction, and push the repeating subjects out.
  static constexpr std::size_t kSeenSlots = 4096;
  std::array<std::size_t, kSeenSlots> seen{};

  explicit impl(std::size_t max) : cache_max(max) {}
  std::uint64_t gen() const noexcept { return base_gen + pending.size(); }

  // A literal filter can only affect the entry for that exact subject (dropped now); a
  // wildcard one is queued for the hits to check.
  void invalidate(std::string_view filter) {
    if (cache.empty()) return;
    if (!has_wildcard(filter)) {
      const auto it = cache.find(filter);
      if (it != cache.end()) cache.erase(it);
      return;
    }
    if (pending.size() >= kMaxPending) {
      cache.clear();
      base_gen = gen();
      pending.clear();
      return;
    }
    pending.emplace_back(filter);
  }

  // Brings a hit up to date with the wildcard changes made since it was computed.
  match_result& freshen(std::string_view subject, cached& c) {
    const std::uint64_t now = gen();
    bool stale = false;
    for (std::uint64_t g = c.gen; g < now && !stale; ++g) {
      ++checks;
      stale = filter_matches(pending[g - base_gen], subject);
    }
    if (stale) {
      c.r.plain.clear();
      c.r.queues.clear();
      collect(&root, subject, c.r);
    }
    c.gen = now;
    return c.r;
  }

  // Bounded cache: when full, drop a quarter of it (arbitrary entries) so the cost of
  // eviction is amortised over many misses.
  void make_room() {
    if (cache.size() < cache_max) return;
    const std::size_t target = cache_max - (cache_max + 3) / 4;
    while (cache.size() > target) cache.erase(cache.begin());
  }
};

sublist::sublist(std::size_t cache_max) : _impl(std::make_unique<impl>(cache_max)) {}
sublist::~sublist() = default;

base::status sublist::insert(subscription* s) {
  if (s == nullptr || !valid_subject(s->subject)) return base::errc::invalid_argument;
  if (!s->queue.empty() && !valid_queue_name(s->queue)) return base::errc::invalid_argument;
  auto& im = *_impl;
  level* l = &im.root;
  node* n = nullptr;
  std::string_view rest = s->subject;
  for (;;) {
    const auto [tok, after, last] = first_token(rest);
    std::unique_ptr<node>* slot;
    if (is_pwc(tok)) {
      slot = &l->pwc;
    } else if (is_fwc(tok)) {
      slot = &l->fwc;
    } else {
      auto it = l->lits.find(tok);
      if (it == l->lits.end()) it = l->lits.emplace(std::string(tok), nullptr).first;
      slot = &it->second;
    }
    if (!*slot) {
      *slot = std::make_unique<node>();
      ++im.nodes;
    }
    n = slot->get();
    if (last) break;
    if (!n->next) n->next = std::make_unique<level>();
    l = n->next.get();
    rest = after;
  }
  if (s->queue.empty()) {
    n->plain.push_back(s);
  } else {
    auto g = std::find_if(n->queues.begin(), n->queues.end(),
                          [&](const queue_group& q) { return q.name == s->queue; });
    if (g == n->queues.end()) {
      n->queues.push_back(queue_group{s->queue, {}});
      g = n->queues.end() - 1;
    }
    g->members.push_back(s);
  }
  ++im.count;
  im.invalidate(s->subject);
  if (_on_change) _on_change();
  return {};
}

bool sublist::remove(subscription* s) {
  if (s == nullptr || !valid_subject(s->subject)) return false;
  auto& im = *_impl;
  // The path from the root: the level holding each node and the token that names it.
  struct step {
    level* l;
    std::string_view tok;
  };
  std::vector<step> path;
  level* l = &im.root;
  node* n = nullptr;
  std::string_view rest = s->subject;
  for (;;) {
    const auto [tok, after, last] = first_token(rest);
    if (is_pwc(tok)) {
      n = l->pwc.get();
    } else if (is_fwc(tok)) {
      n = l->fwc.get();
    } else {
      const auto it = l->lits.find(tok);
      n = it == l->lits.end() ? nullptr : it->second.get();
    }
    if (n == nullptr) return false;
    path.push_back({l, tok});
    if (last) break;
    if (!n->next) return false;
    l = n->next.get();
    rest = after;
  }

  bool found = false;
  if (s->queue.empty()) {
    const auto it = std::find(n->plain.begin(), n->plain.end(), s);
    if (it != n->plain.end()) {
      *it = n->plain.back();  // order within a node carries no meaning
      n->plain.pop_back();
      found = true;
    }
  } else {
    const auto g = std::find_if(n->queues.begin(), n->queues.end(),
                                [&](const queue_group& q) { return q.name == s->queue; });
    if (g != n->queues.end()) {
      const auto it = std::find(g->members.begin(), g->members.end(), s);
      if (it != g->members.end()) {
        g->members.erase(it);
        if (g->members.empty()) n->queues.erase(g);
        found = true;
      }
    }
  }
  if (!found) return false;
  --im.count;
  im.invalidate(s->subject);
  if (_on_change) _on_change();

  // Prune empty nodes bottom-up so long-lived servers with churning subjects stay small.
  for (auto i = path.size(); i-- > 0;) {
    level* pl = path[i].l;
    const auto tok = path[i].tok;
    std::unique_ptr<node>* slot;
    lit_map::iterator lit;
    if (is_pwc(tok)) {
      slot = &pl->pwc;
    } else if (is_fwc(tok)) {
      slot = &pl->fwc;
    } else {
      lit = pl->lits.find(tok);
      slot = &lit->second;
    }
    node* cur = slot->get();
    if (cur->next && cur->next->empty()) cur->next.reset();
    if (!cur->empty()) break;
    if (is_pwc(tok) || is_fwc(tok)) {
      slot->reset();
    } else {
      pl->lits.erase(lit);
    }
    --im.nodes;
  }
  return true;
}

const match_result& sublist::match(std::string_view subject) {
  auto& im = *_impl;
  const auto hit = im.cache.find(subject);
  if (hit != im.cache.end()) return im.freshen(subject, hit->second);
  bool admit = im.cache_max != 0 && routable(subject);
  if (admit) {
    const std::size_t h = sv_hash{}(subject) | 1;  // 0 marks an empty slot
    std::size_t& slot = im.seen[h % impl::kSeenSlots];
    admit = slot == h;
    slot = admit ? 0 : h;
  }
  if (!admit) {
    im.scratch.plain.clear();
    im.scratch.queues.clear();
    if (routable(subject)) collect(&im.root, subject, im.scratch);
    return im.scratch;
  }
  im.make_room();
  auto& c = im.cache.emplace(std::string(subject), impl::cached{}).first->second;
  c.gen = im.gen();
  collect(&im.root, subject, c.r);
  return c.r;
}

bool sublist::has_match(std::string_view subject) {
  auto& im = *_impl;
  const auto hit = im.cache.find(subject);
  if (hit != im.cache.end()) return !im.freshen(subject, hit->second).empty();
  if (!routable(subject)) return false;
  return any_match(&im.root, subject);
}

std::size_t sublist::count() const noexcept { return _impl->count; }
std::size_t sublist::cache_size() const noexcept { return _impl->cache.size(); }
std::size_t sublist::node_count() const noexcept { return _impl->nodes; }
std::uint64_t sublist::invalidation_checks() const noexcept { return _impl->checks; }

}  // namespace core
