// stream/consumer info renderings from server JSON shaped as nats-server 2.9.10 replies, checked
// for the lines the JetStream chapter shows natscli printing.
#include <gtest/gtest.h>

#include "src/cli/cli_format.h"

namespace peregrine::cli {
namespace {

bool has_line(const std::string& text, const std::string& label, const std::string& value) {
  const std::string want = label + ": " + value + "\n";
  for (size_t p = text.find(want); p != std::string::npos; p = text.find(want, p + 1))
    if (p == 0 || text[p - 1] == ' ' || text[p - 1] == '\n') return true;
  return false;
}

const char* kOrders = R"({"type":"io.nats.jetstream.api.v1.stream_info_response","total":0,"offset":0,"limit":0,
 "config":{"name":"ORDERS","subjects":["orders.>"],"retention":"limits","max_consumers":-1,"max_msgs":-1,
 "max_bytes":-1,"max_age":0,"max_msgs_per_subject":-1,"max_msg_size":-1,"discard":"old","storage":"file",
 "num_replicas":1,"duplicate_window":120000000000,"sealed":false,"deny_delete":false,"deny_purge":false,
 "allow_rollup_hdrs":false,"allow_direct":true,"mirror_direct":false},
 "created":"2026-05-22T10:14:00.1Z",
 "state":{"messages":3,"bytes":404,"first_seq":1,"first_ts":"2026-05-22T10:14:22.5Z","last_seq":3,
 "last_ts":"2026-05-22T10:14:31Z","num_subjects":2,"consumer_count":0},"cluster":{"leader":"NXYZ"}})";

TEST(info_text, stream_info_has_the_chapters_lines) {
  const std::string t = stream_info_text(ordered_json::parse(kOrders));
  EXPECT_EQ(t.rfind("Information for Stream ORDERS created 2026-05-22 10:14:00\n", 0), 0u) << t;
  const std::pair<const char*, const char*> lines[] = {
      {"Subjects", "orders.>"}, {"Replicas", "1"}, {"Storage", "File"}, {"Retention", "Limits"},
      {"Acknowledgments", "true"}, {"Discard Policy", "Old"}, {"Duplicate Window", "2m0s"}, {"Direct Get", "true"},
      {"Allows Msg Delete", "true"}, {"Allows Purge", "true"}, {"Allows Rollups", "false"},
      {"Maximum Messages", "unlimited"}, {"Maximum Per Subject", "unlimited"}, {"Maximum Bytes", "unlimited"},
      {"Maximum Age", "unlimited"}, {"Maximum Message Size", "unlimited"}, {"Maximum Consumers", "unlimited"},
      {"Messages", "3"}, {"Bytes", "404 B"}, {"First Sequence", "1 @ 2026-05-22 10:14:22"},
      {"Last Sequence", "3 @ 2026-05-22 10:14:31"}, {"Active Consumers", "0"}, {"Number of Subjects", "2"}};
  for (const auto& [label, value] : lines) EXPECT_TRUE(has_line(t, label, value)) << label << ": " << value << "\n" << t;
  for (const char* section : {"\nOptions:\n\n", "\nLimits:\n\n", "\nState:\n\n"})
    EXPECT_NE(t.find(section), std::string::npos) << section;
  // Not clustered: no cluster block for a bare leader; no TTL line when the server has no such field.
  EXPECT_EQ(t.find("Cluster Information"), std::string::npos);
  EXPECT_EQ(t.find("Per-Message TTL"), std::string::npos);
}

