// ZipWriter (Note [Zip writer] in zip_writer.h).
#include "serialize/zip_writer.h"

#include <algorithm>

#include "serialize/crc32.h"
#include "serialize/errors.h"

namespace mutagrad {
namespace serialize {
namespace {

constexpr uint32_t kLocalSig = 0x04034b50, kCentralSig = 0x02014b50, kEndSig = 0x06054b50;
constexpr uint32_t kZip64EndSig = 0x06064b50, kZip64LocatorSig = 0x07064b50;
constexpr uint16_t kZip64Id = 0x0001, kPaddingId = 0x4246;  // "FB": torch's padding field
constexpr uint32_t kMax32 = 0xFFFFFFFF;
constexpr uint16_t kMax16 = 0xFFFF;
constexpr uint16_t kUtf8Names = 1 << 11;
constexpr uint16_t kDosDate = (0 << 9) | (1 << 5) | 1;  // 1980-01-01, the DOS epoch

// Little-endian fields appended to a byte string.
struct Bytes {
  std::string s;
  Bytes& u16(uint64_t v) { return put(v, 2); }
  Bytes& u32(uint64_t v) { return put(v, 4); }
  Bytes& u64(uint64_t v) { return put(v, 8); }
  Bytes& raw(const std::string& r) {
    s += r;
    return *this;
  }
  Bytes& put(uint64_t v, int n) {
    for (int i = 0; i < n; ++i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
    return *this;
  }
};

uint16_t version_needed(bool zip64) { return zip64 ? 45 : 20; }

}  // namespace

void ZipWriter::add(const std::string& name, const void* data, uint64_t n) {
  if (name.size() > kMax16) {
    throw SerializationError(str("save: the record name '", name.substr(0, 64), "...' has ",
                                 name.size(), " bytes; a zip name has at most 65535"));
  }
  Entry e{name, pos_, n, 0};
  bool zip64 = force_zip64_ || n >= kMax32;
  // The local header: 30 bytes, the name, [zip64: 4 + 16], the padding field (4 + pad).
  uint64_t fixed = 30 + name.size() + (zip64 ? 20 : 0) + 4;
  uint64_t pad = (kRecordAlignment - (pos_ + fixed) % kRecordAlignment) % kRecordAlignment;
  uint64_t data_offset = pos_ + fixed + pad;
  const char* p = static_cast<const char*>(data);
  for (uint64_t done = 0; done < n;) {
    size_t chunk = static_cast<size_t>(std::min<uint64_t>(kChunk, n - done));
    e.crc = crc32(e.crc, p + done, chunk);
    write_at_(data_offset + done, p + done, chunk);
    done += chunk;
  }
  Bytes h;
  h.u32(kLocalSig).u16(version_needed(zip64)).u16(kUtf8Names).u16(0).u16(0).u16(kDosDate);
  h.u32(e.crc).u32(zip64 ? kMax32 : n).u32(zip64 ? kMax32 : n);
  h.u16(name.size()).u16(fixed + pad - 30 - name.size()).raw(name);
  if (zip64) h.u16(kZip64Id).u16(16).u64(n).u64(n);
  h.u16(kPaddingId).u16(pad).raw(std::string(pad, 'Z'));
  write_at_(e.header_offset, h.s.data(), h.s.size());
  pos_ = data_offset + n;
  entries_.push_back(std::move(e));
}

void ZipWriter::finish() {
  uint64_t cd_offset = pos_;
  Bytes cd;
  for (const Entry& e : entries_) {
    bool big_size = force_zip64_ || e.size >= kMax32;
    bool big_offset = force_zip64_ || e.header_offset >= kMax32;
    Bytes z;  // the zip64 field: only the values that overflowed, in this order
    if (big_size) z.u64(e.size).u64(e.size);
    if (big_offset) z.u64(e.header_offset);
    bool zip64 = !z.s.empty();
    uint16_t needed = version_needed(zip64);  // >= the local header's, as readers check
    cd.u32(kCentralSig).u16((3 << 8) | 45).u16(needed).u16(kUtf8Names).u16(0).u16(0);
    cd.u16(kDosDate).u32(e.crc).u32(big_size ? kMax32 : e.size).u32(big_size ? kMax32 : e.size);
    cd.u16(e.name.size()).u16(zip64 ? 4 + z.s.size() : 0).u16(0).u16(0).u16(0);
    cd.u32(0100644u << 16).u32(big_offset ? kMax32 : e.header_offset).raw(e.name);
    if (zip64) cd.u16(kZip64Id).u16(z.s.size()).raw(z.s);
  }
  uint64_t cd_size = cd.s.size(), count = entries_.size();
  bool zip64_end = force_zip64_ || count >= kMax16 || cd_offset >= kMax32 || cd_size >= kMax32;
  Bytes end;
  if (zip64_end) {
    uint64_t end64_offset = cd_offset + cd_size;
    end.u32(kZip64EndSig).u64(44).u16((3 << 8) | 45).u16(45).u32(0).u32(0);
    end.u64(count).u64(count).u64(cd_size).u64(cd_offset);
    end.u32(kZip64LocatorSig).u32(0).u64(end64_offset).u32(1);
  }
  end.u32(kEndSig).u16(0).u16(0);
  end.u16(zip64_end ? kMax16 : count).u16(zip64_end ? kMax16 : count);
  end.u32(zip64_end ? kMax32 : cd_size).u32(zip64_end ? kMax32 : cd_offset).u16(0);
  cd.raw(end.s);
  write_at_(cd_offset, cd.s.data(), cd.s.size());
  pos_ = cd_offset + cd.s.size();
}

}  // namespace serialize
}  // namespace mutagrad
