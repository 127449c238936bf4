// Runs every file of the given corpus directories (or single files) through
// LLVMFuzzerTestOneInput, so the gcc build replays the corpus as an ordinary test.
//   replay [--expect-crash] <dir|file>...
// With --expect-crash each input runs in a child process and the exit status is 1 when
// any input still crashes (meson marks that test should_fail: a known, unfixed bug);
// it is 0 once every reproducer passes, which meson then reports as an unexpected pass.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace {

std::vector<char> slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void run_one(const std::vector<char>& b) {
  LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(b.data()), b.size());
}

// True when running the input killed or failed the child.
bool crashes(const std::vector<char>& b) {
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    run_one(b);
    std::_Exit(0);
  }
  int st = 0;
  if (pid < 0 || ::waitpid(pid, &st, 0) != pid) return true;
  return !(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

}  // namespace

int main(int argc, char** argv) {
  bool expect_crash = false;
  std::vector<std::filesystem::path> files;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--expect-crash") == 0) {
      expect_crash = true;
    } else if (std::filesystem::is_directory(argv[i])) {
      for (const auto& e : std::filesystem::recursive_directory_iterator(argv[i]))
        if (e.is_regular_file()) files.push_back(e.path());
    } else {
      files.emplace_back(argv[i]);
    }
  }
  std::sort(files.begin(), files.end());
  if (files.empty()) {
    std::fprintf(stderr, "usage: %s [--expect-crash] <corpus dir or file>...  (no inputs found)\n", argv[0]);
    return 2;
  }
  int crashed = 0;
  for (const auto& p : files) {
    const auto b = slurp(p);
    if (!expect_crash) {
      std::printf("%s (%zu bytes)\n", p.c_str(), b.size());
      std::fflush(stdout);
      run_one(b);
    } else if (crashes(b)) {
      ++crashed;
      std::printf("still reproduces: %s\n", p.c_str());
    } else {
      std::printf("no longer reproduces (move it into the main corpus): %s\n", p.c_str());
    }
  }
  std::printf("replayed %zu inputs\n", files.size());
  if (expect_crash) return crashed > 0 ? 1 : 0;
  return 0;
}
