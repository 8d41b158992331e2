// PyTorch's zip format: round trips, a torch 1.13 file, shared storages, hostile archives.
#include "serialize/checkpoint.h"

#include <gtest/gtest.h>
#include <unistd.h>
#include <zip.h>
#include <zlib.h>

#include <cstring>
#include <fstream>
#include <random>
#include <sstream>

#include "mutagrad.h"
#include "serialize/crc32.h"
#include "serialize/errors.h"
#include "tensor/sanitizers.h"
#include "tests/tensor/test_device.h"

namespace mutagrad {
namespace {

using serialize::Value;
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

std::string bytes_of(const Tensor& t) {
  Tensor h = native::contiguous(host_copy(t));
  return std::string(static_cast<const char*>(h.unsafe_impl()->data()),
                     static_cast<size_t>(h.numel() * element_size(h.dtype())));
}

std::vector<int64_t> vec(IntArrayRef r) { return std::vector<int64_t>(r.begin(), r.end()); }

const ScalarType kAllDTypes[] = {kFloat64, kFloat32, kFloat16, kBFloat16, kInt64,
                                 kInt32,   kInt16,   kInt8,    kUInt8,    kBool};

Tensor arange6(ScalarType dtype) {
  return on_test_device(arange(6, kInt64).reshape({2, 3}).to(dtype));
}

TEST(Checkpoint, NestedValuesOfEveryDTypeRoundTrip) {
  std::vector<std::pair<Value, Value>> tensors;
  for (ScalarType d : kAllDTypes) tensors.emplace_back(dtype_name(d), arange6(d));
  Value attrs =
      Value::dict({{"_metadata", Value::dict({{"", Value::dict({{"version", 1}})}}, true)}});
  Value sd = Value::dict(std::move(tensors), true);
  sd.set_attributes(std::make_shared<Value>(attrs));
  Value obj = Value::dict({
      {"sd", sd},
      {"ints", Value::list({0, 255, 256, 65535, 65536, -1, int64_t{-(1LL << 40)},
                            int64_t{1LL << 62}, int64_t{INT64_MIN}})},
      {"pi", 3.25},
      {"s", "a string"},
      {"flags", Value::tuple({true, false, Value()})},
      {"state", Value::dict({{0, Value::dict({{"step", 3}})}})},
  });
  std::string path = tmp_path("nested.pt");
  save(obj, path);
  Value back = load(path);
  const Value& sd2 = back.at("sd");
  EXPECT_TRUE(sd2.ordered());
  ASSERT_EQ(sd2.entries().size(), 10u);
  for (ScalarType d : kAllDTypes) {
    const Tensor& t = sd2.at(dtype_name(d)).to_tensor();
    EXPECT_EQ(t.dtype(), d);
    EXPECT_EQ(t.device(), test_device());  // saved with its location ("cpu", "cuda:0")
    EXPECT_EQ(vec(t.sizes()), (std::vector<int64_t>{2, 3}));
    EXPECT_EQ(bytes_of(t), bytes_of(arange6(d)));
  }
  ASSERT_TRUE(sd2.attributes());
  EXPECT_EQ(sd2.attributes()->at("_metadata").entries()[0].second.at("version").to_int(), 1);
  std::vector<int64_t> ints;
  for (const Value& v : back.at("ints").items()) ints.push_back(v.to_int());
  EXPECT_EQ(ints, (std::vector<int64_t>{0, 255, 256, 65535, 65536, -1, -(1LL << 40), 1LL << 62,
                                        INT64_MIN}));
  EXPECT_EQ(back.at("pi").to_double(), 3.25);
  EXPECT_EQ(back.at("s").to_string(), "a string");
  EXPECT_EQ(back.at("flags").kind(), Value::Kind::Tuple);
  EXPECT_TRUE(back.at("flags").items()[0].to_bool());
  EXPECT_TRUE(back.at("flags").items()[2].is_none());
  const auto& state = back.at("state").entries();
  ASSERT_EQ(state.size(), 1u);
  EXPECT_EQ(state[0].first.to_int(), 0);
  EXPECT_EQ(state[0].second.at("step").to_int(), 3);
  // map_location moves every tensor.
  Value moved = load(path, test_device());
  EXPECT_EQ(moved.at("sd").at("int16").to_tensor().device(), test_device());
}

TEST(Checkpoint, SharedStoragesStaySharedAndViewsKeepTheirGeometry) {
  Tensor base = on_test_device(arange(12, kFloat32).reshape({3, 4}));
  Tensor t = base.transpose(0, 1);
  Tensor row = base.select(0, 1).narrow(0, 1, 3);
  Tensor w = on_test_device(ones({2}, kFloat32)).requires_grad_(true);
  std::vector<Value::Kind> kinds;
  Value obj = Value::list({base, t, row, w});
  Value back = load_from_bytes(save_to_bytes(obj), test_device());
  const Tensor& b2 = back.items()[0].to_tensor();
  const Tensor& t2 = back.items()[1].to_tensor();
  const Tensor& r2 = back.items()[2].to_tensor();
  EXPECT_TRUE(b2.unsafe_impl()->storage().is_same(t2.unsafe_impl()->storage()));
  EXPECT_TRUE(b2.unsafe_impl()->storage().is_same(r2.unsafe_impl()->storage()));
  EXPECT_EQ(vec(t2.strides()), (std::vector<int64_t>{1, 4}));
  EXPECT_EQ(r2.unsafe_impl()->storage_offset(), 5);
  EXPECT_EQ(bytes_of(t2), bytes_of(t));
  EXPECT_EQ(bytes_of(r2), bytes_of(row));
  EXPECT_TRUE(back.items()[3].to_tensor().requires_grad());
  // One version counter: an in-place write through one is seen by the others.
  uint32_t before = t2.version();
  b2.unsafe_impl()->version_counter().bump({"add_", __FILE__, __LINE__});
  EXPECT_EQ(t2.version(), before + 1);
  EXPECT_EQ(r2.version(), before + 1);
  // Two storages stay two.
  EXPECT_FALSE(
      b2.unsafe_impl()->storage().is_same(back.items()[3].to_tensor().unsafe_impl()->storage()));
}

// Note [map_location]: a device, a dict of saved locations, a callable; shared storages stay
// shared whichever form moves them.
TEST(Checkpoint, MapLocationFormsRestoreEachStorageAsTorchLoadDoes) {
  Tensor c = arange(4, kFloat32);
  Tensor g = on_test_device(arange(6, kFloat32));
  std::string saved = save_to_bytes(Value::list({c, g, g.narrow(0, 2, 3)}));
  const std::string g_loc = test_device().is_cpu() ? "cpu" : "cuda:0";
  auto devices = [](const Value& v) {
    std::vector<Device> d;
    for (const Value& e : v.items()) d.push_back(e.to_tensor().device());
    return d;
  };
  EXPECT_EQ(devices(load_from_bytes(saved)), (std::vector<Device>{kCPU, g.device(), g.device()}));
  EXPECT_EQ(devices(load_from_bytes(saved, kCPU)), (std::vector<Device>{kCPU, kCPU, kCPU}));
  // A dict renames the locations that are its keys, exactly ("cuda" is not "cuda:0").
  std::map<std::string, std::string> to_test{{"cpu", g_loc}}, to_cpu{{g_loc, "cpu"}};
  EXPECT_EQ(devices(load_from_bytes(saved, to_test)),
            (std::vector<Device>{g.device(), g.device(), g.device()}));
  EXPECT_EQ(devices(load_from_bytes(saved, to_cpu)), (std::vector<Device>{kCPU, kCPU, kCPU}));
  std::map<std::string, std::string> no_match{{"cuda", "cpu"}, {"cuda:1", "cpu"}};
  EXPECT_EQ(devices(load_from_bytes(saved, no_match)),
            (std::vector<Device>{kCPU, g.device(), g.device()}));
  // A callable sees each distinct storage once, on the CPU, with its saved location.
  std::vector<std::string> seen;
  MapLocation::Fn record = [&](const Storage& cpu, const std::string& location) {
    EXPECT_TRUE(cpu.device().is_cpu());
    seen.push_back(location + ":" + std::to_string(cpu.nbytes()));
    return std::optional<Storage>();
  };
  Value back = load_from_bytes(saved, record);
  EXPECT_EQ(seen, (std::vector<std::string>{"cpu:16", g_loc + ":24"}));
  EXPECT_EQ(devices(back), (std::vector<Device>{kCPU, g.device(), g.device()}));
  EXPECT_TRUE(back.items()[1].to_tensor().unsafe_impl()->storage().is_same(
      back.items()[2].to_tensor().unsafe_impl()->storage()));
  EXPECT_EQ(bytes_of(back.items()[2].to_tensor()), bytes_of(g.narrow(0, 2, 3)));
  MapLocation::Fn keep_cpu = [](const Storage& cpu, const std::string&) {
    return std::optional<Storage>(cpu);
  };
  EXPECT_EQ(devices(load_from_bytes(saved, keep_cpu)), (std::vector<Device>{kCPU, kCPU, kCPU}));
  MapLocation::Fn wrong_size = [](const Storage&, const std::string&) {
    return std::optional<Storage>(Storage::allocate(kCPU, 3));
  };
  EXPECT_THROW(load_from_bytes(saved, wrong_size), ValueError);
  // A location that is not a device is refused unless the dict renames it.
  EXPECT_THROW(load_from_bytes(saved, std::map<std::string, std::string>{{"cpu", "xla:0"}}),
               serialize::FormatError);
}

// The process's resident set and its peak since the last reset_peak_rss(), in MiB (Linux).
int64_t status_mib(const std::string& field) {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind(field + ":", 0) == 0) return std::stoll(line.substr(field.size() + 1)) / 1024;
  }
  ADD_FAILURE() << "no " << field << " in /proc/self/status";
  return 0;
}
void reset_peak_rss() { std::ofstream("/proc/self/clear_refs") << "5"; }

