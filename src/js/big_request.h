#pragma once
// One big STREAM.CREATE or STREAM.UPDATE in flight (big_request.cc): what the API worker
// decodes and checks, then what the loop applies in slices.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "src/js/api_errors.h"
#include "src/js/jetstream_service.h"
#include "src/js/stream_config.h"

namespace js {

// Requests at least this big take the worker path; smaller ones stay synchronous (a
// 64 KiB config decodes in well under a millisecond).
constexpr std::size_t kBigRequestBytes = 64 * 1024;
// How long one loop turn may spend subscribing a big stream's subjects.
constexpr std::int64_t kBigSliceNs = 1'000'000;
// Subject registry steps a stream change makes at once (a small stream's change finishes
// then); a bigger one continues in slices of kBigSliceNs.
constexpr std::size_t kRegistryStepsNow = 1024;
// A STREAM.DELETE of a stream with more subjects unsubscribes them in slices of kBigSliceNs
// (74,000 in one go held the loop ~130 ms).
constexpr std::size_t kBigDeleteSubjects = 4096;

struct jetstream::big_request {
  // In (set on the loop before the worker starts; read-only there).
  bool update = false;
  bool remove = false;  // a STREAM.DELETE of a big stream: only its unsubscribes go in slices
  std::string token, reply, payload;
  std::int64_t created = 0;  // now for a create, the stream's for an update
  const stream_config* existing = nullptr;  // the stream named `token`, if any
  std::vector<std::string_view> others;     // the other streams' subjects
  const placement_table* table = nullptr;   // every stream's config, for the cycle check
  // Out of the decode (worker).
  std::optional<api_error> error;
  stream_config cfg;
  bool exists = false;      // an identical stream exists: answer with it
  std::string config_dump;  // to_json(cfg, true), for the reply
  std::string meta_dump;    // the saved config (meta.inf, or the file store's meta record)
  std::vector<std::int64_t> kept_from;  // an update's subject_positions (old -> new subjects)
  // The copies the hub's table and subject registry keep (maybe_report), made here: 74,000
  // subjects copied on the loop held it 7 ms each (fresh pages), and cfg itself moves into
  // the stream. registry_subjects stays empty when an update keeps the subjects.
  stream_config table_cfg;
  std::vector<std::string> registry_subjects;
  // Apply (loop), with a memory stream's meta.inf written on the worker.
  std::uint64_t ticket = 0;
  bool decoded = false;
  stream* s = nullptr;  // set once applied; a created stream's subjects then go in slices
  bool to_interest = false;  // an update from limits to interest retention
  bool meta_written = false;
  std::string meta_error;
  bool answering = false;  // the reply is being made (answer_big_request)
  std::string answer;      // its text
};

// The stream a $JS.API request (the subject after "$JS.API.") is about, or empty:
// STREAM.<op>.<stream>, STREAM.MSG.<op>.<stream>, CONSUMER.<op>.<stream>...,
// CONSUMER.DURABLE.CREATE.<stream>..., CONSUMER.MSG.NEXT.<stream>..., <kind>.LEADER.STEPDOWN.
// <stream>..., STREAM.PEER.REMOVE.<stream>
std::string_view api_stream_of(std::string_view rest);

// The pure part of a create or update (the same checks, in the same order, as api_create
// and api_update).
void decode_big_request(jetstream::big_request& job);

// STREAM.INFO pages its subjects as nats-server does (JSMaxSubjectDetails).
constexpr std::size_t kSubjectDetailsLimit = 100000;
// A STREAM.INFO with a wildcard subjects_filter on a stream of at least this many subjects
// is answered through the API worker (big_info.cc).
constexpr std::uint64_t kBigInfoSubjects = 10000;

// One big STREAM.INFO in flight: the loop copies the stream's subject counts (flat, about a
// millisecond for 100,000) and the info without them; the worker filters, sorts and pages
// the subjects and serialises the reply; the loop publishes it.
struct jetstream::big_info {
  std::string stream, reply;
  std::string filter;     // "" = every subject (">")
  std::uint64_t offset = 0;
  std::vector<std::pair<std::string, std::uint64_t>> subjects;  // every subject, unsorted
  std::size_t cursor = 0;  // the store's subject_list, a slice per loop turn
  bool listed = false;     // all of them: the worker has the job (ticket)
  bool gone = false;       // the stream went before they were listed
  ojson info;  // the typed reply without subjects (total, offset and limit still 0)
  std::uint64_t ticket = 0;
  std::string text;  // out: the reply
};

// Whether a STREAM.INFO with this subjects_filter takes the worker path.
bool wants_big_info(stream& s, std::string_view filter);
// The worker's part: the page of subjects into info ("total", "offset", "limit" and
// state.subjects, as api_stream_info writes them), serialised into text.
void page_big_info(jetstream::big_info& job);

}  // namespace js
