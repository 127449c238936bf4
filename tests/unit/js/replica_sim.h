#pragma once
// Seeded simulation of replicated JetStream (issue 11): N servers in one process, each
// running the meta group (stream assignments, placement) and the Raft groups of the streams
// placed on it, each stream group driving a js::stream_replica over a memory store. The fake
// network loses, delays, reorders and duplicates frames and is cut by symmetric and
// asymmetric partitions; each server's fake disks (one memory_log_store per group) lose
// unsynced writes on a crash, the last one possibly torn; leaders are asked to step down;
// random publishers retry unanswered publishes, most of them with a Nats-Msg-Id. A restarted
// server replays its meta log, re-creates its stream groups and rebuilds each store from the
// stream's log. Everything random comes from the seed, so a failing seed replays exactly.
//
// Checkers: at most one leader per term in every group; at every checkpoint (250 ms) each
// replica's stream contents (sequence, subject, headers, payload, timestamp) are a prefix of
// the longest replica's; no replica sees a sequence gap or duplicate (stream_replica stops);
// a Msg-Id is PubAck'd with one sequence only and stored once; after healing, every stream
// acknowledges a new publish on all its replicas within the liveness bound, then all
// replicas hold identical contents, gapless from 1, containing every PubAck'd message, and
// every PubAck'd message is in the durable log of a majority of the stream's peers.
// Stream D has max_age and Nats-TTL: its leader proposes expire entries (every 50 ms tick),
// so there the checkers are that sequences both replicas hold are identical, replicas at the
// same applied index hold the same messages, the settled replicas are identical, nothing
// overdue remains, and an acknowledged message is missing only if it could have expired.
#include <cstdint>
#include <string>

namespace js::sim {

struct replica_sim_options {
  std::uint64_t seed = 1;
  unsigned servers = 3;
  std::uint64_t chaos_ms = 6'000;
  std::uint64_t liveness_bound_ms = 20'000;
  std::uint64_t settle_ms = 1'500;  // healed, no new publishes, before the final checks
  unsigned election_timeout_ms = 150;
  unsigned heartbeat_timeout_ms = 30;
  bool crashes = true;
  bool partitions = true;
  bool stepdowns = true;
  bool torn_writes = true;
  double loss = 0.03;
  double duplicate = 0.02;
  std::uint64_t max_delay_ms = 10;
  double msg_id_share = 0.7;  // publishes carrying a Nats-Msg-Id (retried with it)
  // The server's publish path: stream replicas propose without waiting (propose_async); each
  // group's queued proposals are proposed together at its next turn, 0-2 ms later, one raft
  // batch per term, their indexes (or refusal, once it no longer leads in their term) handed
  // back before the entries apply (cluster_streams over pg-repl's proposal ring).
  bool async_proposals = false;
  // Checker self-test: PubAcks leave as soon as the leader proposes (before a majority
  // holds the entry), so a crash or partition loses acknowledged messages.
  bool ack_before_commit = false;
  // Checker self-test: a new leader takes writes before its leader_start entry is applied
  // (stream_replica's await_leader_start off), numbering from a possibly stale store.
  bool skip_leader_start = false;
  // Checker self-test: every replica also expires stream D by its own clock (300 ms apart
  // from server to server), not only by applied expire entries.
  bool local_expiry = false;
  // Checker self-test: consumer acks confirmed when proposed, before they commit.
  bool confirm_ack_at_proposal = false;
};

struct replica_sim_report {
  bool ok = false;
  std::string failure;
  std::uint64_t events = 0;
  std::uint64_t published = 0;  // publish attempts
  std::uint64_t acked = 0;      // PubAcks received
  std::uint64_t crashes = 0;
  std::uint64_t stepdowns = 0;
  std::uint64_t leaders = 0;    // distinct (group, term) leaders
  std::uint64_t lost = 0;       // proposals that came back with another term
  std::uint64_t recovery_ms = 0;
  std::uint64_t stored = 0;     // messages in the final stores (sum over streams)
  std::uint64_t expiring_checked = 0;
  std::uint64_t expiring_stored = 0;  // messages left in the expiring stream (not in stored)
  std::uint64_t acked_expiring = 0;   // PubAcks of the expiring stream's messages
  std::uint64_t deliveries = 0;      // consumer CA's deliveries (redeliveries included)
  std::uint64_t confirmed_acks = 0;  // acks confirmed as applied  // expiring streams that passed the final checks
};

replica_sim_report run_replica_simulation(const replica_sim_options& options);

}  // namespace js::sim