// Note [Streaming save]: a save's extra memory is bounded by its largest storage, not the
// total (each record is written as it goes), and a load's by what it returns plus one storage
// in transit to a CUDA device (no copy of the whole file). With 8 storages of 32 MiB, the old
// in-memory archive (and its copy into a string) added 512 MiB to a save, and the file's bytes
// 256 MiB to a load.
// Under AddressSanitizer every byte the program touches has a shadow byte per 8, resident too.
#ifdef MUTAGRAD_ASAN
constexpr int64_t kShadowNum = 9;
#else
constexpr int64_t kShadowNum = 8;
#endif

TEST(Checkpoint, SaveAndLoadMemoryIsBoundedByTheLargestStorage) {
  constexpr int64_t kMiB = 32, kCount = 8;
  std::vector<Value> items;
  for (int64_t k = 0; k < kCount; ++k) {
    items.emplace_back(on_test_device(full({kMiB << 18}, static_cast<double>(k), kFloat32)));
  }
  Value obj = Value::list(std::move(items));
  std::string path = tmp_path("bounded.pt");
  reset_peak_rss();
  int64_t before = status_mib("VmRSS");
  save(obj, path);
  int64_t save_extra = status_mib("VmHWM") - before;
  EXPECT_LT(save_extra, kMiB * kShadowNum / 8 + 24) << "save's peak extra memory, MiB";
  reset_peak_rss();
  before = status_mib("VmRSS");
  Value back = load(path);
  int64_t load_extra = status_mib("VmHWM") - before;
  EXPECT_LT(load_extra, kMiB * (kCount + 1) * kShadowNum / 8 + 24)
      << "load's peak extra memory, MiB";
  ASSERT_EQ(back.items().size(), static_cast<size_t>(kCount));
  EXPECT_EQ(bytes_of(back.items()[5].to_tensor()), bytes_of(obj.items()[5].to_tensor()));
  std::remove(path.c_str());
}

