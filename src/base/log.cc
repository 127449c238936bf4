#include "src/base/log.h"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <ctime>
#include <mutex>

namespace base {
namespace {
std::atomic<log_level> g_level{log_level::info};
std::mutex g_mu;  // logging is off the data path; a lock keeps lines whole
FILE* g_out = nullptr;

const char* tag(log_level l) {
  switch (l) {
    case log_level::trace: return "TRC";
    case log_level::debug: return "DBG";
    case log_level::info: return "INF";
    case log_level::warn: return "WRN";
    case log_level::error: return "ERR";
    case log_level::fatal: return "FTL";
  }
  return "???";
}
}  // namespace

void log_set_level(log_level lvl) { g_level.store(lvl); }
log_level log_get_level() { return g_level.load(std::memory_order_relaxed); }

void log_set_file(const std::string& path) {
  std::lock_guard lk(g_mu);
  if (g_out && g_out != stderr) std::fclose(g_out);
  g_out = path.empty() ? stderr : std::fopen(path.c_str(), "a");
  if (!g_out) g_out = stderr;
}

void log_write(log_level lvl, std::string_view text) {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  tm t{};
  localtime_r(&ts.tv_sec, &t);
  char stamp[64];
  std::snprintf(stamp, sizeof stamp, "%04d/%02d/%02d %02d:%02d:%02d.%06ld", t.tm_year + 1900,
                t.tm_mon + 1, t.tm_mday, t.tm_hour, t.tm_min, t.tm_sec, ts.tv_nsec / 1000);
  std::lock_guard lk(g_mu);
  FILE* out = g_out ? g_out : stderr;
  std::fprintf(out, "[%d] %s [%s] %.*s\n", int(getpid()), stamp, tag(lvl), int(text.size()),
               text.data());
  std::fflush(out);
}

}  // namespace base
