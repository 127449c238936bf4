#include "src/core/subject_overlap.h"

#include "src/core/subject.h"

#include <algorithm>
#include <unordered_set>
#include <vector>

namespace core {
namespace {
constexpr std::size_t kNone = static_cast<std::size_t>(-1);

struct string_hash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
};

}  // namespace

// One node per token prefix. Ids are kept as minimums so a query can prune.
struct overlap_index::node {
  std::unordered_map<std::string, std::unique_ptr<node>, string_hash, std::equal_to<>> literals;
  std::unique_ptr<node> star;
  std::size_t ends_here = kNone;    // subjects whose last token is this node's
  std::size_t gt_here = kNone;      // subjects with '>' as the next token
  std::size_t below = kNone;        // any subject with at least one more token
};

overlap_index::overlap_index() : _root(std::make_unique<node>()) {}
overlap_index::~overlap_index() = default;

void overlap_index::insert(std::string_view subject, std::size_t id) {
  node* n = _root.get();
  for (std::string_view t : split_tokens(subject)) {
    n->below = std::min(n->below, id);
    if (t == ">") {
      n->gt_here = std::min(n->gt_here, id);
      return;
    }
    std::unique_ptr<node>* next = nullptr;
    if (t == "*") {
      next = &n->star;
    } else {
      auto it = n->literals.find(t);
      if (it == n->literals.end()) it = n->literals.emplace(std::string(t), nullptr).first;
      next = &it->second;
    }
    if (!*next) *next = std::make_unique<node>();
    n = next->get();
  }
  n->ends_here = std::min(n->ends_here, id);
}

namespace {
// Depth-first over the branches the query's tokens can meet; `best` only shrinks.
template <typename Node>
void search(const Node& n, const std::vector<std::string_view>& q, std::size_t i, std::size_t& best) {
  if (n.ends_here >= best && n.below >= best) return;  // nothing here can beat what we have
  if (i == q.size()) {
    best = std::min(best, n.ends_here);
    return;
  }
  if (q[i] == ">") {  // matches every subject with at least one more token
    best = std::min(best, n.below);
    return;
  }
  best = std::min(best, n.gt_here);  // a '>' entry takes this token and the rest
  if (n.star) search(*n.star, q, i + 1, best);
  if (q[i] == "*") {
    for (const auto& [tok, child] : n.literals) search(*child, q, i + 1, best);
  } else if (auto it = n.literals.find(q[i]); it != n.literals.end()) {
    search(*it->second, q, i + 1, best);
  }
}
}  // namespace

std::optional<std::size_t> overlap_index::first_overlap(std::string_view subject) const {
  std::size_t best = kNone;
  search(*_root, split_tokens(subject), 0, best);
  if (best == kNone) return std::nullopt;
  return best;
}

namespace {
bool is_literal(std::string_view s) {
  for (std::string_view t : split_tokens(s))
    if (t == "*" || t == ">") return false;
  return true;
}
using pair_t = std::pair<std::size_t, std::size_t>;
void keep_first(std::optional<pair_t>& best, pair_t p) {
  if (!best || p < *best) best = p;
}
}  // namespace

std::optional<pair_t> first_overlapping_pair(const std::vector<std::string_view>& subjects) {
  std::optional<pair_t> best;
  std::vector<bool> literal(subjects.size());
  for (std::size_t i = 0; i < subjects.size(); ++i) literal[i] = is_literal(subjects[i]);
  // Two literals: equal ones. The first occurrence pairs with the next equal one.
  {
    std::unordered_map<std::string_view, std::size_t> last;  // walking backwards: next j
    for (std::size_t i = subjects.size(); i-- > 0;) {
      if (!literal[i]) continue;
      auto [it, fresh] = last.try_emplace(subjects[i], i);
      if (!fresh) {
        keep_first(best, {i, it->second});
        it->second = i;
      }
    }
  }
  // A wildcard i before a literal j: for each literal, the earliest wildcard before it.
  {
    overlap_index earlier;
    for (std::size_t j = 0; j < subjects.size(); ++j) {
      if (!literal[j]) {
        earlier.insert(subjects[j], j);
      } else if (auto i = earlier.first_overlap(subjects[j])) {
        keep_first(best, {*i, j});
      }
    }
  }
  // Any i before a wildcard j: walking backwards, a trie of the later wildcards.
  {
    overlap_index later;
    for (std::size_t i = subjects.size(); i-- > 0;) {
      if (auto j = later.first_overlap(subjects[i])) keep_first(best, {i, *j});
      if (!literal[i]) later.insert(subjects[i], i);
    }
  }
  return best;
}

bool sets_overlap(const std::vector<std::string_view>& a, const std::vector<std::string_view>& b) {
  std::unordered_set<std::string_view> literals_of_b;
  overlap_index wild_a, wild_b;
  bool any_wild_a = false, any_wild_b = false;
  for (std::size_t i = 0; i < b.size(); ++i) {
    if (is_literal(b[i])) {
      literals_of_b.insert(b[i]);
    } else {
      wild_b.insert(b[i], i);
      any_wild_b = true;
    }
  }
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (!is_literal(a[i])) {
      wild_a.insert(a[i], i);
      any_wild_a = true;
    } else if (literals_of_b.count(a[i])) {
      return true;
    }
  }
  // Every pair with a wildcard in it: b's wildcards against all of a, a's wildcards
  // against b's literals (a literal query never fans out).
  if (any_wild_b)
    for (std::string_view s : a)
      if (wild_b.first_overlap(s)) return true;
  if (any_wild_a)
    for (std::string_view s : literals_of_b)
      if (wild_a.first_overlap(s)) return true;
  return false;
}

}  // namespace core