// testdata/torch113_sample.pt, written by torch 1.13 (gen_torch_fixture.py).
TEST(Checkpoint, AFileWrittenByTorch113Loads) {
  Value v = load("tests/serialize/testdata/torch113_sample.pt");
  for (ScalarType d : kAllDTypes) {
    SCOPED_TRACE(dtype_name(d));
    const Tensor& t = v.at("dtypes").at(dtype_name(d)).to_tensor();
    EXPECT_EQ(t.dtype(), d);
    EXPECT_EQ(bytes_of(t), bytes_of(arange6(d)));
  }
  const Tensor& base = v.at("base").to_tensor();
  const Tensor& t = v.at("t").to_tensor();
  const Tensor& row = v.at("row").to_tensor();
  EXPECT_TRUE(base.unsafe_impl()->storage().is_same(t.unsafe_impl()->storage()));
  EXPECT_TRUE(base.unsafe_impl()->storage().is_same(row.unsafe_impl()->storage()));
  EXPECT_EQ(vec(t.strides()), (std::vector<int64_t>{1, 4}));
  EXPECT_EQ(row.unsafe_impl()->storage_offset(), 5);
  Tensor arange12 = arange(12, kFloat32).reshape({3, 4});
  EXPECT_EQ(bytes_of(t), bytes_of(arange12.transpose(0, 1)));
  EXPECT_EQ(bytes_of(row), bytes_of(arange12.select(0, 1).narrow(0, 1, 3)));
  const Value& lin = v.at("linear");
  EXPECT_TRUE(lin.ordered());
  EXPECT_EQ(bytes_of(lin.at("weight").to_tensor()),
            bytes_of(from_vector<float>({1, 2, 3, 4}, {2, 2})));
  EXPECT_EQ(bytes_of(lin.at("bias").to_tensor()), bytes_of(from_vector<float>({-1, 0.5}, {2})));
  ASSERT_TRUE(lin.attributes());
  const Tensor& param = v.at("param").to_tensor();
  EXPECT_TRUE(param.requires_grad());
  EXPECT_EQ(bytes_of(param), bytes_of(from_vector<float>({1.5, -2}, {2})));
  const auto& n = v.at("nested").items();
  ASSERT_EQ(n.size(), 9u);
  EXPECT_EQ(n[0].to_int(), 1);
  EXPECT_EQ(n[1].to_int(), -70000);
  EXPECT_EQ(n[2].to_int(), 1LL << 40);
  EXPECT_EQ(n[3].to_double(), 0.25);
  EXPECT_EQ(n[4].to_string(), "text");
  EXPECT_TRUE(n[5].is_none());
  EXPECT_TRUE(n[6].to_bool());
  EXPECT_EQ(n[7].kind(), Value::Kind::Tuple);
  EXPECT_EQ(n[8].entries()[0].first.to_int(), 3);
  EXPECT_EQ(n[8].entries()[0].second.to_string(), "three");
}

