#include "src/js/subject_registry.h"

#include <utility>

#include "src/base/inc_map.h"
#include "src/core/subject.h"

namespace js {

namespace {
struct string_hash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
};
}  // namespace

// One node per token prefix, with counts (subjects come and go with their streams).
struct subject_registry::node {
  // inc_map: 74,000 literals at one depth arrive in one sliced change; a whole-table rehash
  // inside one budgeted step held the owner's turn for milliseconds.
  base::inc_map<std::string, std::unique_ptr<node>, string_hash, std::equal_to<>> literals;
  std::unique_ptr<node> star;
  std::size_t ends = 0;   // subjects whose last token is this node's
  std::size_t gt = 0;     // subjects with '>' as the next token
  std::size_t below = 0;  // subjects with at least one more token (the '>' ones too)
  bool empty() const { return ends == 0 && below == 0; }
};

subject_registry::subject_registry() : _root(std::make_unique<node>()) {}
subject_registry::~subject_registry() = default;

void subject_registry::add(std::string_view subject, int delta) {
  // The slots walked, so a removal can free the nodes it empties, deepest first.
  std::vector<std::pair<node*, std::string_view>> path;  // (parent, token naming the child)
  node* n = _root.get();
  bool gt = false;
  for (std::string_view t : core::split_tokens(subject)) {
    n->below += delta;
    if (t == ">") {
      n->gt += delta;
      gt = true;
      break;
    }
    std::unique_ptr<node>* next = nullptr;
    if (t == "*") {
      next = &n->star;
    } else {
      auto it = n->literals.find(t);
      if (it == n->literals.end()) {
        if (delta < 0) return;  // not there (never expected: removals follow additions)
        it = n->literals.emplace(std::string(t), nullptr).first;
      }
      next = &it->second;
    }
    if (!*next) {
      if (delta < 0) return;
      *next = std::make_unique<node>();
    }
    path.emplace_back(n, t);
    n = next->get();
  }
  if (!gt) n->ends += delta;
  if (delta > 0) return;
  for (auto it = path.rbegin(); it != path.rend(); ++it) {
    node* parent = it->first;
    if (it->second == "*") {
      if (parent->star && parent->star->empty()) parent->star.reset();
    } else if (auto c = parent->literals.find(it->second); c != parent->literals.end() && c->second->empty()) {
      parent->literals.erase(c);
    }
  }
}

// A change in flight: `next` is counted in first, then `prev` (the stream's subjects until
// now, still in _by_stream) counted out; the entry is replaced (or dropped) at the end.
struct subject_registry::job {
  std::string stream;
  std::vector<std::string> next;
  const std::vector<std::string>* prev = nullptr;  // null: the stream had none
  bool erase = false;
  std::size_t added = 0, removed = 0;
};

bool subject_registry::start(const std::string& stream, std::vector<std::string> subjects, bool erase,
                             std::size_t budget) {
  step(std::size_t(-1));  // one change at a time
  auto it = _by_stream.find(stream);
  // An update that keeps the subjects (a big one keeps 74,000) costs nothing here.
  if (!erase && it != _by_stream.end() && it->second == subjects) return true;
  if (erase && it == _by_stream.end()) return true;
  _job = std::make_unique<job>();
  _job->stream = stream;
  _job->next = std::move(subjects);
  _job->prev = it == _by_stream.end() ? nullptr : &it->second;
  _job->erase = erase;
  return step(budget);
}

bool subject_registry::step(std::size_t budget) {
  if (!_job) return true;
  job& j = *_job;
  for (; budget > 0 && j.added < j.next.size(); --budget) add(j.next[j.added++], +1);
  const std::size_t old = j.prev ? j.prev->size() : 0;
  for (; budget > 0 && j.removed < old; --budget) add((*j.prev)[j.removed++], -1);
  if (j.added < j.next.size() || j.removed < old) return false;
  if (j.erase)
    _by_stream.erase(j.stream);
  else
    _by_stream[j.stream] = std::move(j.next);
  _job.reset();
  return true;
}

void subject_registry::set(const std::string& stream, std::vector<std::string> subjects) {
  set_sliced(stream, std::move(subjects), std::size_t(-1));
}

void subject_registry::erase(const std::string& stream) { erase_sliced(stream, std::size_t(-1)); }

bool subject_registry::set_sliced(const std::string& stream, std::vector<std::string> subjects, std::size_t budget) {
  return start(stream, std::move(subjects), false, budget);
}

bool subject_registry::erase_sliced(const std::string& stream, std::size_t budget) {
  return start(stream, {}, true, budget);
}

namespace {
// Depth-first over the branches the query's tokens can meet.
template <typename Node>
bool meets(const Node& n, const std::vector<std::string_view>& q, std::size_t i) {
  if (n.empty()) return false;
  if (i == q.size()) return n.ends > 0;
  if (q[i] == ">") return n.below > 0;  // every subject with at least one more token
  if (n.gt > 0) return true;            // a '>' entry takes this token and the rest
  if (n.star && meets(*n.star, q, i + 1)) return true;
  if (q[i] == "*") {
    for (const auto& [tok, child] : n.literals)
      if (meets(*child, q, i + 1)) return true;
    return false;
  }
  auto it = n.literals.find(q[i]);
  return it != n.literals.end() && meets(*it->second, q, i + 1);
}
}  // namespace

bool subject_registry::overlaps(const std::vector<std::string>& subjects, const std::string& except) {
  step(std::size_t(-1));
  // The excepted stream (an update checks against the others) steps out for the query.
  auto own = _by_stream.find(except);
  if (own != _by_stream.end())
    for (const auto& s : own->second) add(s, -1);
  bool found = false;
  for (const auto& s : subjects)
    if ((found = meets(*_root, core::split_tokens(s), 0))) break;
  if (own != _by_stream.end())
    for (const auto& s : own->second) add(s, +1);
  return found;
}

}  // namespace js
