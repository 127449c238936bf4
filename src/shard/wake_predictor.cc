#include "src/shard/wake_predictor.h"

#include <algorithm>

namespace shard {

void wake_predictor::on_arrival(base::nanos at) {
  if (_last >= 0) {
    const base::nanos d = at - _last;
    if (d >= _cfg.min_period && d <= _cfg.max_period) {
      _periods[_next] = d;
      _next = (_next + 1) % kHistory;
      _count = std::min(_count + 1, kHistory);
    } else {
      _count = 0;  // a burst or a long pause breaks the pattern
      _next = 0;
    }
  }
  _last = at;
}

void wake_predictor::on_timed_wake(base::nanos planned, base::nanos actual) {
  const base::nanos late = std::clamp<base::nanos>(actual - planned, 0, 500 * base::kMicro);
  _latency = (_latency * 7 + late) / 8;
}

void wake_predictor::on_miss() {
  _count = 0;
  _next = 0;
  _last = -1;
}

wake_predictor::window wake_predictor::next() const {
  if (_count < kMinPeriods || _last < 0) return {};
  base::nanos lo = _periods[0], hi = _periods[0];
  for (std::size_t i = 1; i < _count; ++i) {
    lo = std::min(lo, _periods[i]);
    hi = std::max(hi, _periods[i]);
  }
  const base::nanos spin = hi - lo + 2 * _cfg.margin;
  if (double(spin) > _cfg.max_duty * double(lo)) return {};  // too irregular to be worth it
  return {_last + lo - _cfg.margin - _latency, _last + hi + _cfg.margin};
}

}  // namespace shard