// An archive with the given data.pkl and records, as torch lays them out.
std::string archive(const std::string& pkl,
                    const std::vector<std::pair<std::string, std::string>>& records = {},
                    const std::string& version = "3\n") {
  std::string path = tmp_path("hostile_build.zip");
  unlink(path.c_str());
  int err = 0;
  zip_t* z = zip_open(path.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &err);
  std::vector<std::pair<std::string, std::string>> all = {{"data.pkl", pkl}, {"version", version}};
  all.insert(all.end(), records.begin(), records.end());
  for (const auto& [name, bytes] : all) {
    zip_source_t* src = zip_source_buffer(z, bytes.data(), bytes.size(), 0);
    zip_int64_t i = zip_file_add(z, ("archive/" + name).c_str(), src, 0);
    zip_set_file_compression(z, static_cast<zip_uint64_t>(i), ZIP_CM_STORE, 0);
  }
  zip_close(z);
  return read_bytes(path);
}

template <typename E>
void expect_refused(const std::string& what, const std::string& bytes, const std::string& says) {
  SCOPED_TRACE(what);
  std::string path = tmp_path("hostile.pt");
  {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f << bytes;
  }
  try {
    load(path);
    ADD_FAILURE() << "loaded a hostile file";
  } catch (const E& e) {
    EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong error type: " << e.what();
  }
  EXPECT_EQ(read_bytes(path), bytes);
}

// A string literal with its embedded NULs.
template <size_t N>
std::string S(const char (&s)[N]) {
  return std::string(s, N - 1);
}

std::string binunicode(const std::string& s) {
  uint32_t n = static_cast<uint32_t>(s.size());
  return "X" + std::string(reinterpret_cast<const char*>(&n), 4) + s;
}

