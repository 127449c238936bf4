#pragma once
// The group simulation's model (internal to group_sim*.cc): what each stream should hold and
// what each consumer should have delivered, acked and left pending, kept by rules simple
// enough to read against nats-server's documented behaviour.
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "src/base/rng.h"

#include "src/js/consumer_config.h"
#include "src/js/stream_config.h"
#include "src/js/stream_group.h"
#include "storage/consumer_state.h"
#include "tests/unit/js/group_sim.h"

namespace js::sim {

struct model_msg {
  std::string subject, payload;
  std::int64_t ts = 0;
  std::uint64_t size = 0;  // file-store accounting: 30 + subject + payload
  bool puback = false;     // the publisher holds a PubAck for it
};

struct model_pending {
  std::uint64_t dseq = 0;
  std::uint64_t dc = 1;      // delivery count
  std::int64_t at = 0;       // last delivery (or progress) time; deadline = at + ack_wait
  bool due = false;          // queued for redelivery (ack wait expired or nak)
  std::uint64_t rank = 0;    // place in the redelivery queue (the order entries became due)
};

struct model_request {
  std::uint64_t left = 0;
  std::int64_t expires_at = 0;  // 0 = never
};

// A delivery a client holds (and may ack later, even after a restart).
struct held_msg {
  std::uint64_t sseq = 0, dc = 0;
  std::string ack;
};

struct model_consumer {
  std::string name;
  consumer_config cfg;
  bool push = false;
  std::string filter;  // "" = every subject
  std::string deliver_subject;
  std::string state_dir;
  std::int64_t ack_wait = 0, max_deliver = -1, max_ack_pending = 1000;

  std::uint64_t next = 1;  // next stream seq to deliver for the first time
  std::uint64_t dseq = 1;  // next consumer seq
  std::map<std::uint64_t, model_pending> pending;
  std::map<std::uint64_t, std::uint64_t> rdc;  // sseq -> redeliveries (num_redelivered)
  std::set<std::uint64_t> maxed;               // reached max_deliver, kept
  std::uint64_t due_counter = 0;
  std::uint64_t floor_c = 0, floor_s = 0;      // ack floor (consumer, stream)
  std::uint64_t seen_floor_c = 0, seen_floor_s = 0;  // the agent's floor last step
  std::set<std::uint64_t> done;       // acked or termed, ever (across restarts)
  std::set<std::uint64_t> confirmed;  // acked with a reply, and the reply came
  std::map<std::string, model_request> requests;  // pull requests by reply subject
  std::vector<held_msg> inbox;
  bool listening = false;  // push: a client subscribes deliver_subject

  bool matches(std::string_view subject) const;
  // As consumer_state_machine::needs (interest retention).
  bool needs(std::uint64_t seq) const;
  // `seq` leaves pending; the floor moves when it was the lowest (nats-server's rule).
  void leave(std::uint64_t seq);
  void to_maxed(std::uint64_t seq);
  // Ack wait expiries up to `now`: queued for redelivery, or kept at max_deliver.
  void expire(std::int64_t now);
  void make_due(std::uint64_t seq);
};

struct model_stream {
  std::size_t idx = 0;
  std::string name, prefix;  // prefix: subjects are <prefix>.a|b|c
  stream_config cfg;
  std::int64_t created = 0;
  std::map<std::uint64_t, model_msg> msgs;
  std::map<std::uint64_t, model_msg> history;  // every message ever stored
  std::set<std::uint64_t> removed_ever;        // by limits, age, purge or delete
  std::uint64_t last = 0, bytes = 0, max_acked_seq = 0;
  std::vector<model_consumer> consumers;
  std::map<std::uint64_t, removal_cause> expect_removed;
  double commit_chance = 1.0;
  sim_disk disk;  // before the group: its store refers to it
  std::unique_ptr<stream_group> group;

  std::uint64_t first() const { return msgs.empty() ? last + 1 : msgs.begin()->first; }
  void erase(std::uint64_t seq);
  // A consumer released `seq` (ack, term): work queue removes it, interest once unneeded.
  void release(std::uint64_t seq);
  // The stream told its consumers `seq` was removed (limits, age, delete).
  void removed_notify(std::uint64_t seq);
  // A purge ran: consumers skip to the new first sequence (consumer_state_machine::on_purged).
  void purged_notify();
  bool over_limits() const;
};

// One run: the groups on a sim_host, their models, and the seeded choices.
class simulation {
 public:
  explicit simulation(const sim_options& o);
  ~simulation();
  sim_report run();

 private:
  // group_sim.cc: setup, actions, restarts, the drain.
  void configure();
  void add_stream(std::size_t idx);
  void add_consumer(model_stream& s, std::size_t idx, unsigned n);
  void open_group(model_stream& s);
  void step();
  void publish(model_stream& s);
  void pull(model_stream& s, model_consumer& c, std::uint64_t batch, std::int64_t expires);
  void ack(model_stream& s, model_consumer& c);
  void purge(model_stream& s);
  void delete_msg(model_stream& s);
  void restart(model_stream& s, bool crash);
  void reconcile_stream(model_stream& s, sim_store& recovered, bool crash);
  void reconcile_consumer(model_stream& s, model_consumer& c, const storage::consumer_state& st, bool crash);
  void settle_ack(model_stream& s, model_consumer& c, std::uint64_t seq);
  void settle();
  void drain();
  // group_sim_check.cc: the model replays what the groups did, then the invariants.
  void replay_trace();
  void on_removal(const trace_entry& e);
  void on_delivery(const trace_entry& e);
  void on_publish(const trace_entry& e);
  void check();
  void check_stream(model_stream& s);
  void check_consumer(model_stream& s, model_consumer& c);
  void check_drained();
  bool available(const model_stream& s, const model_consumer& c) const;
  bool fail(const std::string& why);
  bool failed() const { return !_r.failure.empty(); }
  std::int64_t now() const { return _host.now(); }

  sim_options _o;
  base::rng _rng;
  sim_host _host;
  std::vector<std::unique_ptr<model_stream>> _streams;
  sim_report _r;
  std::string _dir;
  std::uint64_t _step = 0, _ids = 0;
  bool _shutting_down = false;
  bool _reopening = false;
  struct expected_ack {
    std::size_t stream;
    std::uint64_t seq;   // 0 = an error PubAck is expected
    int error;
  };
  std::map<std::string, expected_ack> _pubacks;  // by reply subject
  struct sync_ack {
    std::size_t stream, consumer;
    std::uint64_t seq;
    bool settles;  // +ACK or +TERM: once confirmed, never redelivered
  };
  std::map<std::string, sync_ack> _sync_acks;
};

}  // namespace js::sim
