// safetensors: format bytes, round trips, hostile files, mmap views and atomic saves.
#include "serialize/safetensors.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>

#include "mutagrad.h"
#include "serialize/errors.h"
#include "tests/tensor/test_device.h"

namespace mutagrad {
namespace {

using testing_device::host_copy;
using testing_device::on_test_device;
using testing_device::test_device;

std::string tmp_path(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return std::string(dir != nullptr ? dir : "/tmp") + "/" + name;
}

std::string read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// A tensor's values as raw little-endian bytes, row-major.
std::string bytes_of(const Tensor& t) {
  Tensor h = native::contiguous(host_copy(t));
  return std::string(static_cast<const char*>(h.unsafe_impl()->data()),
                     static_cast<size_t>(h.numel() * element_size(h.dtype())));
}

// A file built by hand from the spec: length, JSON text (padded as given), data.
std::string file_of(const std::string& header, const std::string& data) {
  std::string out(8, '\0');
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  return out + header + data;
}

const ScalarType kAllDTypes[] = {kFloat64, kFloat32, kFloat16, kBFloat16, kInt64,
                                 kInt32,   kInt16,   kInt8,    kUInt8,    kBool};

Tensor sample(ScalarType dtype, IntArrayRef sizes, uint64_t seed) {
  Generator gen(seed);
  Tensor x = randn(sizes, gen) * 60.0;
  return on_test_device(x.to(dtype));
}

TEST(Safetensors, BytesMatchTheSpecWrittenByHand) {
  Tensor a = on_test_device(from_vector<float>({1.0f, 2.0f, -0.5f}, {3}));
  Tensor b = on_test_device(from_vector<int16_t>({7, -1}, {1, 2}));
  std::string got = safetensors::save({{"b", b}, {"a", a}}, {{"step", "7"}});
  // Larger elements first, then by name; the header padded with spaces to a multiple of 8.
  std::string header =
      R"({"__metadata__":{"step":"7"},"a":{"data_offsets":[0,12],"dtype":"F32","shape":[3]},)"
      R"("b":{"data_offsets":[12,16],"dtype":"I16","shape":[1,2]}})";
  header.append((8 - header.size() % 8) % 8, ' ');
  float af[] = {1.0f, 2.0f, -0.5f};
  int16_t bi[] = {7, -1};
  std::string data(reinterpret_cast<const char*>(af), 12);
  data.append(reinterpret_cast<const char*>(bi), 4);
  EXPECT_EQ(got, file_of(header, data));
}

TEST(Safetensors, EveryDTypeRoundTripsThroughAFile) {
  safetensors::TensorMap in;
  int i = 0;
  for (ScalarType dtype : kAllDTypes) {
    in[dtype_name(dtype)] = sample(dtype, {3, 5}, 10 + i++);
  }
  in["scalar"] = sample(kFloat32, {}, 1);
  in["empty"] = sample(kInt64, {0, 4}, 2);
  // A transposed view is saved by its values.
  Tensor base = sample(kFloat64, {4, 6}, 3);
  in["transposed"] = base.transpose(0, 1);
  std::string path = tmp_path("every_dtype.safetensors");
  safetensors::save_file(in, path, {{"format", "pt"}});
  for (Device device : {Device(kCPU), test_device()}) {
    safetensors::TensorMap out = safetensors::load_file(path, device);
    ASSERT_EQ(out.size(), in.size());
    for (const auto& [name, t] : in) {
      SCOPED_TRACE(name);
      const Tensor& u = out.at(name);
      EXPECT_EQ(u.device(), device);
      EXPECT_EQ(u.dtype(), t.dtype());
      EXPECT_EQ(std::vector<int64_t>(u.sizes().begin(), u.sizes().end()),
                std::vector<int64_t>(t.sizes().begin(), t.sizes().end()));
      EXPECT_TRUE(u.is_contiguous());
      EXPECT_EQ(bytes_of(u), bytes_of(t));
    }
  }
  safetensors::SafeOpen f(path);
  EXPECT_EQ(f.metadata(), (safetensors::Metadata{{"format", "pt"}}));
  EXPECT_EQ(f.keys().size(), in.size());
  EXPECT_EQ(bytes_of(f.get_tensor("int8")), bytes_of(in["int8"]));
  EXPECT_THROW(f.get_tensor("missing"), IndexError);
  // The bytes in memory parse the same.
  safetensors::TensorMap again = safetensors::load(read_bytes(path));
  EXPECT_EQ(bytes_of(again.at("bfloat16")), bytes_of(in["bfloat16"]));
}

TEST(Safetensors, ACpuLoadViewsTheMappingCopyOnWrite) {
  std::string path = tmp_path("mmap.safetensors");
  Tensor x = from_vector<float>({1, 2, 3, 4}, {4});
  safetensors::save_file({{"x", x}}, path);
  std::string before = read_bytes(path);
  Tensor y;
  {
    safetensors::TensorMap out = safetensors::load_file(path);
    y = out.at("x");
  }
  // The view: its data lies 8 + N bytes into a page-aligned mapping.
  uintptr_t addr = reinterpret_cast<uintptr_t>(y.unsafe_impl()->data());
  uint64_t n;
  std::memcpy(&n, before.data(), 8);
  EXPECT_EQ(addr % 4096, (8 + n) % 4096);
  // The mapping outlives the map it came in; writing the tensor never touches the file.
  y.add_(1.0);
  EXPECT_EQ(bytes_of(y), bytes_of(from_vector<float>({2, 3, 4, 5}, {4})));
  EXPECT_EQ(read_bytes(path), before);
}

TEST(Safetensors, AMisalignedOffsetIsCopiedNotViewed) {
  // A header of odd length puts the F32 data at an address that is not a multiple of 4.
  std::string header = R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  ASSERT_NE((8 + header.size()) % 4, 0u);
  float v[] = {3.5f, -1.0f};
  std::string path = tmp_path("misaligned.safetensors");
  write_bytes(path, file_of(header, std::string(reinterpret_cast<const char*>(v), 8)));
  Tensor x = safetensors::load_file(path).at("x");
  EXPECT_EQ(reinterpret_cast<uintptr_t>(x.unsafe_impl()->data()) % 4, 0u);
  EXPECT_EQ(bytes_of(x), std::string(reinterpret_cast<const char*>(v), 8));
}

TEST(Safetensors, TensorsSharingAStorageAreRefused) {
  Tensor base = on_test_device(from_vector<float>({1, 2, 3, 4}, {4}));
  std::string path = tmp_path("shared.safetensors");
  try {
    safetensors::save_file({{"a", base}, {"b", base.narrow(0, 1, 2)}}, path);
    FAIL() << "expected ValueError";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("'a' and 'b' share memory"), std::string::npos)
        << e.what();
  }
  EXPECT_NE(access(path.c_str(), F_OK), 0);  // nothing written
}

// Each hostile file raises its own error type, names the problem, and leaves the file as is.
template <typename E>
void expect_refused(const std::string& name, const std::string& bytes, const std::string& says) {
  SCOPED_TRACE(name);
  std::string path = tmp_path(name + ".safetensors");
  write_bytes(path, bytes);
  try {
    safetensors::load_file(path);
    ADD_FAILURE() << "loaded a hostile file";
  } catch (const E& e) {
    EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong error type: " << e.what();
  }
  EXPECT_THROW(safetensors::load(bytes), E);
  EXPECT_EQ(read_bytes(path), bytes);
}

TEST(Safetensors, HostileFilesAreTypedErrors) {
  using serialize::FormatError;
  using serialize::OffsetError;
  using serialize::SizeMismatchError;
  using serialize::UnknownDTypeError;
  std::string f8(8, '\0');
  std::string f32x2 = std::string(8, '\x01');
  auto entry = [](const std::string& dtype, const std::string& shape, uint64_t b, uint64_t e) {
    return "\"dtype\":\"" + dtype + "\",\"shape\":" + shape + ",\"data_offsets\":[" +
           std::to_string(b) + "," + std::to_string(e) + "]";
  };
  expect_refused<FormatError>("short", "abc", "fewer than the 8");
  std::string beyond(8, '\0');
  beyond[0] = 100;
  expect_refused<FormatError>("beyond", beyond + "{}", "goes beyond the file");
  std::string huge(8, '\xff');
  expect_refused<FormatError>("huge", huge + "{}", "exceeds the limit");
  expect_refused<FormatError>("notjson", file_of("{\"x\":", ""), "not valid JSON");
  expect_refused<FormatError>("notobject", file_of("[1,2]", ""), "expected an object");
  expect_refused<FormatError>("deep", file_of(R"({"x":{"shape":[[[[1]]]]}})", ""),
                              "nests JSON deeper");
  expect_refused<FormatError>("duplicate",
                              file_of("{\"x\":{" + entry("F32", "[1]", 0, 4) + "},\"x\":{" +
                                          entry("F32", "[1]", 0, 4) + "}}",
                                      std::string(4, '\0')),
                              "names 'x' twice");
  expect_refused<FormatError>("nodtype", file_of(R"({"x":{"shape":[],"data_offsets":[0,0]}})", ""),
                              "has no \"dtype\"");
  expect_refused<FormatError>("negative",
                              file_of("{\"x\":{" + entry("F32", "[-2]", 0, 8) + "}}", f32x2),
                              "expected a non-negative integer");
  expect_refused<UnknownDTypeError>(
      "u16", file_of("{\"x\":{" + entry("U16", "[4]", 0, 8) + "}}", f8), "unknown dtype \"U16\"");
  expect_refused<SizeMismatchError>(
      "mismatch", file_of("{\"x\":{" + entry("F32", "[3]", 0, 8) + "}}", f8), "needs 12 bytes");
  expect_refused<SizeMismatchError>(
      "overflow", file_of("{\"x\":{" + entry("F64", "[4294967296,4294967296]", 0, 8) + "}}", f8),
      "overflows int64");
  expect_refused<OffsetError>("reversed", file_of("{\"x\":{" + entry("U8", "[0]", 8, 0) + "}}", f8),
                              "end before they begin");
  expect_refused<OffsetError>("outofrange",
                              file_of("{\"x\":{" + entry("F32", "[4]", 0, 16) + "}}", f8),
                              "beyond the data section");
  expect_refused<OffsetError>("overlap",
                              file_of("{\"x\":{" + entry("F32", "[2]", 0, 8) + "},\"y\":{" +
                                          entry("F32", "[1]", 4, 8) + "}}",
                                      f8),
                              "overlaps tensor");
  expect_refused<OffsetError>("gap", file_of("{\"x\":{" + entry("F32", "[1]", 4, 8) + "}}", f8),
                              "belong to no tensor");
  expect_refused<OffsetError>(
      "trailing", file_of("{\"x\":{" + entry("F32", "[1]", 0, 4) + "}}", f8), "trailing bytes");
  expect_refused<FormatError>("metadata", file_of(R"({"__metadata__":{"k":1}})", ""),
                              "expected a string");
  EXPECT_THROW(safetensors::load_file(tmp_path("does_not_exist")), serialize::SerializationError);
}

// Note [Atomic save]: a child saving A and B in turn, SIGKILLed at random moments, leaves a
// target that always loads and equals A or B.
TEST(Safetensors, ASaveKilledAtAnyMomentLeavesTheOldOrTheNewFile) {
  std::string dir = tmp_path("atomic");
  ASSERT_EQ(system(("rm -rf '" + dir + "' && mkdir -p '" + dir + "'").c_str()), 0);
  std::string path = dir + "/ckpt.safetensors";
  Tensor a = from_vector<float>(std::vector<float>(1 << 17, 1.0f), {1 << 17});
  Tensor b = from_vector<float>(std::vector<float>(1 << 17, 2.0f), {1 << 17});
  safetensors::save_file({{"w", a}}, path);
  std::string bytes_a = bytes_of(a);
  std::string bytes_b = bytes_of(b);
  std::mt19937 rng(7);
  int saw_b = 0;
  for (int round = 0; round < 40; ++round) {
    pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      for (int i = 0;; ++i) safetensors::save_file({{"w", i % 2 == 0 ? b : a}}, path);
    }
    usleep(std::uniform_int_distribution<int>(0, 20000)(rng));
    kill(child, SIGKILL);
    int status = 0;
    waitpid(child, &status, 0);
    std::string w = bytes_of(safetensors::load_file(path).at("w"));
    ASSERT_TRUE(w == bytes_a || w == bytes_b) << "round " << round;
    saw_b += w == bytes_b;
  }
  EXPECT_GT(saw_b, 0);  // the child did replace the file some of the time
}

}  // namespace
}  // namespace mutagrad
