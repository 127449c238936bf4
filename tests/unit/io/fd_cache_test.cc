// fd_cache: the bound holds, pinned descriptors stay open, evicted files reopen on demand.
#include "io/fd_cache.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "tests/unit/storage/temp_dir.h"

namespace io {
namespace {

struct files {
  storage_test::temp_dir dir;
  std::vector<std::string> paths;
  explicit files(int n) {
    for (int i = 0; i < n; ++i) {
      paths.push_back(dir.sub("f" + std::to_string(i)));
      int fd = ::open(paths.back().c_str(), O_CREAT | O_RDWR, 0644);
      ::close(fd);
    }
  }
  int open(int i) const { return ::open(paths[std::size_t(i)].c_str(), O_RDWR | O_CLOEXEC); }
  ino_t inode(int i) const {
    struct stat st {};
    ::stat(paths[std::size_t(i)].c_str(), &st);
    return st.st_ino;
  }
};

ino_t inode_of_fd(int fd) {
  struct stat st {};
  return ::fstat(fd, &st) == 0 ? st.st_ino : 0;
}

TEST(fd_cache, stays_within_its_bound) {
  files f(10);
  fd_cache c(3);
  std::vector<std::uint64_t> keys;
  for (int i = 0; i < 10; ++i) {
    keys.push_back(c.add(f.open(i)));
    EXPECT_LE(c.open_count(), 3u);
  }
  EXPECT_EQ(c.open_count(), 3u);
  EXPECT_EQ(c.stats().evictions, 7u);
}

TEST(fd_cache, evicted_file_reopens_on_pin_and_names_the_same_file) {
  files f(4);
  fd_cache c(2);
  std::vector<std::uint64_t> keys;
  for (int i = 0; i < 4; ++i) keys.push_back(c.add(f.open(i)));  // 0 and 1 closed
  int opened = 0;
  auto p = c.pin(keys[0], [&]() -> base::result<int> {
    ++opened;
    return f.open(0);
  });
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(opened, 1);
  EXPECT_EQ(inode_of_fd(p->fd()), f.inode(0));
  EXPECT_EQ(c.stats().opens, 1u);
  EXPECT_LE(c.open_count(), 2u);
  // A pin of an open file does not reopen it.
  auto q = c.pin(keys[3], [&]() -> base::result<int> {
    ++opened;
    return f.open(3);
  });
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(opened, 1);
  EXPECT_EQ(inode_of_fd(q->fd()), f.inode(3));
}

TEST(fd_cache, a_pinned_file_is_never_closed_while_others_come_and_go) {
  files f(20);
  fd_cache c(2);
  const std::uint64_t k = c.add(f.open(0));
  auto p = c.pin(k, [&] { return base::result<int>(f.open(0)); });
  ASSERT_TRUE(p.ok());
  const int fd = p->fd();
  for (int i = 1; i < 20; ++i) c.add(f.open(i));
  EXPECT_EQ(inode_of_fd(fd), f.inode(0)) << "the pinned descriptor was closed or reused";
  EXPECT_EQ(c.open_count(), 2u);  // the pinned one plus the newest
  p->reset();
  c.add(f.open(5));
  EXPECT_EQ(c.open_count(), 2u);  // unpinned, it is evictable again
}

TEST(fd_cache, more_pins_than_the_bound_exceed_it_only_while_pinned) {
  files f(5);
  fd_cache c(2);
  std::vector<std::uint64_t> keys;
  for (int i = 0; i < 5; ++i) keys.push_back(c.add(f.open(i)));
  std::vector<fd_pin> pins;
  for (int i = 0; i < 5; ++i) {
    auto p = c.pin(keys[std::size_t(i)], [&f, i] { return base::result<int>(f.open(i)); });
    ASSERT_TRUE(p.ok());
    EXPECT_EQ(inode_of_fd(p->fd()), f.inode(i));
    pins.push_back(std::move(*p));
  }
  EXPECT_EQ(c.open_count(), 5u);
  pins.clear();
  EXPECT_EQ(c.open_count(), 2u);
}

TEST(fd_cache, drop_closes_at_once_or_when_the_last_pin_goes) {
  files f(2);
  fd_cache c(8);
  const std::uint64_t a = c.add(f.open(0)), b = c.add(f.open(1));
  c.drop(a);
  EXPECT_EQ(c.open_count(), 1u);
  EXPECT_FALSE(c.pin(a, [&] { return base::result<int>(f.open(0)); }).ok());
  auto p = c.pin(b, [&] { return base::result<int>(f.open(1)); });
  ASSERT_TRUE(p.ok());
  c.drop(b);
  EXPECT_EQ(c.open_count(), 1u);
  EXPECT_EQ(inode_of_fd(p->fd()), f.inode(1));
  p->reset();
  EXPECT_EQ(c.open_count(), 0u);
}

TEST(fd_cache, a_failed_reopen_is_an_error_not_a_descriptor) {
  files f(2);
  fd_cache c(1);
  const std::uint64_t a = c.add(f.open(0));
  c.add(f.open(1));  // closes a
  auto p = c.pin(a, [] { return base::result<int>(base::errc::not_found); });
  EXPECT_EQ(p.code(), base::errc::not_found);
  EXPECT_EQ(c.open_count(), 1u);
}

}  // namespace
}  // namespace io
