#pragma once
// Which earlier filter subject overlaps this one? A token trie answers without comparing
// every pair (a stream config may list ~100,000 subjects): a literal token follows one
// branch plus the '*' and '>' entries at that depth; only a '*' in the query fans out over
// the literal branches at its depth, and a branch that cannot hold a smaller id is skipped.
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace core {

class overlap_index {
 public:
  overlap_index();
  ~overlap_index();
  overlap_index(const overlap_index&) = delete;
  overlap_index& operator=(const overlap_index&) = delete;

  // Adds a valid filter subject under `id`; re-adding one keeps the smaller id.
  void insert(std::string_view subject, std::size_t id);
  // The smallest id of an added subject that overlaps `subject` (some subject matches both).
  std::optional<std::size_t> first_overlap(std::string_view subject) const;

 private:
  struct node;
  std::unique_ptr<node> _root;
};

// Over a list: the first overlapping pair (i < j), ordered by i, then j; duplicates count.
// Literal subjects are never trie queries that fan out: a literal only meets a later or
// earlier wildcard through a trie of the wildcards, and two literals overlap only when
// equal (a hash set). Only wildcard-against-wildcard queries can fan out, over wildcards.
std::optional<std::pair<std::size_t, std::size_t>> first_overlapping_pair(const std::vector<std::string_view>& subjects);
// Between two sets: whether some subject of `a` overlaps some subject of `b`.
bool sets_overlap(const std::vector<std::string_view>& a, const std::vector<std::string_view>& b);

}  // namespace core