std::string binint1(int v) { return "K" + std::string(1, static_cast<char>(v)); }

// A pickle of one tensor over storage '0' of `numel` elements: offset, size, stride.
std::string tensor_pickle(int numel, int offset, int size, int stride,
                          const std::string& storage_type = "FloatStorage") {
  return S("\x80\x02") + "ctorch._utils\n_rebuild_tensor_v2\n((" + binunicode("storage") +
         "ctorch\n" + storage_type + "\n" + binunicode("0") + binunicode("cpu") + binint1(numel) +
         "tQ" + binint1(offset) + binint1(size) + "\x85" + binint1(stride) +
         "\x85\x89"
         "ccollections\nOrderedDict\n)RtR.";
}

TEST(Checkpoint, HostileArchivesAreTypedErrors) {
  using serialize::FormatError;
  using serialize::OffsetError;
  using serialize::SizeMismatchError;
  using serialize::UnknownDTypeError;
  using serialize::UnpicklingError;
  std::string marker = tmp_path("pwned");
  unlink(marker.c_str());
  // os.system('touch <marker>'): refused at GLOBAL, before anything could be called.
  std::string evil =
      "\x80\x02"
      "cos\nsystem\n"
      "X" +
      std::string(4, '\0') + ")R.";
  std::string cmd = "touch " + marker;
  evil = std::string(
      "\x80\x02"
      "cos\nsystem\n(X",
      15);
  uint32_t n = static_cast<uint32_t>(cmd.size());
  evil += std::string(reinterpret_cast<const char*>(&n), 4) + cmd + "tR.";
  expect_refused<UnpicklingError>("os.system", archive(evil), "'os.system' is not one");
  // torch 2 writes uint16/32/64, float8_*, complex32 and bits* through _rebuild_tensor_v3.
  expect_refused<UnknownDTypeError>("rebuild v3",
                                    archive("\x80\x02"
                                            "ctorch._utils\n_rebuild_tensor_v3\n."),
                                    "dtypes mutagrad does not have");
  EXPECT_NE(access(marker.c_str(), F_OK), 0) << "the pickle ran a command";
  expect_refused<UnpicklingError>("builtins.eval",
                                  archive("\x80\x02"
                                          "cbuiltins\neval\n."),
                                  "'builtins.eval'");
  // REDUCE of an allowed global that is not callable (a storage type).
  expect_refused<UnpicklingError>("reduce storage",
                                  archive("\x80\x02"
                                          "ctorch\nFloatStorage\n)R."),
                                  "a REDUCE of 'torch FloatStorage'");
  expect_refused<UnpicklingError>("newobj", archive("\x80\x02N)\x81."), "opcode 0x81");
  expect_refused<UnpicklingError>("truncated pickle", archive(S("\x80\x02X\xff\0\0\0ab")),
                                  "past the end");
  expect_refused<UnpicklingError>("no stop", archive("\x80\x02N"), "truncated");
  expect_refused<UnpicklingError>("cycle", archive(S("\x80\x02]q\0h\0a.")), "nest deeper");
  expect_refused<UnpicklingError>(
      "deep", archive("\x80\x02" + std::string(100000, ']') + std::string(99999, 'a') + "."),
      "nest deeper");
  // Billion laughs: each level a list of the previous one twice.
  std::string laughs = S("\x80\x02(]q\0");
  for (int k = 0; k < 40; ++k) {
    laughs += std::string("](h", 3) + std::string(1, static_cast<char>(k)) + "h" +
              std::string(1, static_cast<char>(k)) + "eq" +
              std::string(1, static_cast<char>(k + 1));
  }
  laughs += "t.";  // a tuple of the 41 levels
  expect_refused<UnpicklingError>("laughs", archive(laughs), "expand to more than");
  std::string f4(16, '\0');
  EXPECT_NO_THROW(load_from_bytes(archive(tensor_pickle(4, 0, 4, 1), {{"data/0", f4}})));
  expect_refused<OffsetError>("tensor past its storage",
                              archive(tensor_pickle(4, 2, 3, 1), {{"data/0", f4}}),
                              "reaches element 4 of a storage of 4");
  expect_refused<SizeMismatchError>("short record",
                                    archive(tensor_pickle(4, 0, 4, 1), {{"data/0", f4.substr(4)}}),
                                    "has a record of 12 bytes");
  expect_refused<UnknownDTypeError>(
      "complex", archive(tensor_pickle(2, 0, 2, 1, "ComplexFloatStorage"), {{"data/0", f4}}),
      "ComplexFloatStorage");
  expect_refused<FormatError>("missing record", archive(tensor_pickle(4, 0, 4, 1)),
                              "no record 'archive/data/0'");
  expect_refused<FormatError>("version", archive("\x80\x02N.", {}, "99\n"), "version record");
  std::string good = save_to_bytes(Value::list({arange6(kFloat32)}));
  // A stored record whose headers claim more bytes than the archive has (libFuzzer found one
  // claiming 4 GB: the reader allocated that much before reading).
  {
    std::string big = good;
    uint32_t huge = 0xFB000000u;
    size_t local = big.find("archive/data.pkl");
    size_t central = big.find("archive/data.pkl", local + 1);
    ASSERT_NE(central, std::string::npos);
    std::memcpy(&big[local - 30 + 22], &huge, 4);    // local header: uncompressed size
    std::memcpy(&big[central - 46 + 24], &huge, 4);  // central directory: uncompressed size
    expect_refused<FormatError>("record beyond the file", big, "claims 4211081216 bytes");
  }
  expect_refused<FormatError>("truncated archive", good.substr(0, good.size() / 2),
                              "not a readable zip archive");
  expect_refused<FormatError>("not a zip", "PK\x03\x04 garbage", "not a readable zip archive");
  EXPECT_THROW(load(tmp_path("absent.pt")), serialize::SerializationError);
}

