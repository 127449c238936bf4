#include "src/js/js_headers.h"

namespace js {
namespace {

std::string_view trim(std::string_view v) {
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
  return v;
}

void set_first(std::optional<std::string_view>& slot, std::string_view v) {
  if (!slot) slot = v;
}

// `name` is the part after "Nats-"; unknown names are ignored.
void assign(js_headers& h, std::string_view name, std::string_view v) {
  switch (name.size()) {
    case 3:
      if (name == "TTL") set_first(h.ttl, v);
      break;
    case 4:
      if (name == "Incr") set_first(h.incr, v);
      break;
    case 6:
      if (name == "Msg-Id") set_first(h.msg_id, v);
      if (name == "Rollup") set_first(h.rollup, v);
      break;
    case 8:
      if (name == "Batch-Id") set_first(h.batch_id, v);
      if (name == "Schedule") set_first(h.schedule, v);
      break;
    case 9:
      if (name == "Scheduler") set_first(h.scheduler, v);
      break;
    case 12:
      if (name == "Batch-Commit") set_first(h.batch_commit, v);
      if (name == "Schedule-TTL") set_first(h.schedule_ttl, v);
      break;
    case 13:
      if (name == "Schedule-Next") set_first(h.schedule_next, v);
      break;
    case 14:
      if (name == "Batch-Sequence") set_first(h.batch_seq, v);
      break;
    case 15:
      if (name == "Expected-Stream") set_first(h.expected_stream, v);
      if (name == "Schedule-Target") set_first(h.schedule_target, v);
      if (name == "Schedule-Source") set_first(h.schedule_source, v);
      if (name == "Schedule-Rollup") set_first(h.schedule_rollup, v);
      break;
    case 18:
      if (name == "Required-Api-Level") set_first(h.required_api_level, v);
      if (name == "Schedule-Time-Zone") set_first(h.schedule_time_zone, v);
      break;
    case 20:
      if (name == "Expected-Last-Msg-Id") set_first(h.expected_last_msg_id, v);
      break;
    case 22:
      if (name == "Expected-Last-Sequence") set_first(h.expected_last_seq, v);
      break;
    case 30:
      if (name == "Expected-Last-Subject-Sequence") set_first(h.expected_last_subj_seq, v);
      break;
    case 38:
      if (name == "Expected-Last-Subject-Sequence-Subject") set_first(h.expected_last_subj_seq_subject, v);
      break;
    default:
      break;
  }
}

}  // namespace

js_headers parse_js_headers(std::string_view block) {
  js_headers h;
  std::size_t pos = block.find("\r\n");  // past the status line
  while (pos != std::string_view::npos) {
    pos += 2;
    const std::size_t end = block.find("\r\n", pos);
    if (end == std::string_view::npos || end == pos) break;
    const std::string_view line = block.substr(pos, end - pos);
    pos = end;
    if (line.size() < 6 || line.compare(0, 5, "Nats-") != 0) continue;
    const std::size_t colon = line.find(':', 5);
    if (colon == std::string_view::npos) continue;
    assign(h, line.substr(5, colon - 5), trim(line.substr(colon + 1)));
  }
  return h;
}

}  // namespace js
