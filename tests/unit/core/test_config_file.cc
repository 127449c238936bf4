#include "src/core/config_file.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "src/base/rng.h"

namespace {

using namespace core;
namespace fs = std::filesystem;

config_value parse_ok(const std::string& text) {
  config_value root;
  std::string err;
  EXPECT_TRUE(parse_config_text(text, "t.conf", root, err)) << err << "\n--- input:\n" << text;
  return root;
}

std::string parse_err(const std::string& text) {
  config_value root;
  std::string err;
  EXPECT_FALSE(parse_config_text(text, "t.conf", root, err)) << text;
  return err;
}

std::string scalar(const config_value& root, const char* key) {
  const auto* v = root.find(key);
  if (v == nullptr) return "<missing>";
  if (!v->is_scalar()) return "<not scalar>";
  return v->text;
}

TEST(ConfigParse, SeparatorForms) {
  const auto r = parse_ok("a: 1\nb = 2\nc 3\nd:4\ne=5\nf\t6\ng :7\nh = \"x y\"\n");
  EXPECT_EQ(scalar(r, "a"), "1");
  EXPECT_EQ(scalar(r, "b"), "2");
  EXPECT_EQ(scalar(r, "c"), "3");
  EXPECT_EQ(scalar(r, "d"), "4");
  EXPECT_EQ(scalar(r, "e"), "5");
  EXPECT_EQ(scalar(r, "f"), "6");
  EXPECT_EQ(scalar(r, "g"), "7");
  EXPECT_EQ(scalar(r, "h"), "x y");
  EXPECT_EQ(r.entries.size(), 8u);
}

TEST(ConfigParse, CommentsAndTerminators) {
  const auto r = parse_ok("# top comment\n// another\na: 1 # trailing\nb: 2 // trailing\n"
                          "c: 3; d: 4, e: 5\n\n\n  # indented\nf: \"has # not comment\"\n"
                          "g: http://x/y\n");
  EXPECT_EQ(scalar(r, "a"), "1");
  EXPECT_EQ(scalar(r, "b"), "2");
  EXPECT_EQ(scalar(r, "c"), "3");
  EXPECT_EQ(scalar(r, "d"), "4");
  EXPECT_EQ(scalar(r, "e"), "5");
  EXPECT_EQ(scalar(r, "f"), "has # not comment");
  EXPECT_EQ(scalar(r, "g"), "http://x/y");
}

TEST(ConfigParse, Strings) {
  const auto r = parse_ok("a: \"tab\\there\\n\\\"q\\\" \\\\ \\x41\"\nb: 'raw \\t kept'\nc: unquoted.value-1\n"
                          "d: \"\"\n'quoted key': 1\n\"dq key\" = 2\nip: 127.0.0.1:4222\n");
  EXPECT_EQ(scalar(r, "a"), "tab\there\n\"q\" \\ A");
  EXPECT_TRUE(r.find("a")->quoted);
  EXPECT_EQ(scalar(r, "b"), "raw \\t kept");
  EXPECT_EQ(scalar(r, "c"), "unquoted.value-1");
  EXPECT_FALSE(r.find("c")->quoted);
  EXPECT_EQ(scalar(r, "d"), "");
  EXPECT_EQ(scalar(r, "quoted key"), "1");
  EXPECT_EQ(scalar(r, "dq key"), "2");
  EXPECT_EQ(scalar(r, "ip"), "127.0.0.1:4222");
}

TEST(ConfigParse, MapsAndArrays) {
  const auto r = parse_ok(R"(
m1 { a: 1, b: 2 }
m2: {
  a: 1
  nested { x = [1, 2, 3] }
}
m3 = {a:1;b:2}
arr1: [1, 2, 3]
arr2: [
  "a"
  "b",
  c   # comment inside
]
arr3: [ { k: v }, [1, 2], ]
empty_map {}
empty_arr: []
)");
  const auto* m1 = r.find("m1");
  ASSERT_TRUE(m1 && m1->is_map());
  EXPECT_EQ(scalar(*m1, "b"), "2");
  const auto* nested = r.find("m2")->find("nested");
  ASSERT_TRUE(nested && nested->is_map());
  const auto* x = nested->find("x");
  ASSERT_TRUE(x && x->is_array());
  ASSERT_EQ(x->items.size(), 3u);
  EXPECT_EQ(x->items[2].text, "3");
  EXPECT_EQ(scalar(*r.find("m3"), "b"), "2");
  EXPECT_EQ(r.find("arr1")->items.size(), 3u);
  const auto* a2 = r.find("arr2");
  ASSERT_EQ(a2->items.size(), 3u);
  EXPECT_EQ(a2->items[0].text, "a");
  EXPECT_EQ(a2->items[2].text, "c");
  const auto* a3 = r.find("arr3");
  ASSERT_EQ(a3->items.size(), 2u);
  EXPECT_TRUE(a3->items[0].is_map());
  EXPECT_EQ(scalar(a3->items[0], "k"), "v");
  EXPECT_TRUE(a3->items[1].is_array());
  EXPECT_TRUE(r.find("empty_map")->is_map());
  EXPECT_TRUE(r.find("empty_map")->entries.empty());
  EXPECT_TRUE(r.find("empty_arr")->items.empty());
}

TEST(ConfigParse, CrlfLineEndings) {
  const auto r = parse_ok("a: 1\r\nb {\r\n  c: two\r\n}\r\nd: [x,\r\n y]\r\n");
  EXPECT_EQ(scalar(r, "a"), "1");
  EXPECT_EQ(scalar(*r.find("b"), "c"), "two");
  EXPECT_EQ(r.find("d")->items.size(), 2u);
  EXPECT_EQ(parse_err("a: 1\r\nb: [\r\n"), "t.conf:3:1: unexpected end of file, expected ']'");
}

TEST(ConfigParse, JsonStyleWholeFile) {
  const auto r = parse_ok("{\n  \"port\": 4222,\n  \"jetstream\": {\"store_dir\": \"/x\"}\n}\n");
  EXPECT_EQ(scalar(r, "port"), "4222");
  EXPECT_EQ(scalar(*r.find("jetstream"), "store_dir"), "/x");
}

TEST(ConfigParse, LaterKeyWinsAndLookupIgnoresCase) {
  const auto r = parse_ok("port: 1\nPort: 2\nport: 3\n");
  EXPECT_EQ(scalar(r, "PORT"), "3");
}

TEST(ConfigParse, Positions) {
  const auto r = parse_ok("a: 1\n  b:   \"x\"\n");
  EXPECT_EQ(r.find("b")->line, 2);
  EXPECT_EQ(r.find("b")->col, 8);
  EXPECT_EQ(r.find("b")->where(), "t.conf:2:8");
  EXPECT_EQ(r.find("b")->key_where(), "t.conf:2:3");
}

TEST(ConfigParse, Variables) {
  ::setenv("PG_TEST_ENV_PORT", "4999", 1);
  const auto r = parse_ok(R"(
NAME: "srv-1"
LIMIT = 2MB
server_name: $NAME
max_payload: $LIMIT
port: $PG_TEST_ENV_PORT
outer {
  inner_var: 7
  use_outer: $NAME
  use_inner: $inner_var
}
list: [$NAME, $LIMIT]
)");
  ::unsetenv("PG_TEST_ENV_PORT");
  EXPECT_EQ(scalar(r, "server_name"), "srv-1");
  EXPECT_EQ(scalar(r, "max_payload"), "2MB");
  EXPECT_EQ(scalar(r, "port"), "4999");
  EXPECT_EQ(scalar(*r.find("outer"), "use_outer"), "srv-1");
  EXPECT_EQ(scalar(*r.find("outer"), "use_inner"), "7");
  EXPECT_EQ(r.find("list")->items[1].text, "2MB");
  EXPECT_TRUE(r.find("NAME")->used_as_variable);
  EXPECT_TRUE(r.find("outer")->find("inner_var")->used_as_variable);
  EXPECT_FALSE(r.find("server_name")->used_as_variable);
  // Quoted "$X" is a plain string.
  EXPECT_EQ(scalar(parse_ok("a: \"$NOPE\""), "a"), "$NOPE");
  // Block scoping: a variable defined inside a map is not visible after it.
  EXPECT_EQ(parse_err("m { v: 1 }\nx: $v\n"), "t.conf:2:4: variable '$v' is not defined");
  // Map-valued variables copy the whole map.
  const auto m = parse_ok("AUTH { user: a }\nauthorization: $AUTH\n");
  EXPECT_EQ(scalar(*m.find("authorization"), "user"), "a");
}

TEST(ConfigParse, UndefinedVariable) {
  ::unsetenv("PG_SURELY_UNDEFINED");
  EXPECT_EQ(parse_err("a: 1\nb: $PG_SURELY_UNDEFINED\n"),
            "t.conf:2:4: variable '$PG_SURELY_UNDEFINED' is not defined");
}

class ConfigFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "pg_conf_XXXXXX").string();
    _dir = ::mkdtemp(tmpl.data());
  }
  void TearDown() override { fs::remove_all(_dir); }
  std::string write(const std::string& rel, const std::string& text) {
    const auto p = fs::path(_dir) / rel;
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text;
    return p.string();
  }
  std::string _dir;
};

