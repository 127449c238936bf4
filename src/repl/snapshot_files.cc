#include "src/repl/snapshot_files.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "src/repl/log_record.h"

namespace repl {
namespace {

base::error sys_error() { return base::error{base::errc::io_error, errno}; }

}  // namespace

std::string snapshot_file_name(std::uint64_t group, std::uint64_t index) {
  char name[64];
  std::snprintf(name, sizeof name, "%016llx-%016llx.snap", (unsigned long long)group, (unsigned long long)index);
  return name;
}

std::uint32_t snapshot_crc(std::span<const std::uint8_t> data) { return record_crc(data); }

base::status write_snapshot_file(const std::string& dir, const std::string& name,
                                 std::span<const std::uint8_t> data) {
  const std::string tmp = dir + "/" + name + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return sys_error();
  std::size_t at = 0;
  while (at < data.size()) {
    const ssize_t w = ::write(fd, data.data() + at, data.size() - at);
    if (w <= 0) {
      const auto e = sys_error();
      ::close(fd);
      ::unlink(tmp.c_str());
      return e;
    }
    at += std::size_t(w);
  }
  if (::fdatasync(fd) != 0) {
    const auto e = sys_error();
    ::close(fd);
    ::unlink(tmp.c_str());
    return e;
  }
  ::close(fd);
  if (::rename(tmp.c_str(), (dir + "/" + name).c_str()) != 0) return sys_error();
  const int d = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (d >= 0) {
    (void)::fsync(d);
    ::close(d);
  }
  return {};
}

base::result<std::shared_ptr<const std::vector<std::uint8_t>>> read_snapshot_file(
    const std::string& dir, const std::string& name, std::uint64_t size, std::uint32_t crc) {
  const int fd = ::open((dir + "/" + name).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return sys_error();
  auto data = std::make_shared<std::vector<std::uint8_t>>(std::size_t(size));
  std::size_t at = 0;
  while (at < data->size()) {
    const ssize_t r = ::pread(fd, data->data() + at, data->size() - at, off_t(at));
    if (r <= 0) break;
    at += std::size_t(r);
  }
  std::uint8_t extra = 0;
  const bool longer = ::pread(fd, &extra, 1, off_t(at)) == 1;
  ::close(fd);
  if (at != data->size() || longer || !record_crc_matches(*data, crc)) return base::error{base::errc::corrupt, 0};
  return std::shared_ptr<const std::vector<std::uint8_t>>(std::move(data));
}

void remove_snapshot_file(const std::string& dir, const std::string& name) { ::unlink((dir + "/" + name).c_str()); }

std::vector<std::string> list_snapshot_files(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return out;
  while (const dirent* e = ::readdir(d)) {
    const std::string n = e->d_name;
    if ((n.size() > 5 && n.ends_with(".snap")) || n.ends_with(".snap.tmp")) out.push_back(n);
  }
  ::closedir(d);
  return out;
}

}  // namespace repl
