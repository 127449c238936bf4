#include "src/js/api_errors.h"

#include <array>

namespace js {

namespace {

struct entry {
  std::uint16_t err_code;
  int code;
  std::string_view text;  // "{}" marks where a detail goes; "" = the detail is the text
};

// Every code the server emits, with nats-server's err_code and description (errors.json).
constexpr std::array kTable{
    entry{10002, 400, "resource limits exceeded for account"},
    entry{10003, 400, "bad request"},
    entry{10005, 400, ""},
    entry{10008, 503, "JetStream system temporarily unavailable"},
    entry{10010, 503, "JetStream clustering support required"},
    entry{10012, 500, ""},
    entry{10013, 400, "consumer name already in use"},
    entry{10014, 404, "consumer not found"},
    entry{10015, 400, "deliver subject not valid"},
    entry{10016, 400, "consumer expected to be durable but no durable name set in subject"},
    entry{10017, 400, "consumer name in subject does not match durable name in request"},
    entry{10018, 400, "consumer expected to be durable but a durable name was not set"},
    entry{10019, 400, "consumer expected to be ephemeral but detected a durable name set in subject"},
    entry{10020, 400, "consumer expected to be ephemeral but a durable name was set in request"},
    entry{10021, 400, ""},  // stream external api prefix {prefix} must not overlap with {subject}
    entry{10022, 400, ""},  // stream external delivery prefix {prefix} overlaps with stream subject {subject}
    entry{10023, 503, "insufficient resources"},
    entry{10024, 400, ""},  // stream external delivery prefix {prefix} must not contain wildcards
    entry{10025, 400, "invalid JSON{}"},
    entry{10026, 400, "maximum consumers limit reached"},
    entry{10027, 400, "maximum number of streams reached"},
    entry{10028, 500, "insufficient memory resources available"},
    entry{10031, 400, "stream mirrors can not also contain other sources"},
    entry{10034, 400, "stream mirrors can not contain subjects"},
    entry{10037, 404, "no message found"},
    entry{10038, 400, "expected an empty request payload"},
    entry{10039, 503, "JetStream not enabled for account"},
    entry{10040, 400, "peer not a member"},
    entry{10042, 500, "JetStream unable to subscribe to restore snapshot {}"},
    entry{10043, 400, "sequence {} not found"},
    entry{10044, 400, "server is not a member of the cluster"},
    entry{10047, 500, "insufficient storage resources available"},
    entry{10049, 500, ""},
    entry{10050, 500, ""},
    entry{10051, 500, ""},
    entry{10052, 500, ""},
    entry{10053, 500, ""},
    entry{10054, 400, "message size exceeds maximum allowed"},
    entry{10055, 400, "stream mirror configuration can not be updated"},
    entry{10056, 400, "stream name in subject does not match request"},
    entry{10057, 500, ""},
    entry{10058, 400, "stream name already in use with a different configuration"},
    entry{10059, 404, "stream not found"},
    entry{10060, 400, "expected stream does not match"},
    entry{10061, 400, "Replicas configuration can not be updated"},
    entry{10062, 500, "restore failed: {}"},
    entry{10065, 400, "subjects overlap with an existing stream"},
    entry{10069, 500, ""},
    entry{10070, 400, "wrong last msg ID: {}"},
    entry{10071, 400, "wrong last sequence: {}"},
    entry{10074, 500, "replicas > 1 not supported in non-clustered mode"},
    entry{10075, 503, "peer remap failed"},
    entry{10076, 503, "JetStream not enabled"},
    entry{10077, 503, ""},
    entry{10078, 400, "consumer config required"},
    entry{10079, 400, "consumer deliver subject has wildcards"},
    entry{10080, 400, "consumer in push mode can not set max waiting"},
    entry{10081, 400, "consumer deliver subject forms a cycle"},
    entry{10082, 400, "consumer requires ack policy for max ack pending"},
    entry{10083, 400, "consumer idle heartbeat needs to be >= 100ms"},
    entry{10084, 400, "consumer in pull mode requires explicit ack policy on workqueue stream"},
    entry{10086, 400, "consumer in pull mode can not have rate limit set"},
    entry{10087, 400, "consumer max waiting needs to be positive"},
    entry{10088, 400, "consumer idle heartbeat requires a push based consumer"},
    entry{10089, 400, "consumer flow control requires a push based consumer"},
    entry{10090, 400, "consumer direct requires a push based consumer"},
    entry{10091, 400, "consumer direct requires an ephemeral consumer"},
    entry{10094, 400, ""},
    entry{10095, 400, "failed to parse consumer sampling configuration: {}"},
    entry{10097, 400, "header size exceeds maximum allowed of 64k"},
    entry{10098, 400, "workqueue stream requires explicit ack"},
    entry{10099, 400, "multiple non-filtered consumers not allowed on workqueue stream"},
    entry{10100, 400, "filtered consumer not unique on workqueue stream"},
    entry{10101, 400, "consumer must be deliver all on workqueue stream"},
    entry{10102, 400, "consumer name is too long, maximum allowed is {}"},
    entry{10103, 400, "durable name can not contain '.', '*', '>'"},
    entry{10104, 500, "error creating store for consumer: {}"},
    entry{10105, 400, "consumer already exists and is still active"},
    entry{10107, 400, "consumer description is too long, maximum allowed is {}"},
    entry{10108, 400, "consumer with flow control also needs heartbeats"},
    entry{10109, 400, "invalid operation on sealed stream"},
    entry{10110, 500, ""},
    entry{10111, 500, ""},
    entry{10112, 400, "invalid push consumer deliver subject"},
    entry{10113, 400, "account requires a stream config to have max bytes set"},
    entry{10114, 400, "consumer max request batch needs to be > 0"},
    entry{10115, 400, "consumer max request expires needs to be >= 1ms"},
    entry{10116, 400, "max deliver is required to be > length of backoff values"},
    entry{10118, 500, "stream is offline"},
    entry{10119, 500, "consumer is offline"},
    entry{10121, 400, "consumer max ack pending exceeds system limit of {}"},
    entry{10122, 400, "stream max bytes exceeds account limit max stream bytes"},
    entry{10126, 400, "consumer config replica count exceeds parent stream"},
    entry{10127, 400, "Consumer name can not contain path separators"},
    entry{10128, 400, "Stream name can not contain path separators"},
    entry{10130, 400, "stream name already in use, cannot restore"},
    entry{10131, 400, "Consumer create request did not match filtered subject from create subject"},
    entry{10132, 400, "Consumer Durable and Name have to be equal if both are provided"},
    entry{10133, 400, "replicas count cannot be negative"},
    entry{10134, 400, "consumer config replicas must match interest retention stream's replicas"},
    entry{10135, 400, "consumer metadata exceeds maximum size of {}"},
    entry{10136, 400, "consumer cannot have both FilterSubject and FilterSubjects specified"},
    entry{10137, 400, "consumer with multiple subject filters cannot use subject based API"},
    entry{10138, 400, "consumer subject filters cannot overlap"},
    entry{10139, 400, "consumer filter in FilterSubjects cannot be empty"},
    entry{10029, 500, ""},
    entry{10030, 400, "stream mirror must have max message size >= source"},
    entry{10032, 400, "stream mirrors can not have both start seq and start time configured"},
    entry{10033, 400, "stream mirrors can not contain filtered subjects"},
    entry{10045, 500, ""},
    entry{10046, 400, "stream source must have max message size >= target"},
    entry{10140, 400, "duplicate source configuration detected"},
    entry{10141, 400, "sourced stream name is invalid"},
    entry{10142, 400, "mirrored stream name is invalid"},
    entry{10143, 400, "stream mirrors can not have first sequence configured"},
    entry{10144, 400, "source with multiple subject transforms cannot also have a single subject filter"},
    entry{10145, 400, "source transform source: {}"},
    entry{10146, 400, "source transform: {}"},
    entry{10147, 400, "source filters can not overlap"},
    entry{10150, 400, "mirror with multiple subject transforms cannot also have a single subject filter"},
    entry{10151, 400, "mirror transform source: {}"},
    entry{10152, 400, "mirror subject filters can not overlap"},
    entry{10154, 400, "mirror transform: {}"},
    entry{10173, 400, "stream mirrors can not also calculate counters"},
    entry{10186, 400, "stream mirrors can not also schedule messages"},
    entry{10187, 400, "stream source can not also schedule messages"},
    entry{10198, 400, "stream mirrors can not also use atomic publishing"},
    entry{10209, 400, "stream mirrors can not also use batch publishing"},
    entry{10148, 400, "consumer already exists"},
    entry{10149, 400, "consumer does not exist"},
    entry{10153, 400, "consumer inactive threshold exceeds system limit of {}"},
    entry{10155, 400, "stream transform source: {}"},
    entry{10156, 400, "stream transform: {}"},
    entry{10157, 400, "pedantic mode: {}"},
    entry{10159, 400, "Setting PriorityPolicy requires at least one PriorityGroup to be set"},
    entry{10160, 400, "Provided priority group does not exist for this consumer"},
    entry{10161, 400, "Group name cannot be an empty string"},
    entry{10162, 400, "Valid priority group name must match A-Z, a-z, 0-9, -_/=)+ and may not exceed 16 characters"},
    entry{10165, 400, "invalid per-message TTL"},
    entry{10166, 400, "per-message TTL is disabled"},
    entry{10168, 400, "message counters is disabled"},
    entry{10169, 400, "message counter increment is missing"},
    entry{10170, 400, "message counter has payload"},
    entry{10171, 400, "message counter increment is invalid"},
    entry{10172, 400, "message counter is broken"},
    entry{10164, 400, "wrong last sequence"},
    entry{10174, 400, "atomic publish is disabled"},
    entry{10175, 400, "atomic publish sequence is missing"},
    entry{10176, 400, "atomic publish batch is incomplete"},
    entry{10177, 400, "atomic publish unsupported header used: {}"},
    entry{10179, 400, "atomic publish batch ID is invalid"},
    entry{10199, 400, "atomic publish batch is too large: {}"},
    entry{10200, 400, "atomic publish batch commit is invalid"},
    entry{10201, 400, "atomic publish batch contains duplicate message id"},
    entry{10210, 429, "atomic publish too many inflight"},
    entry{10205, 400, "batch publish is disabled"},
    entry{10206, 400, "batch publish pattern is invalid"},
    entry{10207, 400, "batch publish ID is invalid"},
    entry{10208, 400, "batch publish ID unknown"},
    entry{10211, 429, "batch publish too many inflight"},
    entry{10178, 400, "priority groups can not be used with push consumers"},
    entry{10181, 400, "consumer ack policy invalid"},
    entry{10182, 400, "consumer replay policy invalid"},
    entry{10183, 400, "consumer ack wait needs to be positive"},
    entry{10184, 400, "consumer backoff needs to be positive"},
    entry{10185, 412, "JetStream minimum api level required"},
    entry{10193, 400, "missing sequence for expected last sequence per subject"},
    entry{10188, 400, "message schedules is disabled"},
    entry{10189, 400, "message schedules pattern is invalid"},
    entry{10190, 400, "message schedules target is invalid"},
    entry{10191, 400, "message schedules invalid per-message TTL"},
    entry{10192, 400, "message schedules invalid rollup"},
    entry{10194, 500, "stream is offline: {}"},
    entry{10195, 500, "consumer is offline: {}"},
    entry{10202, 400, "cluster member change is in progress"},
    entry{10203, 400, "message schedules source is invalid"},
    entry{10204, 400, "invalid reset: {}"},
    entry{10212, 400, "message schedules invalid scheduler"},
    entry{10223, 400, "message schedules time zone is invalid"},
    // Durable sourcing and the flow_control ack policy (2.14, ADR-58/60).
    entry{10213, 400, "stream mirror consumer config is invalid"},
    entry{10214, 400, "stream mirror consumer requires flow control ack policy"},
    entry{10215, 400, "stream source consumer config is invalid"},
    entry{10216, 400, "duplicate stream source consumer detected"},
    entry{10217, 400, "stream source consumer requires flow control ack policy"},
    entry{10218, 400, "flow control ack policy requires a push based consumer"},
    entry{10219, 400, "flow control ack policy requires flow control"},
    entry{10220, 400, "flow control ack policy requires max ack pending"},
    entry{10221, 400, "flow control ack policy requires unset ack wait"},
    entry{10222, 400, "flow control ack policy requires unset max deliver"},
    entry{10196, 400, "consumer can not have priority groups when policy is none"},
    entry{10197, 400, "PinnedTTL cannot be set when PriorityPolicy is none"},
};

}  // namespace

api_error make_error(std::uint16_t err_code, std::string_view detail) {
  for (const auto& e : kTable) {
    if (e.err_code != err_code) continue;
    api_error out{e.code, e.err_code, {}};
    if (e.text.empty()) {
      out.description = std::string(detail);
    } else if (auto p = e.text.find("{}"); p != std::string_view::npos) {
      out.description = std::string(e.text.substr(0, p));
      out.description += detail;
      out.description += e.text.substr(p + 2);
    } else {
      out.description = std::string(e.text);
    }
    return out;
  }
  return api_error{500, err_code, std::string(detail)};
}

nlohmann::ordered_json to_json(const api_error& e) {
  nlohmann::ordered_json j;
  j["code"] = e.code;
  if (e.err_code != 0) j["err_code"] = e.err_code;
  if (!e.description.empty()) j["description"] = e.description;
  return j;
}

}  // namespace js
