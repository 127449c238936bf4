// Users, permissions, bcrypt, nkeys and response grants (src/core/auth*.h, nkey.h): pure logic.
#include "src/core/auth.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "src/core/auth_config.h"
#include "src/core/nkey.h"

namespace {

using namespace core;

// "b-cr7pt-pw" hashed at cost 6 (libxcrypt's crypt_gensalt("$2a$", 6)).
constexpr const char* kHash = "$2a$06$aXatvg8ih.O04ETx0hByqOa7Ubkex/Czj0K0dETHYM47zHDC9F.4S";

permissions perms_of(std::optional<std::vector<std::string>> pub_allow, std::vector<std::string> pub_deny,
                     std::optional<std::vector<std::string>> sub_allow, std::vector<std::string> sub_deny) {
  permissions p;
  if (pub_allow || !pub_deny.empty()) p.publish = subject_permission{pub_allow, pub_deny};
  if (sub_allow || !sub_deny.empty()) p.subscribe = subject_permission{sub_allow, sub_deny};
  return p;
}

bool plain_check(const std::string& stored, const std::string& given) { return password_matches(stored, given); }
bool no_nkey(const std::string&, const std::string&) { return false; }

TEST(AuthPermissions, PublishAllowThenDeny) {
  const permissions p = perms_of(std::vector<std::string>{"orders.>", "stats"}, {"orders.secret.*"}, std::nullopt, {});
  EXPECT_TRUE(publish_allowed(p, "orders.new"));
  EXPECT_TRUE(publish_allowed(p, "orders.a.b"));
  EXPECT_TRUE(publish_allowed(p, "stats"));
  EXPECT_FALSE(publish_allowed(p, "orders"));
  EXPECT_FALSE(publish_allowed(p, "other"));
  EXPECT_FALSE(publish_allowed(p, "orders.secret.x"));
  EXPECT_TRUE(publish_allowed(p, "orders.secret.x.y"));  // '*' is one token
}

TEST(AuthPermissions, NoAllowListAllowsAllButDenied) {
  const permissions p = perms_of(std::nullopt, {"admin.>"}, std::nullopt, {"admin.>"});
  EXPECT_TRUE(publish_allowed(p, "anything"));
  EXPECT_FALSE(publish_allowed(p, "admin.x"));
  EXPECT_TRUE(subscribe_allowed(p, "anything.*", ""));
  EXPECT_FALSE(subscribe_allowed(p, "admin.x", ""));
  EXPECT_FALSE(subscribe_allowed(p, "admin.*", ""));
  // Subscribing wider than the deny list is allowed; the denied messages are filtered.
  EXPECT_TRUE(subscribe_allowed(p, ">", ""));
  EXPECT_TRUE(delivery_denied(p, "admin.secret"));
  EXPECT_FALSE(delivery_denied(p, "public"));
}

TEST(AuthPermissions, EmptyAllowListAllowsNothing) {
  const permissions p = perms_of(std::vector<std::string>{}, {}, std::vector<std::string>{}, {});
  EXPECT_FALSE(publish_allowed(p, "a"));
  EXPECT_FALSE(subscribe_allowed(p, "a", ""));
}

TEST(AuthPermissions, SubscribeWildcardsAreMatchedAsTokens) {
  const permissions p = perms_of(std::nullopt, {}, std::vector<std::string>{"foo.>", "bar.baz"}, {});
  EXPECT_TRUE(subscribe_allowed(p, "foo.*", ""));
  EXPECT_TRUE(subscribe_allowed(p, "foo.>", ""));
  EXPECT_FALSE(subscribe_allowed(p, "bar.*", ""));  // a wider subscription than the rule
  EXPECT_TRUE(subscribe_allowed(p, "bar.baz", ""));
  EXPECT_FALSE(subscribe_allowed(p, ">", ""));
}

TEST(AuthPermissions, QueueRules) {
  const permissions p = perms_of(std::nullopt, {}, std::vector<std::string>{"jobs workers", "pub.>"}, {"pub.x bad"});
  EXPECT_TRUE(subscribe_allowed(p, "jobs", "workers"));
  EXPECT_FALSE(subscribe_allowed(p, "jobs", "others"));
  EXPECT_FALSE(subscribe_allowed(p, "jobs", ""));  // a queue rule allows only that queue
  EXPECT_TRUE(subscribe_allowed(p, "pub.x", ""));
  EXPECT_TRUE(subscribe_allowed(p, "pub.x", "good"));
  EXPECT_FALSE(subscribe_allowed(p, "pub.x", "bad"));
}

TEST(AuthPermissions, ViolationTextsAreNatsServers) {
  EXPECT_EQ(publish_violation("a.b"), "Permissions Violation for Publish to \"a.b\"");
  EXPECT_EQ(subscribe_violation("a.*", ""), "Permissions Violation for Subscription to \"a.*\"");
  EXPECT_EQ(subscribe_violation("a", "q"), "Permissions Violation for Subscription to \"a\" using queue \"q\"");
  EXPECT_EQ(subscribe_revoked("a", "7"), "Permissions Violation for Subscription to \"a\" (sid \"7\")");
  EXPECT_EQ(publish_violation("a\"b"), "Permissions Violation for Publish to \"a\\\"b\"");
}

TEST(AuthPasswords, PlainAndBcrypt) {
  EXPECT_TRUE(password_matches("pw", "pw"));
  EXPECT_FALSE(password_matches("pw", "pw2"));
  EXPECT_FALSE(password_matches("pw", ""));
  EXPECT_TRUE(is_bcrypt_hash(kHash));
  EXPECT_TRUE(password_matches(kHash, "b-cr7pt-pw"));
  EXPECT_FALSE(password_matches(kHash, "b-cr7pt-pW"));
  EXPECT_FALSE(password_matches(kHash, ""));
  EXPECT_FALSE(password_matches("$2a$06$broken", "x"));  // a malformed hash never matches
  EXPECT_FALSE(password_matches(kHash, kHash));  // the hash itself is not the password
}

server_options users_conf() {
  server_options o;
  user_config alice{"alice", "pa", "", permissions{}};
  alice.perms->publish = subject_permission{std::vector<std::string>{"a.>"}, {}};
  user_config bob{"bob", kHash, "", std::nullopt};
  user_config svc{"svc", "ps", "", permissions{}};
  svc.perms->responses = response_permission{};
  o.users = {alice, bob, svc};
  o.default_permissions = permissions{};
  o.default_permissions->subscribe = subject_permission{std::vector<std::string>{"_INBOX.>"}, {}};
  return o;
}

TEST(AuthTable, UsersPasswordsAndDefaults) {
  server_options o = users_conf();
  auto t = build_auth_table(o);
  ASSERT_TRUE(t->required);
  auto a = authenticate(*t, {"alice", "pa", "", "", ""}, plain_check, no_nkey);
  ASSERT_TRUE(a.ok);
  ASSERT_TRUE(a.user && a.user->perms);
  EXPECT_TRUE(publish_allowed(*a.user->perms, "a.b"));
  EXPECT_FALSE(publish_allowed(*a.user->perms, "b"));
  EXPECT_FALSE(authenticate(*t, {"alice", "pb", "", "", ""}, plain_check, no_nkey).ok);
  EXPECT_FALSE(authenticate(*t, {"carol", "pa", "", "", ""}, plain_check, no_nkey).ok);
  EXPECT_FALSE(authenticate(*t, {}, plain_check, no_nkey).ok);  // no no_auth_user
  auto b = authenticate(*t, {"bob", "b-cr7pt-pw", "", "", ""}, plain_check, no_nkey);
  ASSERT_TRUE(b.ok);
  ASSERT_TRUE(b.user->perms);  // default_permissions
  EXPECT_TRUE(subscribe_allowed(*b.user->perms, "_INBOX.x", ""));
  EXPECT_FALSE(subscribe_allowed(*b.user->perms, "x", ""));
  EXPECT_TRUE(publish_allowed(*b.user->perms, "x"));
  // allow_responses alone: publish nothing but responses.
  auto s = authenticate(*t, {"svc", "ps", "", "", ""}, plain_check, no_nkey);
  ASSERT_TRUE(s.ok);
  EXPECT_FALSE(publish_allowed(*s.user->perms, "x"));
  EXPECT_TRUE(s.user->perms->responses.has_value());
}

TEST(AuthTable, NoAuthUserAndToken) {
  server_options o = users_conf();
  o.no_auth_user = "alice";
  auto t = build_auth_table(o);
  auto a = authenticate(*t, {}, plain_check, no_nkey);
  ASSERT_TRUE(a.ok);
  EXPECT_EQ(a.user->name, "alice");
  // Credentials given are checked, not replaced by the no_auth_user.
  EXPECT_FALSE(authenticate(*t, {"bob", "wrong", "", "", ""}, plain_check, no_nkey).ok);
  server_options tok;
  tok.token = "tk";
  auto tt = build_auth_table(tok);
  EXPECT_TRUE(authenticate(*tt, {"", "", "tk", "", ""}, plain_check, no_nkey).ok);
  EXPECT_FALSE(authenticate(*tt, {"", "", "tx", "", ""}, plain_check, no_nkey).ok);
  server_options none;
  EXPECT_FALSE(build_auth_table(none)->required);
  EXPECT_TRUE(authenticate(*build_auth_table(none), {}, plain_check, no_nkey).ok);
}

TEST(AuthResponses, GrantsCountAndExpire) {
  response_grants g;
  const response_permission one{};  // 1 message, 2 minutes
  EXPECT_FALSE(g.use("_INBOX.1", 0, one));
  g.grant("_INBOX.1", 1000, one);
  EXPECT_TRUE(g.use("_INBOX.1", 1001, one));
  EXPECT_FALSE(g.use("_INBOX.1", 1002, one));  // the one response is spent
  const response_permission three{3, 500};
  g.grant("_INBOX.2", 0, three);
  EXPECT_TRUE(g.use("_INBOX.2", 100, three));
  EXPECT_TRUE(g.use("_INBOX.2", 200, three));
  EXPECT_TRUE(g.use("_INBOX.2", 300, three));
  EXPECT_FALSE(g.use("_INBOX.2", 301, three));
  g.grant("_INBOX.3", 0, three);
  EXPECT_FALSE(g.use("_INBOX.3", 501, three));  // expired
  const response_permission unlimited{-1, -1};
  g.grant("_INBOX.4", 0, unlimited);
  for (int i = 0; i < 10; ++i) EXPECT_TRUE(g.use("_INBOX.4", 1'000'000'000, unlimited));
}

TEST(AuthResponses, ManyGrantsArePruned) {
  response_grants g;
  const response_permission rp{1, 100};
  for (int i = 0; i < 5000; ++i) g.grant("r." + std::to_string(i), i < 4000 ? 0 : 10'000, rp);
  EXPECT_LT(g.size(), 2000u);  // the expired ones went when the map grew past 4096
}

TEST(Nkeys, SeedSignVerify) {
  const std::string seed = nkey_new_user_seed();
  ASSERT_EQ(seed.substr(0, 2), "SU");
  const std::string pub = nkey_public_from_seed(seed);
  ASSERT_EQ(pub.size(), 56u);
  ASSERT_EQ(pub[0], 'U');
  const std::string nonce = make_nonce();
  EXPECT_EQ(nonce.size(), 15u);
  const std::string sig = nkey_sign(seed, nonce);
  EXPECT_TRUE(nkey_verify(pub, nonce, sig));
  EXPECT_FALSE(nkey_verify(pub, nonce + "x", sig));
  const std::string other = nkey_public_from_seed(nkey_new_user_seed());
  EXPECT_FALSE(nkey_verify(other, nonce, sig));
  std::string bad_crc = pub;
  bad_crc[10] = bad_crc[10] == 'A' ? 'B' : 'A';
  EXPECT_FALSE(nkey_verify(bad_crc, nonce, sig));
  EXPECT_FALSE(nkey_verify(pub, nonce, "not base64!"));
  EXPECT_FALSE(nkey_verify("", nonce, sig));
  EXPECT_EQ(nkey_public_from_seed("SUBAD"), "");
}

std::filesystem::path write_conf(const std::string& text) {
  auto p = std::filesystem::temp_directory_path() / ("pg_auth_" + std::to_string(::getpid()) + ".conf");
  std::ofstream(p) << text;
  return p;
}

TEST(Accounts, ServiceRepliesAreAuthenticated) {
  const std::int64_t t = 1'700'000'000'000;  // ms
  const std::string r = service_reply(3, "_INBOX.abc.def", t);
  EXPECT_TRUE(is_service_reply(r));
  service_reply_info info;
  ASSERT_TRUE(parse_service_reply(r, t + 1, info));
  EXPECT_EQ(info.account, 3u);
  EXPECT_EQ(info.reply, "_INBOX.abc.def");
  EXPECT_FALSE(info.singleton);
  EXPECT_EQ(info.expires_ms, t + kServiceReplyTtlMs);
  EXPECT_TRUE(parse_service_reply(r, t + kServiceReplyTtlMs, info));
  EXPECT_FALSE(parse_service_reply(r, t + kServiceReplyTtlMs + 1, info));  // expired
  // Another account, expiry, kind or reply under the same mac is a forgery.
  std::string forged = r;
  forged.replace(service_reply_prefix().size(), 1, "2");
  EXPECT_FALSE(parse_service_reply(forged, t, info));
  std::string later = r;
  later.replace(later.find(std::to_string(t + kServiceReplyTtlMs)), 13, std::to_string(t + kServiceReplyTtlMs + 100'000));
  EXPECT_FALSE(parse_service_reply(later, t, info));
  std::string single = r;
  single[single.find(".m") + 1] = 's';
  EXPECT_FALSE(parse_service_reply(single, t, info));
  EXPECT_FALSE(parse_service_reply(r.substr(0, r.size() - 1) + "x", t, info));
  EXPECT_FALSE(parse_service_reply("_R_.3.1700000000.m0000000000000000.x", t, info));
  // Another process's reply (another tag), even with this process's mac after it.
  std::string foreign = r;
  foreign.replace(4, 6, foreign.substr(4, 6) == "AAAAAA" ? "BBBBBB" : "AAAAAA");
  EXPECT_FALSE(parse_service_reply(foreign, t, info));
  EXPECT_EQ(r.rfind(service_reply_prefix(), 0), 0u);
  EXPECT_FALSE(parse_service_reply("_R_.x", t, info));
  EXPECT_FALSE(parse_service_reply("orders.x", t, info));
  // A Singleton's kind and a threshold of its own.
  const std::string s1 = service_reply(1, "in.1", t, true, 500);
  ASSERT_TRUE(parse_service_reply(s1, t, info));
  EXPECT_TRUE(info.singleton);
  EXPECT_FALSE(parse_service_reply(s1, t + 501, info));
}

// Which responses pass: a Singleton's first; a stream's until its empty message; entries go
// after their reply expires.
TEST(Accounts, ResponseLedgerAppliesResponseTypes) {
  response_ledger ledger;
  const std::int64_t t = 1'000'000;
  service_reply_info single{1, "in.s", true, t + 100};
  EXPECT_TRUE(ledger.pass("_R_.s", single, false, t));
  EXPECT_FALSE(ledger.pass("_R_.s", single, false, t + 1));
  EXPECT_FALSE(ledger.pass("_R_.s", single, true, t + 1));
  service_reply_info stream{1, "in.m", false, t + 100};
  EXPECT_TRUE(ledger.pass("_R_.m", stream, false, t));
  EXPECT_TRUE(ledger.pass("_R_.m", stream, false, t));
  EXPECT_TRUE(ledger.pass("_R_.m", stream, true, t));  // the empty message ends it, and passes
  EXPECT_FALSE(ledger.pass("_R_.m", stream, false, t));
  EXPECT_EQ(ledger.size(), 2u);
  service_reply_info other{1, "in.o", true, t + 5000};
  EXPECT_TRUE(ledger.pass("_R_.o", other, false, t + 2000));  // prunes the expired two
  EXPECT_EQ(ledger.size(), 1u);
}

// The exporter's subject a cluster announces for an importer's subscription (its shadow).
TEST(Accounts, StreamImportInterest) {
  std::string out;
  const stream_forward prefixed{"feed.>", 1, "svc", ""};
  ASSERT_TRUE(stream_import_interest(prefixed, "svc.feed.a", out));
  EXPECT_EQ(out, "feed.a");  // inside the import: mapped back
  ASSERT_TRUE(stream_import_interest(prefixed, "svc.feed.*", out));
  EXPECT_EQ(out, "feed.*");
  ASSERT_TRUE(stream_import_interest(prefixed, ">", out));
  EXPECT_EQ(out, "feed.>");  // wider than the import: the export's filter
  ASSERT_TRUE(stream_import_interest(prefixed, "*.feed.a", out));
  EXPECT_EQ(out, "feed.>");  // overlapping: the export's filter (receivers are matched exactly)
  EXPECT_FALSE(stream_import_interest(prefixed, "feed.a", out));  // without the prefix: not imported
  EXPECT_FALSE(stream_import_interest(prefixed, "svc.other", out));
  const stream_forward plain{"a.*", 1, "", ""};
  ASSERT_TRUE(stream_import_interest(plain, "a.b", out));
  EXPECT_EQ(out, "a.b");
  ASSERT_TRUE(stream_import_interest(plain, "a.>", out));
  EXPECT_EQ(out, "a.*");
  const stream_forward renamed{"a.b", 1, "", "local.b"};
  ASSERT_TRUE(stream_import_interest(renamed, "local.*", out));
  EXPECT_EQ(out, "a.b");
  EXPECT_FALSE(stream_import_interest(renamed, "a.b", out));
}

TEST(Accounts, ImportSubjectMapping) {
  EXPECT_EQ(stream_import_subject(stream_forward{"a.>", 1, "from_a", ""}, "a.b"), "from_a.a.b");
  EXPECT_EQ(stream_import_subject(stream_forward{"a.b", 1, "", "local.b"}, "a.b"), "local.b");
  EXPECT_EQ(stream_import_subject(stream_forward{"a.>", 1, "", ""}, "a.c"), "a.c");
  EXPECT_EQ(service_import_subject(service_forward{"help", "help", 1}, "help"), "help");
  EXPECT_EQ(service_import_subject(service_forward{"b.help", "help", 1}, "b.help"), "help");
  EXPECT_EQ(service_import_subject(service_forward{"svc.>", "svc.>", 1}, "svc.x.y"), "svc.x.y");
  // A wildcard `to`: the importer's tokens fill the export's wildcards by position.
  EXPECT_EQ(service_import_subject(service_forward{"JS.A.API.>", "$JS.API.>", 1}, "JS.A.API.STREAM.INFO.S"),
            "$JS.API.STREAM.INFO.S");
  EXPECT_EQ(service_import_subject(service_forward{"q.*.x.*", "svc.*.*", 1}, "q.one.x.two"), "svc.one.two");
  EXPECT_EQ(service_import_subject(service_forward{"a.*.>", "b.*.c.>", 1}, "a.1.2.3"), "b.1.c.2.3");
  EXPECT_EQ(stream_import_subject(stream_forward{"a.*.>", 1, "", "b.*.x.>"}, "a.1.2.3"), "b.1.x.2.3");
  EXPECT_EQ(map_import_subject("$JS.API.>", "JS.A.API.>", "$JS.API.INFO"), "JS.A.API.INFO");
  EXPECT_TRUE(import_mappable("JS.A.API.>", "$JS.API.>"));
  EXPECT_TRUE(import_mappable("x.*.y", "z.*"));
  EXPECT_FALSE(import_mappable("x.>", "y.*"));
  EXPECT_FALSE(import_mappable("x.*.*", "y.*"));
  EXPECT_FALSE(import_mappable("local", "svc.>"));
}

// A service import's `to` may carry the subject's wildcards (accounts sharing JetStream:
// "$JS.API.>" imported as "JS.A.API.>", as nats-server allows).
TEST(Accounts, WildcardServiceImportToIsAccepted) {
  const auto p = write_conf(R"(accounts {
    A { exports: [ {service: "$JS.API.>"} ] }
    B { imports: [ {service: {account: A, subject: "$JS.API.>"}, to: "JS.A.API.>"} ] } })");
  server_options o;
  std::string err;
  std::vector<std::string> warns;
  EXPECT_TRUE(load_config_file(p.string(), o, err, warns)) << err;
  std::filesystem::remove(p);
}

// accounts { A { jetstream: ... } } as nats-server parses it: enabled/disabled or a map of
// limits (with aliases and size suffixes); anything else is an error naming the key.
TEST(Accounts, JetStreamPerAccountConfig) {
  const auto p = write_conf(R"(
    accounts {
      A { users: [ {user: a, password: pa} ], jetstream: enabled }
      B { users: [ {user: b, password: pb} ], jetstream: { max_mem: 1M, store: 2G, streams: 10, max_consumers: 5 } }
      C { users: [ {user: c, password: pc} ], jetstream: disabled }
      D { users: [ {user: d, password: pd} ] }
    }
  )");
  server_options o;
  std::string err;
  std::vector<std::string> warns;
  ASSERT_TRUE(load_config_file(p.string(), o, err, warns)) << err;
  std::filesystem::remove(p);
  ASSERT_EQ(o.accounts.size(), 4u);
  EXPECT_TRUE(o.accounts[0].jetstream);
  EXPECT_EQ(o.accounts[0].js_max_memory, -1);
  EXPECT_TRUE(o.accounts[1].jetstream);
  EXPECT_EQ(o.accounts[1].js_max_memory, 1000000);
  EXPECT_EQ(o.accounts[1].js_max_file, 2000000000);
  EXPECT_EQ(o.accounts[1].js_max_streams, 10);
  EXPECT_EQ(o.accounts[1].js_max_consumers, 5);
  EXPECT_FALSE(o.accounts[2].jetstream);
  EXPECT_FALSE(o.accounts[3].jetstream);
  for (const auto& w : warns) EXPECT_EQ(w.find("jetstream"), std::string::npos) << w;
  const auto bad = write_conf("accounts { A { users: [ {user: a, password: pa} ], jetstream: maybe } }\n");
  server_options o2;
  EXPECT_FALSE(load_config_file(bad.string(), o2, err, warns));
  EXPECT_NE(err.find("Expected 'enabled' or 'disabled' for string value, got 'maybe'"), std::string::npos) << err;
  std::filesystem::remove(bad);
}

TEST(Accounts, ConfigBuildsRulesPerAccount) {
  const auto p = write_conf(R"(
    accounts {
      A { users: [ {user: a, password: pa} ], exports: [ {stream: "feed.>"}, {service: "help", accounts: [B]} ] }
      B { users: [ {user: b, password: pb} ],
          imports: [ {stream: {account: A, subject: "feed.>"}, prefix: "from_a"}, {service: {account: A, subject: help}, to: "a.help"} ] }
    }
    authorization { users: [ {user: g, password: pg} ] }
  )");
  server_options o;
  std::string err;
  std::vector<std::string> warns;
  ASSERT_TRUE(load_config_file(p.string(), o, err, warns)) << err;
  std::filesystem::remove(p);
  ASSERT_EQ(o.accounts.size(), 2u);
  auto t = build_auth_table(o);
  ASSERT_EQ(t->accounts.size(), 4u);  // and the default system account, last
  EXPECT_EQ(t->accounts[3].name, "$SYS");
  EXPECT_EQ(t->system_account, 3u);
  EXPECT_EQ(t->accounts[1].name, "A");
  ASSERT_EQ(t->accounts[1].streams_out.size(), 1u);
  EXPECT_EQ(t->accounts[1].streams_out[0].to_account, 2u);
  EXPECT_EQ(t->accounts[1].streams_out[0].prefix, "from_a");
  // Its own import, then nats-server's three system imports (connz and statz of the account).
  ASSERT_EQ(t->accounts[2].services_out.size(), 4u);
  EXPECT_EQ(t->accounts[2].services_out[1].local, "$SYS.REQ.ACCOUNT.PING.CONNZ");
  EXPECT_EQ(t->accounts[2].services_out[1].remote, "$SYS.REQ.ACCOUNT.B.CONNZ");
  EXPECT_EQ(t->accounts[2].services_out[1].to_account, 3u);
  EXPECT_FALSE(t->accounts[2].services_out[1].singleton);
  EXPECT_TRUE(t->accounts[2].services_out[0].singleton);  // the export's default response_type
  EXPECT_EQ(t->accounts[3].services_out.size(), 0u);       // none in the system account itself
  EXPECT_EQ(t->accounts[2].services_out[0].local, "a.help");
  EXPECT_EQ(t->accounts[2].services_out[0].remote, "help");
  EXPECT_EQ(t->accounts[2].services_out[0].to_account, 1u);
  auto b = authenticate(*t, {"b", "pb", "", "", ""}, plain_check, no_nkey);
  ASSERT_TRUE(b.ok);
  EXPECT_EQ(b.user->account, 2u);
  EXPECT_EQ(authenticate(*t, {"g", "pg", "", "", ""}, plain_check, no_nkey).user->account, kGlobalAccount);
}

TEST(Accounts, BadImportsAreRejected) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"accounts { A {}, B { imports: [ {stream: {account: C, subject: x}} ] } }", "unknown account \"C\""},
      {"accounts { A {}, B { imports: [ {stream: {account: A, subject: x}} ] } }", "is not exported"},
      {"accounts { A { exports: [ {service: x, accounts: [C]} ] }, B { imports: [ {service: {account: A, subject: x}} ] } }",
       "is not exported"},
      {"accounts { A { exports: [ {stream: \"x.*\"} ] }, B { imports: [ {stream: {account: A, subject: \"x.>\"}} ] } }",
       "is not exported"},
      {"accounts { A { users: [ {user: u} ] }, B { users: [ {user: u} ] } }", "duplicate user"},
      {"accounts { A { exports: [ {service: \"s.>\"} ] }, B { imports: [ {service: {account: A, subject: \"s.>\"}, "
       "to: \"t.*\"} ] } }",
       "must have the same wildcards"},
      {"accounts { A { exports: [ {stream: \"s.>\"} ] }, B { imports: [ {stream: {account: A, subject: \"s.>\"}, "
       "to: \"t.*\"} ] } }",
       "must have the same wildcards"},
  };
  for (const auto& [text, want] : cases) {
    const auto p = write_conf(text);
    server_options o;
    std::string err;
    std::vector<std::string> warns;
    EXPECT_FALSE(load_config_file(p.string(), o, err, warns)) << text;
    EXPECT_NE(err.find(want), std::string::npos) << text << " -> " << err;
    std::filesystem::remove(p);
  }
}


TEST(AuthConfig, UsersPermissionsAndResponses) {
  const auto p = write_conf(R"(
    RO = { publish: { deny: ">" }, subscribe: "public.>" }
    authorization {
      default_permissions: { publish: ["a", "b.*"], subscribe: { allow: ["x"], deny: "x.y" } }
      users: [
        { user: alice, password: "pa", permissions: $RO }
        { user: bob, password: "pb" }
        { user: svc, password: "ps", permissions: { subscribe: "jobs workers", allow_responses: { max: 3, expires: "1m" } } }
        { user: svc2, password: "ps", permissions: { allow_responses: true } }
        { nkey: UDXU4RCSJNZOIQHZNWXHXORDPRTGNJAHAHFRGZNEEJCPQTT2M7NLCNF4 }
      ]
    }
    no_auth_user: bob
  )");
  server_options o;
  std::string err;
  std::vector<std::string> warns;
  ASSERT_TRUE(load_config_file(p.string(), o, err, warns)) << err;
  EXPECT_TRUE(warns.empty()) << warns[0];
  ASSERT_EQ(o.users.size(), 5u);
  EXPECT_EQ(o.no_auth_user, "bob");
  ASSERT_TRUE(o.users[0].perms && o.users[0].perms->publish);
  EXPECT_FALSE(o.users[0].perms->publish->allow.has_value());
  EXPECT_EQ(o.users[0].perms->publish->deny, std::vector<std::string>{">"});
  EXPECT_EQ(*o.users[0].perms->subscribe->allow, std::vector<std::string>{"public.>"});
  EXPECT_FALSE(o.users[1].perms.has_value());
  ASSERT_TRUE(o.default_permissions);
  EXPECT_EQ(*o.default_permissions->publish->allow, (std::vector<std::string>{"a", "b.*"}));
  EXPECT_EQ(o.default_permissions->subscribe->deny, std::vector<std::string>{"x.y"});
  EXPECT_EQ(*o.users[2].perms->subscribe->allow, std::vector<std::string>{"jobs workers"});
  EXPECT_EQ(o.users[2].perms->responses, (response_permission{3, 60'000}));
  EXPECT_EQ(o.users[3].perms->responses, response_permission{});
  EXPECT_EQ(o.users[4].nkey, "UDXU4RCSJNZOIQHZNWXHXORDPRTGNJAHAHFRGZNEEJCPQTT2M7NLCNF4");
  std::filesystem::remove(p);
}

TEST(AuthConfig, BadConfigsAreRejectedClearly) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"authorization { users: [ { password: x } ] }", "a user needs a user name or an nkey"},
      {"authorization { users: [ {user: a}, {user: a} ] }", "duplicate user \"a\""},
      {"authorization { token: t, users: [ {user: a} ] }", "can not have a token and a users array"},
      {"authorization { users: [ {user: a} ] }\nno_auth_user: b", "no_auth_user: \"b\" not present"},
      {"authorization { users: [ {user: a, permissions: { publish: \"a..b\" }} ] }", "\"a..b\" is not a valid subject"},
      {"authorization { users: [ {user: a, permissions: { publish: \"a q\" }} ] }", "not a valid subject"},
      {"authorization { users: [ {nkey: UABC} ] }", "not a valid public user nkey"},
      // 56 characters, but the CRC does not match.
      {"authorization { users: [ {nkey: UDXU4RCSJNZOIQHZNWXHXORDPRTGNJAHAHFRGZNEEJCPQTT2M7NLCNF5} ] }",
       "not a valid public user nkey"},
      {"authorization { users: {user: a} }", "expected a list of users"},
      {"authorization { users: [ {user: a, permissions: { allow_responses: maybe }} ] }", "expected true, false"},
  };
  for (const auto& [text, want] : cases) {
    const auto p = write_conf(text);
    server_options o;
    std::string err;
    std::vector<std::string> warns;
    EXPECT_FALSE(load_config_file(p.string(), o, err, warns)) << text;
    EXPECT_NE(err.find(want), std::string::npos) << text << " -> " << err;
    std::filesystem::remove(p);
  }
}

}  // namespace
