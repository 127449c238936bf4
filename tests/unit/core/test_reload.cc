// plan_reload: what a SIGHUP may change live and what it refuses (needs a restart).
#include <gtest/gtest.h>

#include <algorithm>

#include "src/core/options.h"
#include "src/core/reload.h"

namespace core {
namespace {

bool has(const std::vector<std::string>& v, const std::string& prefix) {
  return std::any_of(v.begin(), v.end(), [&](const std::string& s) { return s.rfind(prefix, 0) == 0; });
}

TEST(plan_reload, identical_options_change_nothing) {
  server_options a;
  const reload_plan p = plan_reload(a, a);
  EXPECT_TRUE(p.changed.empty());
  EXPECT_TRUE(p.refused.empty());
  EXPECT_FALSE(p.auth_changed);
  EXPECT_FALSE(p.logging_changed);
}

TEST(plan_reload, limits_auth_and_logging_apply_live) {
  server_options cur, next;
  next.max_payload = 2048;
  next.max_pending = 1 << 20;
  next.max_connections = 10;
  next.token = "s3cret";
  next.debug = true;
  next.server_tags = {"az:1"};
  const reload_plan p = plan_reload(cur, next);
  EXPECT_EQ(p.result.max_payload, 2048);
  EXPECT_EQ(p.result.max_pending, 1 << 20);
  EXPECT_EQ(p.result.max_connections, 10);
  EXPECT_EQ(p.result.token, "s3cret");
  EXPECT_TRUE(p.result.debug);
  EXPECT_EQ(p.result.server_tags, std::vector<std::string>{"az:1"});
  EXPECT_TRUE(p.auth_changed);
  EXPECT_TRUE(p.logging_changed);
  EXPECT_TRUE(has(p.changed, "max_payload"));
  EXPECT_TRUE(has(p.changed, "authorization.token"));
  EXPECT_TRUE(p.refused.empty());
}

TEST(plan_reload, users_permissions_and_no_auth_user_apply_live) {
  server_options cur, next;
  cur.users = {user_config{"a", "pa", "", std::nullopt}};
  next.users = {user_config{"a", "pa", "", permissions{subject_permission{std::vector<std::string>{"x"}, {}}, {}, {}}},
                user_config{"b", "pb", "", std::nullopt}};
  next.default_permissions = permissions{};
  next.no_auth_user = "b";
  const reload_plan p = plan_reload(cur, next);
  EXPECT_TRUE(p.auth_changed);
  EXPECT_EQ(p.result.users, next.users);
  EXPECT_EQ(p.result.default_permissions, next.default_permissions);
  EXPECT_EQ(p.result.no_auth_user, "b");
  EXPECT_TRUE(has(p.changed, "authorization.users"));
  EXPECT_TRUE(has(p.changed, "authorization.default_permissions"));
  EXPECT_TRUE(has(p.changed, "no_auth_user"));
  EXPECT_TRUE(p.refused.empty());
  // Only a permission inside a user changed: still an auth change.
  server_options same_users = cur;
  same_users.users[0].perms = permissions{};
  EXPECT_TRUE(plan_reload(cur, same_users).auth_changed);
}

TEST(plan_reload, account_users_change_live_but_accounts_need_a_restart) {
  server_options cur, next;
  cur.accounts = {account_config{"A", {user_config{"a", "pa", "", std::nullopt}}, {}, {}, std::nullopt, false}};
  next = cur;
  next.accounts[0].users.push_back(user_config{"a2", "pa", "", std::nullopt});
  reload_plan p = plan_reload(cur, next);
  EXPECT_TRUE(p.auth_changed);
  EXPECT_EQ(p.result.accounts, next.accounts);
  EXPECT_TRUE(p.refused.empty());
  server_options defaults = cur;  // an account's default_permissions are live too
  defaults.accounts[0].default_permissions = permissions{};
  EXPECT_TRUE(plan_reload(cur, defaults).refused.empty());
  EXPECT_TRUE(plan_reload(cur, defaults).auth_changed);
  next.accounts.push_back(account_config{"B", {}, {}, {}, std::nullopt, false});
  p = plan_reload(cur, next);
  EXPECT_EQ(p.result.accounts, cur.accounts);
  EXPECT_TRUE(has(p.refused, "accounts:"));
}

TEST(plan_reload, listener_threads_and_storage_are_refused_and_kept) {
  server_options cur, next;
  cur.port = -1;
  next.port = 4333;
  next.shards = 4;
  next.jetstream = true;
  next.store_dir = "/elsewhere";
  next.max_payload = 4096;  // a live change in the same reload still applies
  const reload_plan p = plan_reload(cur, next);
  EXPECT_EQ(p.result.port, -1);
  EXPECT_EQ(p.result.shards, 0);
  EXPECT_FALSE(p.result.jetstream);
  EXPECT_EQ(p.result.store_dir, "");
  EXPECT_EQ(p.result.max_payload, 4096);
  EXPECT_TRUE(has(p.refused, "port: -1 -> 4333"));
  EXPECT_TRUE(has(p.refused, "shards: 0 -> 4"));
  EXPECT_TRUE(has(p.refused, "jetstream: false -> true"));
  EXPECT_TRUE(has(p.refused, "jetstream.store_dir: \"\" -> \"/elsewhere\""));
  EXPECT_EQ(p.refused.size(), 4u);
}

TEST(plan_reload, cluster_changes_need_a_restart) {
  server_options cur, next;
  cur.cluster = next.cluster = true;
  cur.routes = {"nats://a:1"};
  next.routes = {"nats://a:1", "nats://b:2"};
  next.cluster_name = "other";
  const reload_plan p = plan_reload(cur, next);
  EXPECT_EQ(p.result.routes, cur.routes);
  EXPECT_TRUE(has(p.refused, "cluster.routes: [nats://a:1] -> [nats://a:1, nats://b:2]"));
  EXPECT_TRUE(has(p.refused, "cluster.name: \"\" -> \"other\""));
  EXPECT_EQ(p.refused.size(), 2u);
}

TEST(plan_reload, route_security_changes_need_a_restart_and_hide_the_password) {
  server_options cur, next;
  cur.cluster = next.cluster = true;
  next.cluster_user = "ruser";
  next.cluster_pass = "secret";
  next.cluster_tls.enabled = true;
  next.cluster_permissions.emplace();
  const reload_plan p = plan_reload(cur, next);
  EXPECT_TRUE(has(p.refused, "cluster.authorization.user: \"\" -> \"ruser\""));
  EXPECT_TRUE(has(p.refused, "cluster.authorization.password: changed"));
  EXPECT_TRUE(has(p.refused, "cluster.tls: changed"));
  EXPECT_TRUE(has(p.refused, "cluster.permissions: changed"));
  EXPECT_EQ(p.refused.size(), 4u);
  for (const auto& r : p.refused) EXPECT_EQ(r.find("secret"), std::string::npos) << r;
  EXPECT_TRUE(plan_reload(next, next).refused.empty());
}

TEST(lame_duck_due, nothing_during_grace_then_spread_then_all) {
  constexpr std::int64_t s = 1'000'000'000;
  EXPECT_EQ(lame_duck_due(10, 0, 1 * s, 11 * s), 0u);
  EXPECT_EQ(lame_duck_due(10, s - 1, 1 * s, 11 * s), 0u);
  EXPECT_EQ(lame_duck_due(10, 1 * s, 1 * s, 11 * s), 1u);   // the first goes right after the grace
  EXPECT_EQ(lame_duck_due(10, 6 * s, 1 * s, 11 * s), 6u);   // half the spread: half (+1)
  EXPECT_EQ(lame_duck_due(10, 10 * s, 1 * s, 11 * s), 10u);
  EXPECT_EQ(lame_duck_due(10, 11 * s, 1 * s, 11 * s), 10u);
  EXPECT_EQ(lame_duck_due(10, 99 * s, 1 * s, 11 * s), 10u);
}

TEST(lame_duck_due, grace_longer_than_duration_closes_all_at_the_end) {
  constexpr std::int64_t s = 1'000'000'000;
  EXPECT_EQ(lame_duck_due(4, 2 * s, 5 * s, 3 * s), 0u);
  EXPECT_EQ(lame_duck_due(4, 3 * s, 5 * s, 3 * s), 4u);
  EXPECT_EQ(lame_duck_due(0, 3 * s, 5 * s, 3 * s), 0u);
}

TEST(plan_reload, tls_certificates_apply_live_and_the_handshake_shape_needs_a_restart) {
  server_options cur;
  cur.tls.enabled = true;
  cur.tls.cert_file = "/a.pem";
  server_options next = cur;
  next.tls.cert_file = "/b.pem";
  next.tls.verify = true;
  next.tls.timeout_ms = 500;
  next.tls.allow_non_tls = true;
  const reload_plan p = plan_reload(cur, next);
  EXPECT_TRUE(p.tls_changed);
  EXPECT_EQ(p.result.tls.cert_file, "/b.pem");
  EXPECT_TRUE(p.result.tls.verify);
  EXPECT_TRUE(has(p.changed, "tls.cert_file"));
  EXPECT_TRUE(has(p.changed, "tls.verify"));
  EXPECT_EQ(p.result.tls.timeout_ms, 2000);
  EXPECT_FALSE(p.result.tls.allow_non_tls);
  EXPECT_TRUE(has(p.refused, "tls.timeout: 2000 -> 500"));
  EXPECT_TRUE(has(p.refused, "allow_non_tls: false -> true"));

  server_options plain;
  const reload_plan on = plan_reload(plain, next);  // TLS cannot be switched on live
  EXPECT_FALSE(on.tls_changed);
  EXPECT_FALSE(on.result.tls.enabled);
  EXPECT_TRUE(has(on.refused, "tls: disabled -> enabled"));
  EXPECT_TRUE(plan_reload(cur, cur).changed.empty());
}

}  // namespace
}  // namespace core
