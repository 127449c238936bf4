#pragma once
// Time is injected: state machines take `now` as an argument; threads read it from a
// clock object so tests can substitute a manual one.
#include <cstdint>
#include <ctime>

namespace base {

using nanos = std::int64_t;
constexpr nanos kMicro = 1'000;
constexpr nanos kMilli = 1'000'000;
constexpr nanos kSecond = 1'000'000'000;

class clock {
 public:
  virtual ~clock() = default;
  virtual nanos monotonic_ns() const = 0;  // for timers and latencies
  virtual nanos wall_ns() const = 0;       // unix epoch, for message timestamps
};

inline nanos read_clock(clockid_t id) {
  timespec ts{};
  clock_gettime(id, &ts);
  return nanos(ts.tv_sec) * kSecond + ts.tv_nsec;
}

class system_clock final : public clock {
 public:
  nanos monotonic_ns() const override { return read_clock(CLOCK_MONOTONIC); }
  nanos wall_ns() const override { return read_clock(CLOCK_REALTIME); }
  static const system_clock& instance() {
    static const system_clock c;
    return c;
  }
};

class manual_clock final : public clock {
 public:
  explicit manual_clock(nanos start_mono = 0, nanos start_wall = 1'700'000'000 * kSecond)
      : _mono(start_mono), _wall(start_wall) {}
  nanos monotonic_ns() const override { return _mono; }
  nanos wall_ns() const override { return _wall; }
  void advance(nanos d) {
    _mono += d;
    _wall += d;
  }

 private:
  nanos _mono;
  nanos _wall;
};

}  // namespace base
