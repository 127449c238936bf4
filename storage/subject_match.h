#pragma once
// Subject filter matching for the store. The core layer's matcher sits above storage in the
// layering, so the store carries its own small token matcher (NATS rules: `*` matches one
// token, `>` matches one or more trailing tokens).
#include <string>
#include <string_view>
#include <vector>

namespace storage {

inline bool filter_has_wildcard(std::string_view f) {
  for (std::size_t i = 0; i < f.size(); ++i) {
    char c = f[i];
    if ((c == '*' || c == '>') && (i == 0 || f[i - 1] == '.') &&
        (i + 1 == f.size() || f[i + 1] == '.'))
      return true;
  }
  return false;
}

// An empty filter or ">" matches everything.
inline bool subject_matches(std::string_view filter, std::string_view subject) {
  if (filter.empty()) return true;
  std::size_t fi = 0, si = 0;
  while (true) {
    std::size_t fe = filter.find('.', fi);
    std::string_view ft = filter.substr(fi, fe == std::string_view::npos ? fe : fe - fi);
    if (si > subject.size()) return false;
    std::size_t se = subject.find('.', si);
    std::string_view st = subject.substr(si, se == std::string_view::npos ? se : se - si);
    if (ft == ">" && fe == std::string_view::npos) return si < subject.size() || !st.empty();
    if (ft != "*" && ft != st) return false;
    if (ft == "*" && st.empty()) return false;
    bool f_end = fe == std::string_view::npos, s_end = se == std::string_view::npos;
    if (f_end || s_end) return f_end && s_end;
    fi = fe + 1;
    si = se + 1;
  }
}

inline bool subject_matches_any(const std::vector<std::string>& filters,
                                std::string_view subject) {
  if (filters.empty()) return true;
  for (const auto& f : filters)
    if (subject_matches(f, subject)) return true;
  return false;
}

}  // namespace storage
