#pragma once
// A private directory under /tmp for one test, removed with everything in it.
#include <cstdlib>
#include <filesystem>
#include <string>

namespace storage_test {

class temp_dir {
 public:
  temp_dir() {
    char tmpl[] = "/tmp/pg_store_XXXXXX";
    char* p = ::mkdtemp(tmpl);
    _path = p ? p : "/tmp/pg_store_fallback";
  }
  ~temp_dir() {
    std::error_code ec;
    std::filesystem::remove_all(_path, ec);
  }
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;
  const std::string& path() const { return _path; }
  std::string sub(const std::string& name) const { return _path + "/" + name; }

 private:
  std::string _path;
};

}  // namespace storage_test
