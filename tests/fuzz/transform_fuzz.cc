// libFuzzer target for js::subject_transform (the stream subject_transform / republish
// grammar, user input from stream configs). Input: line 1 = src, line 2 = dest, every further
// line a subject to map. Invariants: parse never crashes; a parsed transform maps every
// subject deterministically (random() gets a fixed source), and a subject that does not
// match src maps to nothing.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "src/core/subject.h"
#include "src/js/subject_transform.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  std::vector<std::string_view> lines;
  for (std::size_t i = 0;;) {
    const std::size_t nl = in.find('\n', i);
    lines.push_back(in.substr(i, nl == std::string_view::npos ? std::string_view::npos : nl - i));
    if (nl == std::string_view::npos) break;
    i = nl + 1;
  }
  if (lines.size() < 2) return 0;
  std::string error;
  auto t = js::subject_transform::parse(lines[0], lines[1], error);
  if (!t) {
    if (error.empty()) std::abort();  // a refusal always says why
    return 0;
  }
  t->rng = [] { return 12345u; };
  for (std::size_t k = 2; k < lines.size(); ++k) {
    const auto a = t->apply(lines[k]);
    const auto b = t->apply(lines[k]);
    if (a != b) std::abort();
    const bool matches = core::valid_subject(lines[k]) && core::subject_matches(t->src(), lines[k]);
    if (a && !matches && core::valid_subject(lines[k])) std::abort();
  }
  return 0;
}
