#pragma once
// Small leveled logger in nats-server's line style: "[pid] date time [INF] text".
#include <fmt/core.h>

#include <string>

namespace base {

enum class log_level { trace = 0, debug = 1, info = 2, warn = 3, error = 4, fatal = 5 };

void log_set_level(log_level lvl);
log_level log_get_level();
void log_set_file(const std::string& path);  // empty = stderr
void log_write(log_level lvl, std::string_view text);

template <typename... Args>
void logf(log_level lvl, fmt::format_string<Args...> f, Args&&... args) {
  if (lvl < log_get_level()) return;
  log_write(lvl, fmt::format(f, std::forward<Args>(args)...));
}

#define PG_INFO(...) ::base::logf(::base::log_level::info, __VA_ARGS__)
#define PG_WARN(...) ::base::logf(::base::log_level::warn, __VA_ARGS__)
#define PG_ERROR(...) ::base::logf(::base::log_level::error, __VA_ARGS__)
#define PG_DEBUG(...) ::base::logf(::base::log_level::debug, __VA_ARGS__)
#define PG_TRACE(...) ::base::logf(::base::log_level::trace, __VA_ARGS__)

}  // namespace base
