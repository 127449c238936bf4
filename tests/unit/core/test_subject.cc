#include "src/core/subject.h"

#include <gtest/gtest.h>

namespace {

using namespace core;

TEST(Subject, ValidSubjects) {
  for (const char* s : {"foo", "foo.bar", "foo.*", "foo.>", ">", "*", "*.*", "foo.*.bar", "$JS.API.INFO",
                        "_INBOX.abc.*", "a-b_c.d$e", "foo*.bar", "f>o.b*r", "foo.>bar", "ünï.cödé",
                        "a.b.c.d.e.f.g.h.i.j"}) {
    EXPECT_TRUE(valid_subject(s)) << s;
  }
}

TEST(Subject, InvalidSubjects) {
  for (const char* s : {"", ".", "..", ".foo", "foo.", "foo..bar", "foo.>.bar", ">.foo", "foo bar",
                        "foo\tbar", "foo\r", "foo\nbar", "foo\fbar", " foo", "foo. bar", "foo.>.>"}) {
    EXPECT_FALSE(valid_subject(s)) << '"' << s << '"';
  }
}

TEST(Subject, LiteralSubjects) {
  EXPECT_TRUE(valid_literal_subject("foo.bar"));
  EXPECT_TRUE(valid_literal_subject("foo*.b>r"));  // not whole tokens: literal
  EXPECT_FALSE(valid_literal_subject("foo.*"));
  EXPECT_FALSE(valid_literal_subject("foo.>"));
  EXPECT_FALSE(valid_literal_subject("*"));
  EXPECT_FALSE(valid_literal_subject(">"));
  EXPECT_FALSE(valid_literal_subject("foo..bar"));
  EXPECT_FALSE(valid_literal_subject(""));
  EXPECT_FALSE(valid_literal_subject("foo bar"));
}

TEST(Subject, QueueNames) {
  EXPECT_TRUE(valid_queue_name("workers"));
  EXPECT_TRUE(valid_queue_name("q.1-x_y"));
  EXPECT_TRUE(valid_queue_name("*"));
  EXPECT_FALSE(valid_queue_name(""));
  EXPECT_FALSE(valid_queue_name("a b"));
  EXPECT_FALSE(valid_queue_name("a\tb"));
  EXPECT_FALSE(valid_queue_name("a\r\n"));
}

TEST(Subject, Matches) {
  EXPECT_TRUE(subject_matches("foo.bar", "foo.bar"));
  EXPECT_FALSE(subject_matches("foo.bar", "foo.baz"));
  EXPECT_FALSE(subject_matches("foo.bar", "foo"));
  EXPECT_FALSE(subject_matches("foo", "foo.bar"));
  EXPECT_TRUE(subject_matches("foo.*", "foo.bar"));
  EXPECT_FALSE(subject_matches("foo.*", "foo"));
  EXPECT_FALSE(subject_matches("foo.*", "foo.bar.baz"));
  EXPECT_TRUE(subject_matches("*.bar", "foo.bar"));
  EXPECT_TRUE(subject_matches("foo.>", "foo.bar"));
  EXPECT_TRUE(subject_matches("foo.>", "foo.bar.baz"));
  EXPECT_FALSE(subject_matches("foo.>", "foo"));
  EXPECT_TRUE(subject_matches(">", "foo"));
  EXPECT_TRUE(subject_matches(">", "foo.bar.baz"));
  EXPECT_TRUE(subject_matches("*.*.>", "a.b.c"));
  EXPECT_FALSE(subject_matches("*.*.>", "a.b"));
  EXPECT_TRUE(subject_matches("foo*", "foo*"));
  EXPECT_FALSE(subject_matches("foo*", "foox"));
  // Invalid inputs never match.
  EXPECT_FALSE(subject_matches("foo..bar", "foo..bar"));
  EXPECT_FALSE(subject_matches("foo.>.bar", "foo.x.bar"));
  EXPECT_FALSE(subject_matches("foo.*", "foo."));
  EXPECT_FALSE(subject_matches("", ""));
}

TEST(Subject, WildcardTokensInPublishedSubjectAreLiteral) {
  EXPECT_TRUE(subject_matches("foo.*", "foo.*"));
  EXPECT_FALSE(subject_matches("foo.bar", "foo.*"));
  EXPECT_TRUE(subject_matches("foo.>", "foo.*"));
  EXPECT_TRUE(subject_matches("foo.>", "foo.>"));
  EXPECT_FALSE(subject_matches("foo.bar", "foo.>"));
  EXPECT_TRUE(subject_matches("$JS.API.CONSUMER.CREATE.*.>", "$JS.API.CONSUMER.CREATE.S.C.orders.*"));
  // '>' in the middle of a published subject is just a token too.
  EXPECT_TRUE(subject_matches("a.*.c", "a.>.c"));
}

TEST(Subject, Subset) {
  EXPECT_TRUE(subject_is_subset("foo.bar", "foo.bar"));
  EXPECT_TRUE(subject_is_subset("foo.bar", "foo.*"));
  EXPECT_TRUE(subject_is_subset("foo.bar", "foo.>"));
  EXPECT_TRUE(subject_is_subset("foo.bar", ">"));
  EXPECT_TRUE(subject_is_subset("foo.*", "foo.*"));
  EXPECT_TRUE(subject_is_subset("foo.*", "foo.>"));
  EXPECT_TRUE(subject_is_subset("foo.*", "*.*"));
  EXPECT_TRUE(subject_is_subset("foo.>", "foo.>"));
  EXPECT_TRUE(subject_is_subset("foo.bar.>", "foo.>"));
  EXPECT_TRUE(subject_is_subset("foo.*.>", "foo.>"));
  EXPECT_FALSE(subject_is_subset("foo.*", "foo.bar"));
  EXPECT_FALSE(subject_is_subset("foo.>", "foo.*"));
  EXPECT_FALSE(subject_is_subset("foo.>", "foo.*.>"));  // foo.x is not in foo.*.>
  EXPECT_FALSE(subject_is_subset(">", "foo.>"));
  EXPECT_FALSE(subject_is_subset("foo", "foo.>"));
  EXPECT_FALSE(subject_is_subset("foo.bar", "foo"));
  EXPECT_FALSE(subject_is_subset("foo", "foo.bar"));
  EXPECT_FALSE(subject_is_subset("foo..bar", ">"));
}

TEST(Subject, Overlap) {
  EXPECT_TRUE(subjects_overlap("foo.bar", "foo.bar"));
  EXPECT_TRUE(subjects_overlap("foo.*", "*.bar"));
  EXPECT_TRUE(subjects_overlap("foo.>", "*.bar.baz"));
  EXPECT_TRUE(subjects_overlap(">", "a.b.c"));
  EXPECT_TRUE(subjects_overlap("a.*.c", "a.b.>"));
  EXPECT_FALSE(subjects_overlap("foo.bar", "foo.baz"));
  EXPECT_FALSE(subjects_overlap("foo.*", "foo.*.*"));
  EXPECT_FALSE(subjects_overlap("foo.>", "foo"));
  EXPECT_FALSE(subjects_overlap("foo.*", "bar.>"));
  EXPECT_FALSE(subjects_overlap("a.*", "a"));
  EXPECT_FALSE(subjects_overlap("foo..bar", "foo..bar"));
  // symmetric
  EXPECT_EQ(subjects_overlap("a.b.>", "a.*.c"), subjects_overlap("a.*.c", "a.b.>"));
}

TEST(Subject, TokenCount) {
  EXPECT_EQ(subject_token_count(""), 0u);
  EXPECT_EQ(subject_token_count("foo"), 1u);
  EXPECT_EQ(subject_token_count("foo.bar"), 2u);
  EXPECT_EQ(subject_token_count("a.*.>"), 3u);
}

}  // namespace
