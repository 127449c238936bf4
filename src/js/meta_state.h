#pragma once
// The meta group's state machine (issue 11): the cluster-wide table of stream and consumer
// assignments, identical on every server after the same committed entries. Applying an entry
// also says what it means for this server: a replica group to create (it is among the
// peers), to reconfigure, or to drop. Pure; the meta leader proposes the entries (placement
// from placement.h) and every server applies them.
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "src/js/repl_entries.h"

namespace js {

struct meta_change {
  enum class kind : std::uint8_t { create_stream, update_stream, remove_stream, create_consumer,
                                   remove_consumer, update_consumer };
  kind what = kind::create_stream;
  repl_entries::stream_assign stream;      // create/update/remove_stream (remove: account+name)
  // Consumer changes (remove: account+stream+name; update: the assignment with its new config).
  repl_entries::consumer_assign consumer;
};

class meta_state {
 public:
  explicit meta_state(std::string self) : _self(std::move(self)) {}

  // A committed meta entry; changes for this server are appended to `mine`. False (and
  // nothing changed) when the entry does not decode: the caller stops the group.
  bool apply(std::span<const std::uint8_t> data, std::vector<meta_change>& mine);

  // The whole table as bytes (meta_state_snapshot.cc): the meta group's raft snapshot, so
  // its log is compacted like a stream's. restore() replaces the table with a snapshot's and
  // appends to `mine` what that means for this server against the table it had: replicas to
  // create, drop or reconfigure. False (nothing changed) when the bytes do not decode.
  std::vector<std::uint8_t> snapshot() const;
  bool restore(std::span<const std::uint8_t> data, std::vector<meta_change>& mine);

  using key = std::pair<std::string, std::string>;  // account, stream
  struct stream_entry {
    repl_entries::stream_assign assignment;
    std::map<std::string, repl_entries::consumer_assign> consumers;
  };
  const std::map<key, stream_entry>& streams() const { return _streams; }
  // Servers taken out of the cluster by $JS.API.SERVER.REMOVE.
  const std::set<std::string>& removed() const { return _removed; }
  const stream_entry* find(const std::string& account, const std::string& stream) const;
  // Every server's own R1 streams (an r1_streams entry each): name -> where and its subjects.
  struct r1_home {
    std::string server;
    std::vector<std::string> subjects;
  };
  const std::map<std::string, r1_home, std::less<>>& r1_streams() const { return _r1; }
  // The R1 streams the log says `server` holds, in name order (what it last reported).
  std::vector<repl_entries::r1_stream> r1_of(const std::string& server) const;
  // The server_tags `server` last reported (with its R1 streams).
  const std::vector<std::string>& tags_of(const std::string& server) const;
  // Replicated streams and consumers placed on `server` (placement prefers the fewest).
  std::uint64_t assets_on(const std::string& server) const;

 private:
  bool member(const std::vector<std::string>& peers) const;
  void take_consumers(stream_entry& s, const std::vector<repl_entries::consumer_assign>& list,
                      std::vector<meta_change>& mine);

  std::string _self;
  std::map<key, stream_entry> _streams;
  std::set<std::string> _removed;
  std::map<std::string, r1_home, std::less<>> _r1;  // $G's, as the replicated streams
  std::map<std::string, std::vector<std::string>> _tags;  // server -> its server_tags
};

}  // namespace js
