// The pure half of a big STREAM.CREATE/UPDATE (decode_big_request, run on the API worker)
// and the worker itself: tickets complete in order and each completion signals the eventfd.
#include "src/js/big_request.h"

#include <gtest/gtest.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "src/js/api_worker.h"
#include "src/js/json_util.h"

namespace js {
namespace {

using job_t = jetstream::big_request;

job_t job(std::string token, std::string body, bool update = false) {
  job_t j;
  j.update = update;
  j.token = std::move(token);
  j.payload = std::move(body);
  j.created = 1'700'000'000'000'000'000;
  return j;
}

stream_config config(std::string_view body) {
  stream_config c;
  EXPECT_FALSE(parse_stream_config(body, c));
  EXPECT_FALSE(normalise(c));
  return c;
}

TEST(big_request, a_valid_create_yields_the_config_its_reply_and_its_meta) {
  auto j = job("S", R"({"name":"S","subjects":["a.*","b"],"storage":"memory"})");
  decode_big_request(j);
  ASSERT_FALSE(j.error) << j.error->description;
  EXPECT_FALSE(j.exists);
  EXPECT_EQ(j.cfg.subjects, (std::vector<std::string>{"a.*", "b"}));
  EXPECT_EQ(j.config_dump, to_json(j.cfg, true).dump());
  ojson meta = to_json(j.cfg, false);
  meta["created"] = base::rfc3339_nano(j.created);
  EXPECT_EQ(j.meta_dump, meta.dump());
}

TEST(big_request, create_errors_in_api_create_order) {
  auto bad = job("S", "{nope");
  decode_big_request(bad);
  ASSERT_TRUE(bad.error);
  EXPECT_EQ(bad.error->err_code, make_error(err::invalid_json).err_code);

  auto mismatch = job("T", R"({"name":"S"})");
  decode_big_request(mismatch);
  EXPECT_EQ(mismatch.error, make_error(err::name_mismatch));

  auto sealed = job("S", R"({"name":"S","sealed":true})");
  decode_big_request(sealed);
  EXPECT_EQ(sealed.error,
            make_error(err::stream_invalid_config, "stream configuration for create can not be sealed"));

  auto invalid = job("S", R"({"name":"S","max_age":5})");
  decode_big_request(invalid);
  stream_config c = config(R"({"name":"S","max_age":5})");
  EXPECT_EQ(invalid.error, validate(c));
}

TEST(big_request, overlaps_with_other_streams_are_refused) {
  const std::vector<std::string> held = {"x.1", "y.>"};
  auto j = job("S", R"({"name":"S","subjects":["a","y.z.w"]})");
  j.others = {held.begin(), held.end()};
  decode_big_request(j);
  EXPECT_EQ(j.error, make_error(err::subjects_overlap));
  auto ok = job("S", R"({"name":"S","subjects":["a","x.2"]})");
  ok.others = {held.begin(), held.end()};
  decode_big_request(ok);
  EXPECT_FALSE(ok.error);
}

TEST(big_request, an_existing_stream_is_answered_when_identical_else_name_in_use) {
  const stream_config existing = config(R"({"name":"S","subjects":["a"]})");
  auto same = job("S", R"({"name":"S","subjects":["a"]})");
  same.existing = &existing;
  decode_big_request(same);
  ASSERT_FALSE(same.error);
  EXPECT_TRUE(same.exists);
  EXPECT_TRUE(same.meta_dump.empty());
  EXPECT_EQ(same.config_dump, to_json(existing, true).dump());
  auto other = job("S", R"({"name":"S","subjects":["a"],"max_msgs":3})");
  other.existing = &existing;
  decode_big_request(other);
  EXPECT_EQ(other.error, make_error(err::name_in_use));
}

TEST(big_request, update_errors_in_api_update_order) {
  const stream_config existing = config(R"({"name":"S","subjects":["a"],"storage":"memory"})");
  auto missing = job("S", R"({"name":"S"})", true);
  decode_big_request(missing);
  EXPECT_EQ(missing.error, make_error(err::stream_not_found));
  auto mismatch = job("T", R"({"name":"S"})", true);  // before the lookup
  decode_big_request(mismatch);
  EXPECT_EQ(mismatch.error, make_error(err::name_mismatch));
  auto storage = job("S", R"({"name":"S","subjects":["a"],"storage":"file"})", true);
  storage.existing = &existing;
  decode_big_request(storage);
  stream_config next = config(R"({"name":"S","subjects":["a"],"storage":"file"})");
  ASSERT_TRUE(storage.error);
  EXPECT_EQ(storage.error, check_update(existing, next));
  auto ok = job("S", R"({"name":"S","subjects":["a","b"],"storage":"memory","max_msgs":9})", true);
  ok.existing = &existing;
  decode_big_request(ok);
  ASSERT_FALSE(ok.error) << ok.error->description;
  EXPECT_FALSE(ok.exists);
  EXPECT_EQ(ok.cfg.max_msgs, 9);
  EXPECT_FALSE(ok.meta_dump.empty());
}

TEST(api_worker, jobs_complete_in_order_and_signal_the_eventfd) {
  const int efd = ::eventfd(0, EFD_CLOEXEC);
  ASSERT_GE(efd, 0);
  std::vector<int> ran;
  std::atomic<bool> release{false};
  std::uint64_t first = 0, second = 0;
  {
    api_worker w(efd);
    first = w.submit([&] {
      while (!release) std::this_thread::yield();
      ran.push_back(1);
    });
    second = w.submit([&] { ran.push_back(2); });
    EXPECT_FALSE(w.done(first));
    EXPECT_FALSE(w.done(second));
    release = true;
    eventfd_t n = 0, total = 0;
    while (total < 2 && ::eventfd_read(efd, &n) == 0) total += n;  // blocks until signalled
    EXPECT_EQ(total, 2u);
    EXPECT_TRUE(w.done(first));
    EXPECT_TRUE(w.done(second));
    EXPECT_EQ(ran, (std::vector<int>{1, 2}));
  }
  ::close(efd);
}

}  // namespace
}  // namespace js

