#pragma once
// The subjects every stream has claimed, kept between API calls (pure, no threads), so a
// STREAM.CREATE or UPDATE checks its subjects for overlaps with the other streams in time
// that follows its own subjects, not the number of streams: building an index of every
// stream's subjects per create cost ~10 ms at 10,000 streams (issue 15).
//
// A counting token trie: a literal token follows one branch plus the '*' and '>' entries at
// that depth; only a '*' in the query fans out over the literal branches at its depth, and a
// branch with nothing below it is skipped.
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

  // The stream's subjects from now on (replacing what it had).
  void set(const std::string& stream, const std::vector<std::string>& subjects);
  void erase(const std::string& stream);
  // Whether some subject in `subjects` overlaps (some subject matches both) a subject of a
  // stream other than `except`.
  bool overlaps(const std::vector<std::string>& subjects, const std::string& except);
  std::size_t streams() const { return _by_stream.size(); }

 private:
  struct node;
  void add(std::string_view subject, int delta);

  std::unique_ptr<node> _root;
  std::unordered_map<std::string, std::vector<std::string>> _by_stream;
};

}  // namespace js
