// Writes the seed corpus: real block files produced by the file store (clean, with
// tombstones/purges, torn, bit-flipped, garbage). Run once by hand:
//   build/tests/fuzz/store/gen_corpus tests/fuzz/store/corpus
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "storage/file_store.h"

namespace {

std::vector<char> read_all(const std::string& p, std::size_t max) {
  std::ifstream in(p, std::ios::binary);
  std::vector<char> b((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // Trim trailing zeros (preallocated space) but keep a little.
  std::size_t end = b.size();
  while (end > 0 && b[end - 1] == 0) --end;
  b.resize(std::min(b.size(), std::min(max, end + 64)));
  return b;
}

void put(const std::string& dir, const std::string& name, const std::vector<char>& b) {
  std::ofstream(dir + "/" + name, std::ios::binary).write(b.data(), std::streamsize(b.size()));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  std::string out = argv[1];
  std::string tmp = "/tmp/pg_gen_corpus";
  std::filesystem::remove_all(tmp);
  storage::file_store_config c;
  c.dir = tmp;
  c.block_size = 64 << 10;
  auto s = storage::file_store::open(c);
  if (!s.ok()) return 1;
  auto& st = **s;
  for (int i = 0; i < 30; ++i)
    (void)st.append(i % 2 ? "a.b" : "c", i % 3 ? "" : "NATS/1.0\r\nK: v\r\n\r\n",
                    std::string(std::size_t(20 + i * 3), char('a' + i % 26)), 1000 + i,
                    i % 5 ? 0 : 1'000'000'000);
  (void)st.remove(4);
  (void)st.purge({"c", 10, 0});
  (void)st.skip(3);
  (void)st.close();
  auto clean = read_all(tmp + "/00000001.blk", 1 << 16);
  put(out, "clean.blk", clean);
  auto torn = clean;
  torn.resize(torn.size() * 2 / 3);
  put(out, "torn.blk", torn);
  auto flip = clean;
  flip[flip.size() / 2] ^= 0x04;
  put(out, "bitflip.blk", flip);
  auto hdr = clean;
  hdr[50] ^= 0x7f;  // inside the first message header
  put(out, "header_flip.blk", hdr);
  std::vector<char> garbage(512);
  for (std::size_t i = 0; i < garbage.size(); ++i) garbage[i] = char((i * 131 + 7) % 251);
  put(out, "garbage.blk", garbage);
  put(out, "empty.blk", {});
  std::filesystem::remove_all(tmp);
  std::printf("wrote corpus to %s\n", out.c_str());
  return 0;
}
