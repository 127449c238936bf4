#include "src/shard/spin_governor.h"

namespace shard {

bool spin_governor::spin_now() {
  if (_allowed) return true;
  return ++_episodes % kProbeEvery == 0;
}

void spin_governor::on_spin_end(bool found_work) {
  ++_spins;
  if (found_work) ++_hits;
}

void spin_governor::on_sample(base::nanos now, base::nanos run, base::nanos wait) {
  _next = now + _cfg.window;
  if (!_have || run < _run || wait < _wait) {  // first reading, or the counters went back
    _have = true;
    _run = run;
    _wait = wait;
    _hits = _spins = 0;
    return;
  }
  const base::nanos ran = run - _run, waited = wait - _wait;
  if (ran < _cfg.min_run) return;  // too little to judge: keep accumulating
  _run = run;
  _wait = wait;
  const double ratio = double(waited) / double(ran);
  const bool rate_known = _spins >= _cfg.min_spins;
  const bool spins_pay = rate_known && double(_hits) >= _cfg.min_hit_rate * double(_spins);
  _hits = _spins = 0;
  if (_allowed && ratio > _cfg.off_ratio && rate_known && !spins_pay) {
    _allowed = false;
    _episodes = 0;
    ++_turned_off;
  } else if (!_allowed && (ratio < _cfg.on_ratio || spins_pay)) {
    _allowed = true;
  }
}

}  // namespace shard