TEST_F(ConfigFiles, IncludeRelativeToIncludingFile) {
  write("sub/auth.conf", "user: bob\npassword: pw\ninclude 'more.conf'\n");
  write("sub/more.conf", "token: deep\n");
  write("top.conf", "port: 1\n");
  const auto main = write("sub/main.conf",
                          "include \"../top.conf\"\nauthorization {\n  include auth.conf\n}\nport: 2\n");
  config_value root;
  std::string err;
  ASSERT_TRUE(parse_config_file(main, root, err)) << err;
  EXPECT_EQ(scalar(root, "port"), "2");  // later definition wins over the included one
  const auto* auth = root.find("authorization");
  ASSERT_TRUE(auth && auth->is_map());
  EXPECT_EQ(scalar(*auth, "user"), "bob");
  EXPECT_EQ(scalar(*auth, "token"), "deep");
}

TEST_F(ConfigFiles, IncludeErrors) {
  const auto missing = write("m.conf", "a: 1\n  include \"nope.conf\"\n");
  config_value root;
  std::string err;
  EXPECT_FALSE(parse_config_file(missing, root, err));
  EXPECT_NE(err.find("m.conf:2:11: cannot read include file"), std::string::npos) << err;

  write("broken.conf", "ok: 1\nbad: [1, 2\n");
  const auto outer = write("o.conf", "include broken.conf\n");
  EXPECT_FALSE(parse_config_file(outer, root, err));
  EXPECT_NE(err.find("broken.conf:3:1: unexpected end of file, expected ']'"), std::string::npos) << err;

  const auto loop = write("loop.conf", "include loop.conf\n");
  EXPECT_FALSE(parse_config_file(loop, root, err));
  EXPECT_NE(err.find("nested too deeply"), std::string::npos) << err;

  EXPECT_FALSE(parse_config_file(_dir + "/absent.conf", root, err));
  EXPECT_NE(err.find("absent.conf: cannot open config file"), std::string::npos) << err;
}

