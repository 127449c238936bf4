#pragma once
// Who is in the meta group when a cluster first forms: a pure rule, so every server reaches
// the same member list without a coordinator, and the rule is unit-tested.
//
// A server that is not in a meta group yet advertises its view (itself plus the servers its
// replication links reach, sorted) to every linked peer, and starts the group with view V when
//   (1) some linked peer advertises a frozen view (it is in a meta group) that includes this
//       server: V is that peer's member list (a server that was slow to connect joins); or
//   (2) V has at least max(2, min_size) servers (min_size: the configured route URLs), V has
//       not changed for settle_ms, and every other member of V advertises exactly V.
// Once in a group a server's view is frozen to the group's members (kept in the journal, so a
// restart rejoins without this rule). A server that comes up after the group formed and is
// not in it joins (decide_join): it starts the group in join mode (raft_group's group_config
// join: no bootstrap, the log comes from the leader) and the leader adds it (repl_host). A
// cluster whose servers can never all link up (min_size never reached) has no meta group.
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "src/repl/link_codec.h"

namespace repl {

struct bootstrap_input {
  std::string self;
  std::vector<std::string> linked;                // peers with a live link
  std::map<std::string, membership_view> views;   // the latest view each peer advertised
  std::size_t min_size = 2;
  std::uint64_t now_ms = 0;
  std::uint64_t view_since_ms = 0;  // when own_view() last changed
  std::uint64_t settle_ms = 1000;
};

// Self plus the linked peers, sorted and unique.
membership_view own_view(const std::string& self, const std::vector<std::string>& linked);

// The member list to start the meta group with, or nothing yet.
std::optional<std::vector<std::string>> decide_bootstrap(const bootstrap_input& in);

// (3) Not in any group, and some linked peer advertises a frozen view that does not list this
// server: the members to join (the smallest such list when peers disagree), without self.
std::optional<std::vector<std::string>> decide_join(const bootstrap_input& in);

// A server's Raft id: FNV-1a 64 of its name (never 0). Every server computes the same ids
// from the same names.
std::uint64_t server_raft_id(const std::string& name);

}  // namespace repl