uint64_t le(const std::string& b, size_t at, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(b[at + i]);
  return v;
}

// Each record of an archive we wrote (records back to back from offset 0): its name, where its
// data begins, and its size, read from the local headers (zip64 sizes from the extra field).
struct LocalRecord {
  std::string name;
  uint64_t data_offset, size;
};
std::vector<LocalRecord> local_records(const std::string& b) {
  std::vector<LocalRecord> out;
  for (size_t pos = 0; pos + 30 <= b.size() && le(b, pos, 4) == 0x04034b50;) {
    uint64_t name_len = le(b, pos + 26, 2), extra_len = le(b, pos + 28, 2);
    uint64_t size = le(b, pos + 22, 4);
    if (size == 0xFFFFFFFF) {  // the zip64 field: id 1, then the uncompressed size
      EXPECT_EQ(le(b, pos + 30 + name_len, 2), 1u);
      size = le(b, pos + 30 + name_len + 4, 8);
    }
    uint64_t data = pos + 30 + name_len + extra_len;
    out.push_back({b.substr(pos + 30, name_len), data, size});
    pos = data + size;
  }
  return out;
}

Value odd_sized_values() {  // storages of 1, 3, 6, 10 and 40 bytes
  return Value::dict({{"flag", on_test_device(ones({1}, TensorOptions(kBool)))},
                      {"h", on_test_device(arange(3, kInt64).to(kFloat16))},
                      {"w", arange6(kInt8)},
                      {"b", on_test_device(arange(5, kInt64).to(kInt16))},
                      {"d", on_test_device(arange(5, kInt64).to(kFloat64))},
                      {"step", 7}});
}

void expect_same_values(const Value& got, const Value& want) {
  ASSERT_EQ(got.entries().size(), want.entries().size());
  for (size_t k = 0; k < want.entries().size(); ++k) {
    const Value& w = want.entries()[k].second;
    const Value& g = got.entries()[k].second;
    ASSERT_EQ(g.kind(), w.kind());
    if (w.kind() == Value::Kind::Tensor) {
      EXPECT_EQ(g.to_tensor().dtype(), w.to_tensor().dtype());
      EXPECT_EQ(bytes_of(g.to_tensor()), bytes_of(w.to_tensor()));
    } else {
      EXPECT_EQ(g.to_int(), w.to_int());
    }
  }
}