TEST(ConfigParse, SyntaxErrorsHaveLineAndColumn) {
  EXPECT_EQ(parse_err("a: 1\nb: \"unterminated\n"), "t.conf:2:4: unterminated string");
  EXPECT_EQ(parse_err("m {\n  a: 1\n"), "t.conf:3:1: unexpected end of file, expected '}'");
  EXPECT_EQ(parse_err("a: [1, 2\n"), "t.conf:2:1: unexpected end of file, expected ']'");
  EXPECT_EQ(parse_err("a: 1 2\n"), "t.conf:1:6: unexpected '2' after value, expected a new line, ',' or ';'");
  EXPECT_EQ(parse_err("x: 1\nkey:\n"), "t.conf:2:1: missing value for key 'key'");
  EXPECT_EQ(parse_err("x: 1\n: 5\n"), "t.conf:2:1: expected a key but found ':'");
  EXPECT_EQ(parse_err("a: 1\n}\n"), "t.conf:2:1: expected a key but found '}'");
  EXPECT_EQ(parse_err("a: [1,,2]"), "t.conf:1:7: unexpected ',' in array");
  EXPECT_EQ(parse_err("a: [1 2]"), "t.conf:1:7: unexpected '2' in array, expected ',' or ']'");
  EXPECT_EQ(parse_err("a: \"bad \\q escape\""), "t.conf:1:10: invalid escape 'q' (allowed: \\t \\n \\r \\\" \\\\ \\xHH)");
  EXPECT_EQ(parse_err("a: 'open"), "t.conf:1:4: unterminated string");
  EXPECT_EQ(parse_err("{ a: 1 } b"), "t.conf:1:10: unexpected content after the closing '}'");
  EXPECT_EQ(parse_err("\"key"), "t.conf:1:1: unterminated quoted key");
}

