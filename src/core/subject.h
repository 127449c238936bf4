#pragma once
// NATS subject rules: tokens separated by '.', no empty tokens, no whitespace; '*' (one
// token) and '>' (one or more, last only) are wildcards only as whole tokens.
#include <string_view>
#include <vector>

namespace core {

// A subscription (filter) subject: wildcards allowed.
bool valid_subject(std::string_view s) noexcept;
// A publish subject as nats-server checks it in pedantic mode: valid and without wildcards.
bool valid_literal_subject(std::string_view s) noexcept;
// A queue group name: non-empty, no whitespace.
bool valid_queue_name(std::string_view q) noexcept;
// True when `filter` (may hold wildcards) matches `subject`; a '*' or '>' token inside
// `subject` is treated as a literal token.
bool subject_matches(std::string_view filter, std::string_view subject) noexcept;
// True when every subject matched by `a` is also matched by `b`.
bool subject_is_subset(std::string_view a, std::string_view b) noexcept;
// True when some subject is matched by both filters.
bool subjects_overlap(std::string_view a, std::string_view b) noexcept;
// Number of tokens in a subject.
std::size_t subject_token_count(std::string_view s) noexcept;

// The tokens of `s` between each `sep` (empty ones kept: "a..b" -> a, "", b), as views into s.
std::vector<std::string_view> split_tokens(std::string_view s, char sep = '.');

}  // namespace core
