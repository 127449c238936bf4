// An account without JetStream: the replies nats-server 2.9.10 gives its $JS.API requests
// (captured from it; the integration test js_accounts_nats_server checks a few live).
#include "src/js/account_disabled.h"

#include <gtest/gtest.h>

namespace js {
namespace {

std::string reply(std::string_view subject) {
  auto j = not_enabled_reply(subject);
  return j ? j->dump() : "<none>";
}

TEST(NotEnabled, AnswersInTheRequestsTypeWithItsPageFields) {
  EXPECT_EQ(reply("$JS.API.INFO"),
            R"({"type":"io.nats.jetstream.api.v1.account_info_response","error":{"code":503,"err_code":10039,"description":"JetStream not enabled for account"}})");
  EXPECT_EQ(reply("$JS.API.STREAM.NAMES"),
            R"({"type":"io.nats.jetstream.api.v1.stream_names_response","error":{"code":503,"err_code":10039,"description":"JetStream not enabled for account"},"total":0,"offset":0,"limit":0,"streams":null})");
  EXPECT_EQ(reply("$JS.API.STREAM.LIST"),
            R"({"type":"io.nats.jetstream.api.v1.stream_list_response","error":{"code":503,"err_code":10039,"description":"JetStream not enabled for account"},"total":0,"offset":0,"limit":0,"streams":[]})");
  EXPECT_EQ(reply("$JS.API.STREAM.INFO.ORDERS"),
            R"({"type":"io.nats.jetstream.api.v1.stream_info_response","error":{"code":503,"err_code":10039,"description":"JetStream not enabled for account"},"total":0,"offset":0,"limit":0})");
  EXPECT_EQ(reply("$JS.API.STREAM.PURGE.X"),
            R"({"type":"io.nats.jetstream.api.v1.stream_purge_response","error":{"code":503,"err_code":10039,"description":"JetStream not enabled for account"},"purged":0})");
  EXPECT_EQ(reply("$JS.API.STREAM.RESTORE.X"),
            R"({"type":"io.nats.jetstream.api.v1.stream_restore_response","error":{"code":503,"err_code":10039,"description":"JetStream not enabled for account"},"deliver_subject":""})");
  EXPECT_EQ(reply("$JS.API.CONSUMER.LIST.X"),
            R"({"type":"io.nats.jetstream.api.v1.consumer_list_response","error":{"code":503,"err_code":10039,"description":"JetStream not enabled for account"},"total":0,"offset":0,"limit":0,"consumers":[]})");
  EXPECT_EQ(reply("$JS.API.CONSUMER.DURABLE.CREATE.X.d"),
            R"({"type":"io.nats.jetstream.api.v1.consumer_create_response","error":{"code":503,"err_code":10039,"description":"JetStream not enabled for account"}})");
  EXPECT_EQ(reply("$JS.API.STREAM.LEADER.STEPDOWN.X"),
            R"({"type":"io.nats.jetstream.api.v1.stream_leader_stepdown_response","error":{"code":503,"err_code":10010,"description":"JetStream clustering support required"}})");
}

TEST(NotEnabled, NoReplyWhereNatsServerGivesNone) {
  for (const char* s : {"$JS.API.CONSUMER.MSG.NEXT.X.d", "$JS.API.DIRECT.GET.X", "$JS.API.FOO", "$JS.API.META.LEADER.STEPDOWN",
                        "$JS.API.STREAM.CREATE.", "$JS.API.INFOX", "foo"})
    EXPECT_EQ(reply(s), "<none>") << s;
}

}  // namespace
}  // namespace js