TEST(ConfigScalars, Sizes) {
  std::int64_t v = 0;
  struct {
    const char* in;
    std::int64_t out;
  } cases[] = {{"0", 0},
               {"123", 123},
               {"-1", -1},
               {"1K", 1000},
               {"1k", 1000},
               {"1KB", 1024},
               {"1kb", 1024},
               {"1Kb", 1024},
               {"2KiB", 2048},
               {"1M", 1000000},
               {"1MB", 1 << 20},
               {"3mb", 3 << 20},
               {"1G", 1000000000},
               {"1GB", 1ll << 30},
               {"2TB", 2ll << 40}};
  for (const auto& c : cases) {
    ASSERT_TRUE(parse_size(c.in, v)) << c.in;
    EXPECT_EQ(v, c.out) << c.in;
  }
  for (const char* bad : {"", "-", "K", "1X", "1KBB", "1.5MB", "abc", "99999999999999999999", "9000000000GB"}) {
    EXPECT_FALSE(parse_size(bad, v)) << bad;
  }
}

TEST(ConfigScalars, Durations) {
  std::int64_t ms = 0;
  struct {
    const char* in;
    std::int64_t out;
  } cases[] = {{"2m", 120000}, {"10s", 10000},   {"500ms", 500},     {"1h", 3600000},
               {"1h30m", 5400000}, {"1.5s", 1500}, {"2500us", 2},     {"3000000ns", 3},
               {"5", 5000},      {"0.25", 250},    {"1m30s", 90000}};
  for (const auto& c : cases) {
    ASSERT_TRUE(parse_duration_ms(c.in, ms)) << c.in;
    EXPECT_EQ(ms, c.out) << c.in;
  }
  for (const char* bad : {"", "s", "10x", "1d", "ms", "-", "1 s", "abc"}) {
    EXPECT_FALSE(parse_duration_ms(bad, ms)) << bad;
  }
}

TEST(ConfigScalars, Booleans) {
  bool b = false;
  for (const char* t : {"true", "TRUE", "yes", "Yes", "on", "ON"}) {
    ASSERT_TRUE(parse_bool(t, b)) << t;
    EXPECT_TRUE(b) << t;
  }
  for (const char* f : {"false", "False", "no", "NO", "off", "Off"}) {
    ASSERT_TRUE(parse_bool(f, b)) << f;
    EXPECT_FALSE(b) << f;
  }
  for (const char* bad : {"", "1", "0", "y", "enabled"}) EXPECT_FALSE(parse_bool(bad, b)) << bad;
}

// Random inputs built from the syntax's own characters must fail or succeed cleanly, and a
// failure must always carry a position.
TEST(ConfigParse, RandomInputNeverCrashes) {
  const char* env_seed = std::getenv("PG_SEED");
  const std::uint64_t seed = env_seed ? std::strtoull(env_seed, nullptr, 10) : 0x5eed;
  std::printf("RandomInputNeverCrashes seed=%llu\n", static_cast<unsigned long long>(seed));
  base::rng r(seed);
  const std::string alphabet = "ab1$:= \t\n{}[],;#/\"'\\xK.-";
  for (int i = 0; i < 20000; ++i) {
    std::string text;
    const auto n = r.below(40);
    for (std::uint64_t j = 0; j < n; ++j) text += alphabet[r.below(alphabet.size())];
    config_value root;
    std::string err;
    if (!parse_config_text(text, "f.conf", root, err)) {
      ASSERT_EQ(err.rfind("f.conf:", 0), 0u) << "seed " << seed << " input [" << text << "] -> " << err;
    }
  }
}

}  // namespace
