#pragma once
// One mirror or source of a stream, wired to the bus. It reads the
// origin only through messages: a CONSUMER.CREATE request for a direct, flow-controlled push
// consumer on the origin, deliveries on its own $JS.M./$JS.S. subject, heartbeats and flow
// control answered on the wire. Everything received is queued by the handler and handled in
// poll(), never inside the sender's call (the origin's consumer may be mid-delivery), which
// is also what lets the origin live on another thread or server. The bookkeeping is the pure
// source_tracker; this class only moves messages.
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "src/core/service.h"
#include "src/js/stream_source.h"

namespace js {

class group_host;
class stream;

class source_link final : public core::internal_handler {
 public:
  // `copied`: last origin sequence already in the stream (resume point).
  source_link(group_host& host, stream& owner, source_spec spec, bool mirror, std::uint64_t copied);
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
  void handle(const queued& q, std::int64_t now);
  void handle_create_reply(const queued& q, std::int64_t now);
  void handle_status(const queued& q, std::int64_t now);
  void answer_flow_control(const std::string& to);
  void send_held_answers();

  group_host& _host;
  stream& _owner;
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
