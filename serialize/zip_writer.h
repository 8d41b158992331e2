// ZipWriter: the zip archives of checkpoint.cc (torch.save's container), written directly.
//
//   ZipWriter zip(write_at);
//   zip.add("archive/data.pkl", pkl.data(), pkl.size());
//   zip.add("archive/data/0", storage_bytes, n);    // written from this memory, no copy
//   zip.finish();                                   // central directory and end records
//
// Note [Zip writer]
// Every record is stored (method 0) and its data begins at a multiple of kRecordAlignment
// (64) in the file, as torch.save writes them (torch 2's mmap=True load relies on it): the
// local header's extra field carries the padding ("FB" id 0x4246, torch's). A record's bytes
// go to write_at straight from the caller's memory in kChunk pieces, each CRC-32'd just before
// it is written (crc32.h: carry-less, while the chunk is in cache), and the local header,
// which holds the CRC, is written after its data. Records, offsets or counts beyond 32 bits
// get zip64 fields (APPNOTE 4.5.3): the local header then carries both sizes, the central
// directory whichever fields overflowed, and the end of the archive a zip64 end record and
// locator. `force_zip64` writes them for every record (tests: zip64 without a 4 GiB file).
// Names are ASCII/UTF-8 (bit 11 set), times the DOS epoch (a save is byte-reproducible).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace mutagrad {
namespace serialize {

class ZipWriter {
 public:
  using WriteAt = std::function<void(uint64_t offset, const char* data, size_t n)>;
  static constexpr uint64_t kRecordAlignment = 64;
  static constexpr size_t kChunk = size_t{1} << 20;

  explicit ZipWriter(WriteAt write_at, bool force_zip64 = false)
      : write_at_(std::move(write_at)), force_zip64_(force_zip64) {}

  // Appends a stored record of `n` bytes read from `data`.
  void add(const std::string& name, const void* data, uint64_t n);
  // Writes the central directory and the end records; the archive is complete after it.
  void finish();
  // The archive's size so far.
  uint64_t size() const { return pos_; }

 private:
  struct Entry {
    std::string name;
    uint64_t header_offset = 0;
    uint64_t size = 0;
    uint32_t crc = 0;
  };

  WriteAt write_at_;
  bool force_zip64_;
  uint64_t pos_ = 0;
  std::vector<Entry> entries_;
};

}  // namespace serialize
}  // namespace mutagrad
