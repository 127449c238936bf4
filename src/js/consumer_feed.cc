// The cross-thread read path of a remote consumer (consumer_feed.h): the owner's writer and
// the consumer thread's reader.
#include "src/js/consumer_feed.h"

#include <algorithm>
#include <iterator>
#include <utility>

namespace js {

// ---- feed_writer (owner thread)

bool feed_writer::push(feed_entry e, feed_queue& q) {
  if (q.try_push(e)) return true;
  _mode = mode::broken;  // the reader missed this one: it must page again
  _read.reset();
  send_resync(q);
  return false;
}

void feed_writer::send_resync(feed_queue& q) {
  feed_entry e;
  e.t = feed_entry::type::resync;
  if (!q.try_push(e)) return;  // poll retries
  _mode = mode::waiting;
  _read.reset();  // sent before the reader saw the resync: of an epoch it will ignore
}

void feed_writer::on_stored(const shared_msg& m, bool matches, feed_queue& q) {
  if (_mode != mode::live) return;  // paging: a later page reads it
  _covered = m->seq;
  if (!matches) return;
  feed_entry e;
  e.t = feed_entry::type::stored;
  e.upto = m->seq;
  e.msgs.push_back(m);
  push(std::move(e), q);
}

void feed_writer::on_removed(const std::vector<std::uint64_t>& seqs, feed_queue& q) {
  if (_mode != mode::live && _mode != mode::paging) return;
  feed_entry e;
  e.t = feed_entry::type::removed;
  for (std::uint64_t s : seqs)
    if (s <= _covered) e.seqs.push_back(s);  // above it: pages to come read the store as it is
  if (!e.seqs.empty()) push(std::move(e), q);
}

void feed_writer::on_bulk_removed(feed_queue& q) {
  _mode = mode::broken;
  _read.reset();
  send_resync(q);
}

void feed_writer::on_request(feed_request r, feed_store& s, feed_queue& q, std::vector<std::uint64_t>& released) {
  switch (r.t) {
    case feed_request::type::released:
      released.insert(released.end(), r.seqs.begin(), r.seqs.end());
      return;
    case feed_request::type::pause:
      if (_mode == mode::live) _mode = mode::paging;  // _covered stays: removals up to it still go
      return;
    case feed_request::type::read:
      if (_mode == mode::broken) return;  // the resync goes first; the reader asks again
      _read = std::move(r);
      answer(s, q);
      return;
  }
}

bool feed_writer::answer(feed_store& s, feed_queue& q) {
  if (!_read) return false;
  const feed_request& r = *_read;
  const std::uint64_t last = s.last_seq();
  feed_entry e;
  e.t = feed_entry::type::page;
  e.epoch = r.epoch;
  e.from = r.from;
  for (std::uint64_t next = r.from; e.msgs.size() < std::max<std::uint32_t>(r.max, 1);) {
    auto m = s.next_matching(next);
    if (!m || m->seq > last) break;
    next = m->seq + 1;
    e.msgs.push_back(std::make_shared<const storage::stored_msg>(std::move(*m)));
  }
  if (e.msgs.size() >= std::max<std::uint32_t>(r.max, 1) && e.msgs.back()->seq < last) {
    e.upto = e.msgs.back()->seq;
    e.more = s.count_matching(e.upto + 1);
  } else {
    e.upto = std::max(last, r.from > 0 ? r.from - 1 : 0);
    e.at_end = true;
  }
  const bool at_end = e.at_end;
  const std::uint64_t upto = e.upto;
  if (!q.try_push(e)) return false;  // kept; poll retries (reading the store again)
  _read.reset();
  _mode = at_end ? mode::live : mode::paging;
  _covered = upto;
  return true;
}

std::size_t feed_writer::poll(feed_store& s, feed_queue& q) {
  std::size_t work = 0;
  if (_mode == mode::broken) {
    send_resync(q);
    work += _mode != mode::broken;
  }
  if (_mode != mode::broken && _read) work += answer(s, q);
  return work;
}

// ---- feed_reader (consumer thread)

feed_reader::feed_reader(std::uint64_t floor, std::size_t max_msgs, std::uint32_t page_max)
    : _floor(std::max<std::uint64_t>(floor, 1)), _max(std::max<std::size_t>(max_msgs, 1)),
      _page_max(std::max<std::uint32_t>(page_max, 1)), _next_from(_floor), _known_upto(_floor - 1) {}

void feed_reader::start_epoch() {
  ++_epoch;
  _state = state::need_read;
  _next_from = _floor;
  _known_upto = _floor - 1;
  _beyond = 0;
  _pause_sent = false;
}

void feed_reader::on_entry(feed_entry&& e) {
  switch (e.t) {
    case feed_entry::type::resync:
      start_epoch();
      return;
    case feed_entry::type::removed:
      for (std::uint64_t s : e.seqs) _window.erase(s);
      return;
    case feed_entry::type::stored:
      // Paging (after a rewind: a push sent while the writer was live): the pages read it
      // from the store; kept now, it would stand above a gap the pages have not filled.
      if (_state == state::need_read || _state == state::reading) return;
      // True when sent; if it goes later, a removal or a page covering it says so.
      for (auto& m : e.msgs)
        if (m->seq >= _floor) _window[m->seq] = std::move(m);
      if (_state == state::pausing) _next_from = std::max(_next_from, e.upto + 1);
      if (_state == state::live && room() == 0) {  // full: pages from here on
        _state = state::pausing;
        _pause_sent = false;
        _next_from = e.upto + 1;
        _known_upto = e.upto;
      }
      return;
    case feed_entry::type::page: {
      if (_state != state::reading || e.epoch != _epoch) return;  // an older epoch's
      if (const std::uint64_t lo = std::max(e.from, _floor); lo <= e.upto)
        _window.erase(_window.lower_bound(lo), _window.upper_bound(e.upto));
      for (auto& m : e.msgs)
        if (m->seq >= _floor) _window[m->seq] = std::move(m);
      _known_upto = std::max(_known_upto, e.upto);
      if (e.at_end) {
        _state = state::live;
        _beyond = 0;
      } else {
        _state = state::need_read;
        _next_from = e.upto + 1;
        _beyond = e.more;
      }
      return;
    }
  }
}

std::optional<feed_request> feed_reader::take_request() {
  if (!_unsent.empty()) {
    feed_request r = std::move(_unsent.front());
    _unsent.pop_front();
    return r;
  }
  if (!_released.empty() || _release_below > _sent_below) {
    feed_request r;
    r.t = feed_request::type::released;
    r.seqs = std::exchange(_released, {});
    r.below = _sent_below = _release_below;
    r.gen = _gen;
    return r;
  }
  if (_state == state::pausing && !_pause_sent) {
    _pause_sent = true;
    feed_request r;
    r.t = feed_request::type::pause;
    return r;
  }
  if ((_state == state::need_read || _state == state::pausing) && room() > 0) {
    feed_request r;
    r.t = feed_request::type::read;
    r.epoch = _epoch;
    r.from = std::max(_next_from, _floor);
    r.max = std::uint32_t(std::min<std::size_t>(room(), _page_max));
    _state = state::reading;
    return r;
  }
  return std::nullopt;
}

void feed_reader::unsend(feed_request r) { _unsent.push_front(std::move(r)); }

void feed_reader::restart_releases(std::uint64_t seq) {
  _released.clear();
  std::erase_if(_unsent, [](const feed_request& r) { return r.t == feed_request::type::released; });
  _release_below = _sent_below = seq;
  ++_gen;
}

void feed_reader::rewind(std::uint64_t seq) {
  _floor = std::max<std::uint64_t>(seq, 1);
  _window.clear();
  start_epoch();
}

void feed_reader::forget_below(std::uint64_t seq) {
  if (seq <= _floor) return;
  _floor = seq;
  _window.erase(_window.begin(), _window.lower_bound(seq));
  _next_from = std::max(_next_from, _floor);
  _known_upto = std::max(_known_upto, _floor - 1);
}

const storage::stored_msg* feed_reader::next_matching(std::uint64_t from) const {
  auto it = _window.lower_bound(from);
  return it == _window.end() ? nullptr : it->second.get();
}

const storage::stored_msg* feed_reader::find(std::uint64_t seq) const {
  auto it = _window.find(seq);
  return it == _window.end() ? nullptr : it->second.get();
}

std::uint64_t feed_reader::count_matching(std::uint64_t from) const {
  const auto n = std::uint64_t(std::distance(_window.lower_bound(std::max(from, _floor)), _window.end()));
  return n + (live() ? 0 : _beyond);
}

// ---- remote_interest (owner thread)

remote_interest::change remote_interest::apply(const feed_request& r) {
  change out;
  if (r.t != feed_request::type::released) return out;
  for (std::uint64_t s : r.seqs)
    if (s < r.below ? false : needs(s)) {  // below the new floor: the range covers it
      _released.insert(s);
      out.seqs.push_back(s);
    }
  if (r.below > _below) {
    out.range_from = _below;
    out.range_to = r.below;
    _released.erase(_released.begin(), _released.lower_bound(r.below));
    _below = r.below;
  }
  return out;
}

}  // namespace js
