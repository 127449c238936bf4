// Fuzz target: arbitrary bytes as a block file. Decodes records the way recovery does and
// then opens the bytes as a real store directory; nothing may crash, hang or serve a
// record that fails its checksum.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

#include "storage/file_store.h"
#include "storage/record.h"

namespace {

void decode_all(const std::uint8_t* data, std::size_t size) {
  std::size_t off = 0;
  while (off < size) {
    storage::record_view r;
    auto d = storage::decode_record(data + off, size - off, &r);
    if (d != storage::decode_result::ok) {
      off += storage::kRecAlign;  // resync like recovery does
      continue;
    }
    if (r.subject.size() + r.headers.size() + r.payload.size() + storage::kRecHeader != r.len)
      std::abort();
    off += storage::rec_pad(r.len);
  }
}

void open_as_store(const std::uint8_t* data, std::size_t size) {
  // One directory per process; removed at exit (a leaked C string outlives every static).
  static const char* dir = [] {
    char tmpl[] = "/tmp/pg_fuzz_XXXXXX";
    const char* p = ::mkdtemp(tmpl);
    char* d = ::strdup(p ? p : "/tmp/pg_fuzz");
    std::atexit([] {
      std::error_code e;
      std::filesystem::remove_all(dir, e);
    });
    return d;
  }();
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  std::filesystem::create_directories(dir, ec);
  std::FILE* f = std::fopen((std::string(dir) + "/00000001.blk").c_str(), "wb");
  if (!f) return;
  if (size) std::fwrite(data, 1, size, f);
  std::fclose(f);
  storage::file_store_config c;
  c.dir = dir;
  c.block_size = 64 << 10;
  c.backend = io::backend_kind::sync;  // cheap to set up per input
  auto s = storage::file_store::open(c);
  if (!s.ok()) return;
  auto& st = **s;
  for (std::uint64_t q = st.first_seq(); q <= st.last_seq() && q < st.first_seq() + 64; ++q) {
    auto m = st.load(q);
    if (m.ok() && m->seq != q) std::abort();
  }
  (void)st.append("fuzz.after", "", "x", 1);
  (void)st.close();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > (1u << 20)) return 0;
  decode_all(data, size);
  open_as_store(data, size);
  return 0;
}