TEST(info_text, stream_info_limits_mirror_and_empty_state) {
  ordered_json j = ordered_json::parse(kOrders);
  j["config"]["max_bytes"] = 1073741824;
  j["config"]["max_age"] = int64_t{7} * 86400'000'000'000;
  j["config"]["max_msgs_per_subject"] = 100000;
  j["config"]["retention"] = "workqueue";
  j["config"]["allow_msg_ttl"] = true;
  j["state"] = {{"messages", 0}, {"bytes", 0}, {"first_seq", 0}, {"first_ts", "0001-01-01T00:00:00Z"},
                {"last_seq", 0}, {"last_ts", "0001-01-01T00:00:00Z"}, {"consumer_count", 1}};
  j["mirror"] = {{"name", "ORDERS"}, {"lag", 0}, {"active", 1'200'000'000}};
  const std::string t = stream_info_text(j);
  EXPECT_TRUE(has_line(t, "Maximum Bytes", "1.0 GiB")) << t;
  EXPECT_TRUE(has_line(t, "Maximum Age", "7d0h0m0s"));
  EXPECT_TRUE(has_line(t, "Maximum Per Subject", "100,000"));
  EXPECT_TRUE(has_line(t, "Retention", "WorkQueue"));
  EXPECT_TRUE(has_line(t, "Allows Per-Message TTL", "true"));
  EXPECT_TRUE(has_line(t, "First Sequence", "0"));
  EXPECT_TRUE(has_line(t, "Last Sequence", "0"));
  EXPECT_TRUE(has_line(t, "Active Consumers", "1"));
  EXPECT_EQ(t.find("Number of Subjects"), std::string::npos);
  EXPECT_NE(t.find("\nMirror Information:\n\n"), std::string::npos);
  EXPECT_TRUE(has_line(t, "Stream Name", "ORDERS"));
  EXPECT_TRUE(has_line(t, "Lag", "0"));
  EXPECT_TRUE(has_line(t, "Last Seen", "1.20s"));
}

TEST(info_text, stream_info_survives_missing_fields) {
  const std::string t = stream_info_text(ordered_json::parse(R"({"config":{"name":"X"}})"));
  EXPECT_EQ(t.rfind("Information for Stream X\n", 0), 0u);
  EXPECT_TRUE(has_line(t, "Messages", "0"));
  EXPECT_FALSE(stream_info_text(ordered_json::object()).empty());
  EXPECT_FALSE(consumer_info_text(ordered_json::object(), 0).empty());
}

TEST(info_text, consumer_info_has_the_chapters_lines) {
  const auto info = ordered_json::parse(R"({"type":"io.nats.jetstream.api.v1.consumer_info_response",
   "stream_name":"ORDERS","name":"analytics","created":"2026-05-22T10:15:00Z",
   "config":{"durable_name":"analytics","deliver_policy":"all","ack_policy":"explicit","ack_wait":30000000000,
   "max_deliver":-1,"filter_subject":"orders.shipped","replay_policy":"instant","max_waiting":512,
   "max_ack_pending":1000,"num_replicas":0},
   "delivered":{"consumer_seq":2,"stream_seq":3,"last_active":"2026-05-22T10:15:10Z"},
   "ack_floor":{"consumer_seq":1,"stream_seq":1},
   "num_ack_pending":1,"num_redelivered":0,"num_waiting":0,"num_pending":3})");
  const int64_t now = parse_rfc3339("2026-05-22T10:15:12.5Z").value();
  const std::string t = consumer_info_text(info, now);
  EXPECT_EQ(t.rfind("Information for Consumer ORDERS > analytics created 2026-05-22 10:15:00\n", 0), 0u) << t;
  const std::pair<const char*, const char*> lines[] = {
      {"Name", "analytics"}, {"Pull Mode", "true"}, {"Filter Subject", "orders.shipped"}, {"Deliver Policy", "All"},
      {"Ack Policy", "Explicit"}, {"Ack Wait", "30.00s"}, {"Replay Policy", "Instant"}, {"Max Ack Pending", "1,000"},
      {"Max Waiting Pulls", "512"},
      {"Last Delivered Message", "Consumer sequence: 2 Stream sequence: 3 Last delivery: 2.50s ago"},
      {"Acknowledgment Floor", "Consumer sequence: 1 Stream sequence: 1"},
      {"Outstanding Acks", "1 out of maximum 1,000"}, {"Redelivered Messages", "0"}, {"Unprocessed Messages", "3"},
      {"Waiting Pulls", "0 of maximum 512"}};
  for (const auto& [label, value] : lines) EXPECT_TRUE(has_line(t, label, value)) << label << ": " << value << "\n" << t;
  EXPECT_EQ(t.find("Maximum Deliveries"), std::string::npos);  // -1: unlimited, not shown
}

TEST(info_text, consumer_info_priority_backoff_and_pause) {
  const auto info = ordered_json::parse(R"({"stream_name":"ORDERS","name":"dispatch",
   "config":{"deliver_policy":"by_start_sequence","opt_start_seq":5,"ack_policy":"explicit","ack_wait":10000000000,
   "max_deliver":5,"backoff":[1000000000,30000000000],"replay_policy":"instant","max_waiting":512,"max_ack_pending":1,
   "priority_groups":["regions"],"priority_policy":"overflow","pause_until":"2026-05-22T11:14:22Z"},
   "paused":true,"pause_remaining":3598000000000,
   "delivered":{"consumer_seq":0,"stream_seq":0},"ack_floor":{"consumer_seq":0,"stream_seq":0},
   "num_ack_pending":0,"num_redelivered":0,"num_waiting":0,"num_pending":0})");
  const std::string t = consumer_info_text(info, 0);
  EXPECT_TRUE(has_line(t, "Deliver Policy", "From Sequence 5")) << t;
  ordered_json since = info;
  since["config"]["deliver_policy"] = "by_start_time";
  since["config"]["opt_start_time"] = "2026-05-22T09:14:22.84Z";
  EXPECT_TRUE(has_line(consumer_info_text(since, 0), "Deliver Policy", "Since 2026-05-22 09:14:22"));
  EXPECT_TRUE(has_line(t, "Maximum Deliveries", "5"));
  EXPECT_TRUE(has_line(t, "Ack Wait", "10.00s"));
  EXPECT_TRUE(has_line(t, "Backoff", "1.00s, 30.00s"));
  EXPECT_TRUE(has_line(t, "Priority Policy", "Overflow"));
  EXPECT_TRUE(has_line(t, "Priority Groups", "regions"));
  EXPECT_TRUE(has_line(t, "Paused Until", "2026-05-22 11:14:22 (59m58s remaining)"));
  EXPECT_TRUE(has_line(t, "Outstanding Acks", "0 out of maximum 1"));
}

TEST(info_text, config_diff_lists_changed_added_and_removed_fields) {
  const auto before = ordered_json::parse(R"({"name":"ORDERS","max_age":0,"max_bytes":-1,"republish":{"src":">"}})");
  const auto after = ordered_json::parse(R"({"name":"ORDERS","max_age":604800000000000,"max_bytes":1073741824,"allow_msg_ttl":true})");
  EXPECT_EQ(config_diff(before, after),
            "Differences (-old +new):\n"
            "-   \"max_age\": 0\n+   \"max_age\": 604800000000000\n"
            "-   \"max_bytes\": -1\n+   \"max_bytes\": 1073741824\n"
            "-   \"republish\": {\"src\":\">\"}\n"
            "+   \"allow_msg_ttl\": true\n");
  EXPECT_EQ(config_diff(after, after), "");
}

}  // namespace
}  // namespace peregrine::cli
