// base::errc_name: every code has its own readable name.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "src/base/errc.h"

namespace {

using base::errc;
using base::errc_name;

TEST(errc, names) {
  EXPECT_EQ(errc_name(errc::ok), "ok");
  EXPECT_EQ(errc_name(errc::invalid_argument), "invalid argument");
  EXPECT_EQ(errc_name(errc::out_of_range), "out of range");
  EXPECT_EQ(errc_name(errc::not_found), "not found");
  EXPECT_EQ(errc_name(errc::already_exists), "already exists");
  EXPECT_EQ(errc_name(errc::would_block), "would block");
  EXPECT_EQ(errc_name(errc::closed), "closed");
  EXPECT_EQ(errc_name(errc::io_error), "i/o error");
  EXPECT_EQ(errc_name(errc::no_space), "no space left on device");
  EXPECT_EQ(errc_name(errc::short_write), "short write");
  EXPECT_EQ(errc_name(errc::corrupt), "corrupt data");
  EXPECT_EQ(errc_name(errc::unsupported), "unsupported");
  EXPECT_EQ(errc_name(errc::timed_out), "timed out");
  EXPECT_EQ(errc_name(errc::limit_exceeded), "limit exceeded");
  EXPECT_EQ(errc_name(errc::internal), "internal error");
}

TEST(errc, every_code_has_a_distinct_name) {
  std::set<std::string> names;
  const auto last = static_cast<std::uint16_t>(errc::internal);
  for (std::uint16_t v = 0; v <= last; ++v) {
    const auto n = errc_name(static_cast<errc>(v));
    EXPECT_NE(n, "unknown") << "errc value " << v << " has no name";
    EXPECT_FALSE(n.empty());
    names.emplace(n);
  }
  EXPECT_EQ(names.size(), std::size_t(last) + 1);
}

TEST(errc, out_of_range_values_are_unknown) {
  EXPECT_EQ(errc_name(static_cast<errc>(static_cast<std::uint16_t>(errc::internal) + 1)), "unknown");
  EXPECT_EQ(errc_name(static_cast<errc>(0xffff)), "unknown");
}

}  // namespace