// The worker's half of a big STREAM.INFO: the page of subjects, as api_stream_info writes it.
namespace js {
namespace {

jetstream::big_info info_job(std::vector<std::pair<std::string, std::uint64_t>> subjects, std::string filter,
                             std::uint64_t offset) {
  jetstream::big_info j;
  j.filter = std::move(filter);
  j.offset = offset;
  j.subjects = std::move(subjects);
  j.info = ojson{{"type", "t"}, {"total", 0}, {"offset", 0}, {"limit", 0}, {"config", nullptr},
                 {"state", ojson{{"messages", 9}, {"num_subjects", 3}, {"num_deleted", 1}, {"consumer_count", 0}}},
                 {"ts", "x"}};
  return j;
}

TEST(big_info, subjects_come_sorted_and_filtered_in_the_state_object_before_the_deletions) {
  auto j = info_job({{"b.2", 2}, {"a.1", 5}, {"c", 1}, {"b.1", 1}}, "b.*", 0);
  page_big_info(j);
  EXPECT_EQ(j.text,
            R"({"type":"t","total":2,"offset":0,"limit":100000,"config":null,)"
            R"("state":{"messages":9,"num_subjects":3,"subjects":{"b.1":1,"b.2":2},"num_deleted":1,"consumer_count":0},)"
            R"("ts":"x"})");
}

TEST(big_info, pages_at_100000_from_the_offset_and_an_offset_past_the_end_is_the_end) {
  std::vector<std::pair<std::string, std::uint64_t>> all;
  for (int i = 0; i < 100005; ++i) all.emplace_back("s." + std::to_string(1000000 + i), 1);
  auto first = info_job(all, "", 0);
  page_big_info(first);
  auto j = nlohmann::json::parse(first.text);
  EXPECT_EQ(j["total"], 100005);
  EXPECT_EQ(j["limit"], 100000);
  EXPECT_EQ(j["state"]["subjects"].size(), 100000u);
  auto rest = info_job(all, "", 100002);
  page_big_info(rest);
  j = nlohmann::json::parse(rest.text);
  EXPECT_EQ(j["offset"], 100002);
  EXPECT_EQ(j["state"]["subjects"], nlohmann::json({{"s.1100002", 1}, {"s.1100003", 1}, {"s.1100004", 1}}));
  auto past = info_job(all, "", 200000);
  page_big_info(past);
  j = nlohmann::json::parse(past.text);
  EXPECT_EQ(j["offset"], 100005);
  EXPECT_FALSE(j["state"].contains("subjects"));
  auto none = info_job(all, "nomatch.*", 0);
  page_big_info(none);
  j = nlohmann::json::parse(none.text);
  EXPECT_EQ(j["total"], 0);
  EXPECT_EQ(j["offset"], 0);
  EXPECT_EQ(j["limit"], 0);
}

}  // namespace
}  // namespace js
