#pragma once
// The subjects every stream has claimed, kept between API calls (pure, no threads), so a
// STREAM.CREATE or UPDATE checks its subjects for overlaps with the other streams in time
// that follows its own subjects, not the number of streams: building an index of every
// stream's subjects per create cost ~10 ms at 10,000 streams (issue 15).
//
// A counting token trie: a literal token follows one branch plus the '*' and '>' entries at
// that depth; only a '*' in the query fans out over the literal branches at its depth, and a
// branch with nothing below it is skipped.
//
// A big change (an update swapping 50,000 subjects, or a big stream leaving) goes in
// slices: set_sliced adds the new subjects and then removes the old ones a budget of trie
// steps at a time (step), so the trie holds a superset of both meanwhile. The owner thread
// holds stream changes back while busy(); a query or change made while busy finishes the
// job first, so no answer ever depends on the holding back, only latency does.
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace js {

class subject_registry {
 public:
  subject_registry();
  ~subject_registry();
  subject_registry(const subject_registry&) = delete;
  subject_registry& operator=(const subject_registry&) = delete;

  // The stream's subjects from now on (replacing what it had), all at once.
  void set(const std::string& stream, std::vector<std::string> subjects);
  void erase(const std::string& stream);
  // The same, at most `budget` trie steps now and the rest through step(); true when done.
  bool set_sliced(const std::string& stream, std::vector<std::string> subjects, std::size_t budget);
  bool erase_sliced(const std::string& stream, std::size_t budget);
  // Up to `budget` more steps of the change in flight; true when none is left.
  bool step(std::size_t budget);
  bool busy() const { return _job != nullptr; }
  // Whether some subject in `subjects` overlaps (some subject matches both) a subject of a
  // stream other than `except`.
  bool overlaps(const std::vector<std::string>& subjects, const std::string& except);
  std::size_t streams() const { return _by_stream.size(); }

 private:
  struct node;
  struct job;
  void add(std::string_view subject, int delta);
  bool start(const std::string& stream, std::vector<std::string> subjects, bool erase, std::size_t budget);

  std::unique_ptr<node> _root;
  std::unique_ptr<job> _job;
  std::unordered_map<std::string, std::vector<std::string>> _by_stream;
};

}  // namespace js
