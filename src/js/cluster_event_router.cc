#include "src/js/cluster_event_router.h"

#include <unistd.h>

#include <algorithm>

#include "src/js/cluster_constants.h"
#include "src/js/cluster_streams.h"

namespace js {

void cluster_event_router::attach(cluster_streams& member, core::cluster_replication& repl, int wake_fd) {
  if (std::find(_members.begin(), _members.end(), &member) == _members.end()) _members.push_back(&member);
  if (_sink_set) return;
  _sink_set = true;
  repl.set_group_events([this](core::group_event& ev) { return _events.try_push(std::move(ev)); },
                        [wake_fd] {
                          if (wake_fd < 0) return;  // the hub's poll finds the events on its own
                          const std::uint64_t one = 1;
                          (void)!::write(wake_fd, &one, sizeof one);
                        });
}

void cluster_event_router::detach(cluster_streams& member) { std::erase(_members, &member); }

std::size_t cluster_event_router::drain(std::int64_t now_ns, std::size_t budget) {
  return _events.drain([&](core::group_event&& ev) { route(ev, now_ns); }, budget);
}

void cluster_event_router::route(core::group_event& ev, std::int64_t now_ns) {
  if (ev.group == cluster::kMetaGroup) {
    for (cluster_streams* m : _members) m->on_meta_event(ev, now_ns);  // none moves the data out
    return;
  }
  for (cluster_streams* m : _members)
    if (m->holds_group(ev.group)) return m->on_group_event(ev, now_ns);
  // Nobody holds it (dropped meanwhile): as one account's instance did, it is dropped.
}

}  // namespace js
