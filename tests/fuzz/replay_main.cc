// A main() for fuzz binaries built without libFuzzer (the gcc build): runs
// LLVMFuzzerTestOneInput on each file named, or on every file in each directory named.
//
//   bazel-bin/tests/fuzz/index_expression_fuzzer tests/fuzz/corpus/index_expression
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

void run_file(const std::filesystem::path& path) {
  std::ifstream f(path, std::ios::binary);
  const std::vector<char> bytes((std::istreambuf_iterator<char>(f)),
                                std::istreambuf_iterator<char>());
  LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
}

}  // namespace

int main(int argc, char** argv) {
  int runs = 0;
  for (int i = 1; i < argc; ++i) {
    const std::filesystem::path p(argv[i]);
    if (std::filesystem::is_directory(p)) {
      for (const auto& e : std::filesystem::recursive_directory_iterator(p)) {
        if (e.is_regular_file()) {
          run_file(e.path());
          ++runs;
        }
      }
    } else {
      run_file(p);
      ++runs;
    }
  }
  std::printf("replayed %d inputs\n", runs);
  return 0;
}
