#pragma once
// One mirror or source of a stream, wired to the bus. It reads the
// origin only through messages: a CONSUMER.CREATE request for a direct, flow-controlled push
// consumer on the origin, deliveries on its own $JS.M./$JS.S. subject, heartbeats and flow
// control answered on the wire. Everything received is queued by the handler and handled in
// poll(), never inside the sender's call (the origin's consumer may be mid-delivery), which
// is also what lets the origin live on another thread or server. The bookkeeping is the pure
// source_tracker; this class only moves messages. It copies into a `copy_target`: a
// standalone stream (stream_mirror.cc) or a replicated stream's leader
// (cluster_stream_sources.cc), and talks through a `link_bus`.
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "src/core/service.h"
#include "src/js/stream_source.h"
#include "storage/store.h"

namespace js {

// What a link copies into.
class copy_target {
 public:
  // later: nothing was done, offer the same message again next turn (a full hand-over queue).
  enum class copy_result : std::uint8_t { stored, refused, later };
  virtual ~copy_target() = default;
  virtual const std::string& copy_stream_name() const = 0;
  // A copied message, `subject` after the link's transforms, `origin_subject` as the origin
  // stored it (the source header's last field); refused: the link sets its consumer up again.
  virtual copy_result store_copied(const source_spec& src, bool mirror, std::string_view subject,
                                   std::string_view origin_subject, std::string_view headers,
                                   std::string_view payload, const delivery_meta& d, std::uint64_t skip) = 0;
  // The last sequence taken, and the last one durable (a durable source's flow-control
  // answers ack the origin, so they wait for it).
  virtual std::uint64_t taken_seq() const = 0;
  virtual std::uint64_t durable_seq() const = 0;
};

// What a link needs of the bus: subscriptions announced to the routes, and publishes.
class link_bus {
 public:
  virtual ~link_bus() = default;
  virtual std::uint64_t subscribe_cluster(std::string_view subject, core::internal_handler* h) = 0;
  virtual void unsubscribe(std::uint64_t id) = 0;
  virtual void publish(std::string_view subject, std::string_view reply, std::string_view headers,
                       std::string_view payload) = 0;
};
// A group_host or a core::service_host as a link_bus.
template <class Host>
class link_bus_of final : public link_bus {
 public:
  explicit link_bus_of(Host& h) : _h(h) {}
  std::uint64_t subscribe_cluster(std::string_view subject, core::internal_handler* h) override {
    return _h.subscribe_cluster(subject, h);
  }
  void unsubscribe(std::uint64_t id) override { _h.unsubscribe(id); }
  void publish(std::string_view subject, std::string_view reply, std::string_view headers,
               std::string_view payload) override {
    _h.publish(subject, reply, headers, payload);
  }

 private:
  Host& _h;
};

// Where each source of `specs` resumes: the origin sequence of the newest message in `store`
// carrying its Nats-Stream-Source (0 = none), read backwards, at most a million messages.
std::vector<std::uint64_t> source_resume_points(storage::stream_store& store, const std::vector<source_spec>& specs);

class source_link final : public core::internal_handler {
 public:
  // `copied`: last origin sequence already in the stream (resume point).
  source_link(link_bus& bus, copy_target& owner, source_spec spec, bool mirror, std::uint64_t copied);
  ~source_link() override;

  void on_msg(const core::inbound_msg& m) override;
  std::size_t poll(std::int64_t now);
  // Unsubscribes; with delete_consumer also asks the origin to delete its consumer (else it
  // expires by inactive_threshold: the way on shutdown, when the API may be going too).
  void stop(bool delete_consumer);

  const source_spec& spec() const { return _spec; }
  const source_tracker& tracker() const { return _tracker; }
  // nats-server's StreamSourceInfo: name, external, lag, active, error, filter_subject, subject_transforms.
  ojson info_json(std::int64_t now) const;

 private:
  struct queued {
    bool create_reply = false;
    std::string subject, reply, headers, payload;
  };
  // A flow-control answer sent once the store is durable up to `wait_seq` (durable sourcing:
  // it acks the origin's messages, which a work queue then deletes).
  struct held_answer {
    std::uint64_t wait_seq;
    std::string to, headers;
  };
  void send_create(std::uint64_t start_seq, std::int64_t now);
  void drop_consumer(bool delete_consumer = true);
  // False: the target said `later`; q stays queued.
  bool handle(const queued& q, std::int64_t now);
  void handle_create_reply(const queued& q, std::int64_t now);
  void handle_status(const queued& q, std::int64_t now);
  void answer_flow_control(const std::string& to);
  void send_held_answers();

  link_bus& _host;
  copy_target& _owner;
  source_spec _spec;
  bool _mirror;
  source_tracker _tracker;
  std::string _deliver_subject;
  std::string _reply_subject;
  std::string _consumer_name;  // from the create response, for the delete
  std::vector<std::uint64_t> _subs;
  std::deque<queued> _inbox;
  std::deque<held_answer> _held;
  bool _stopped = false;
};

}  // namespace js