// torch.save aligns each record's data to 64 bytes (torch 2's mmap=True load maps them); so do
// we (Note [Zip writer]), in files, in bytes, and with zip64 fields; each layout loads back.
TEST(Checkpoint, EveryRecordWeWriteStartsAtAMultipleOf64Bytes) {
  Value v = odd_sized_values();
  std::string path = tmp_path("aligned.pt");
  save(v, path);
  std::string file = read_bytes(path);
  EXPECT_EQ(file, save_to_bytes(v, "aligned"));
  std::string forced = serialize::save_to_bytes_forcing_zip64(v, "aligned");
  for (const std::string* b : {&file, &forced}) {
    std::vector<LocalRecord> records = local_records(*b);
    ASSERT_EQ(records.size(), 8u);  // data.pkl, 5 storages, version, byteorder
    for (const LocalRecord& r : records) {
      EXPECT_EQ(r.data_offset % 64, 0u) << r.name;
      if (r.name == "aligned/version") {
        EXPECT_EQ(b->substr(r.data_offset, r.size), "3\n");
      }
    }
    expect_same_values(load_from_bytes(*b), v);
  }
  expect_same_values(load(path), v);
  EXPECT_NE(forced.find(S("PK\x06\x06")), std::string::npos);  // the zip64 end record
}

// Storage records are read by pread and CRC-checked by us (Note [Storage records are read with
// pread]); a bad byte anywhere in one, or a header that moves its data past the end, is a
// FormatError, through a path and through bytes.
TEST(Checkpoint, DamagedStorageRecordsAreFormatErrors) {
  using serialize::FormatError;
  Value v = Value::dict({{"w", on_test_device(arange(1000, kInt64).to(kFloat32))}});
  std::string good = save_to_bytes(v);
  std::vector<LocalRecord> records = local_records(good);
  ASSERT_EQ(records[1].name, "archive/data/0");
  const LocalRecord& r = records[1];
  for (uint64_t at : {r.data_offset, r.data_offset + 1234, r.data_offset + r.size - 1}) {
    std::string bad = good;
    bad[at] ^= 0x10;
    expect_refused<FormatError>(str("byte ", at), bad, "fails its CRC-32 check");
    EXPECT_THROW(load_from_bytes(bad), FormatError);
  }
  // The local header's extra length pushed to 65535: the data would start past the file.
  std::string moved = good;
  size_t header = good.find("archive/data/0") - 30;
  moved[header + 28] = moved[header + 29] = '\xff';
  expect_refused<FormatError>("data moved past the end", moved, "not a readable zip archive");
  // A damaged pickle, before it is interpreted (libzip's own check never ran: it compares
  // only on reading past a record's end).
  std::string pkl = good;
  pkl[records[0].data_offset + 3] ^= 1;
  expect_refused<FormatError>("pickle byte", pkl,
                              "record 'archive/data.pkl' fails its CRC-32 check");
}

TEST(Crc32, EqualsZlibOnEveryLengthClassAndSeed) {
  std::mt19937_64 rng(38);
  std::vector<unsigned char> buf(1 << 16);
  for (auto& c : buf) c = static_cast<unsigned char>(rng());
  auto zlib = [&](uint32_t seed, size_t off, size_t n) {
    return static_cast<uint32_t>(::crc32(seed, buf.data() + off, static_cast<uInt>(n)));
  };
  for (size_t n = 0; n < 300; ++n) {
    for (size_t off : {0, 1, 7}) {
      uint32_t seed = static_cast<uint32_t>(rng());
      ASSERT_EQ(serialize::crc32(seed, buf.data() + off, n), zlib(seed, off, n)) << n;
    }
  }
  for (size_t n : {size_t{1} << 16, size_t{65535}, size_t{4096 + 15}}) {
    EXPECT_EQ(serialize::crc32(0, buf.data(), n), zlib(0, 0, n)) << n;
  }
  // Split anywhere, continued: the same as in one piece.
  EXPECT_EQ(serialize::crc32(serialize::crc32(0, buf.data(), 1000), buf.data() + 1000, 30000),
            zlib(0, 0, 31000));
  std::printf("crc32 carry-less path: %s\n", serialize::crc32_is_accelerated() ? "yes" : "no");
}

}  // namespace
}  // namespace mutagrad
