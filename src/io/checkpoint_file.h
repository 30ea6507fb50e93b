#pragma once
// A checkpoint is one file of named byte sections plus a JSON meta object. The train layer
// decides what the sections hold; this file only guarantees that what it reads back is exactly
// what was written, or says loudly that it is not.
//
// Layout (little-endian):
//   0  char[8] magic "FFCHKPNT"
//   8  u32     version (1)
//  12  u32     reserved, 0
//  16  u64     header length H
//  24  u64     checksum64 of the header bytes
//  32  H bytes of JSON: {"meta": {...}, "data_bytes": D,
//                        "sections": [{"name", "offset", "bytes", "checksum"}, ...]}
//  then zero padding up to data_start = the next multiple of 64, then D bytes of section data.
// Section offsets are relative to data_start and multiples of 64, so every section can be viewed
// in place as float or bf16 with cache-line (and AVX-512) alignment.
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

namespace ff {

class CheckpointWriter {
 public:
  void set_meta(nlohmann::json meta);
  // Copies the bytes, so the caller's buffer may die right after the call.
  void add_section(const std::string& name, const void* data, size_t bytes);
  // No copy, for large buffers: data must stay alive and unchanged until write() returns.
  void add_section_view(const std::string& name, const void* data, size_t bytes);
  // Atomic: path.tmp, fsync, rename; a crash never leaves a half-written file at path.
  void write(const std::string& path) const;

 private:
  struct Section {
    std::string name;
    const void* data;
    size_t bytes;
    std::shared_ptr<std::vector<std::byte>> owned;  // set when add_section copied the bytes
  };
  void check_new_name(const std::string& name) const;

  nlohmann::json meta_ = nlohmann::json::object();
  std::vector<Section> sections_;
};

class CheckpointReader {
 public:
  // Reads the whole file and validates magic, version, header checksum, file size and every
  // section's checksum before returning, so a reader that exists holds trustworthy bytes.
  explicit CheckpointReader(const std::string& path);

  const nlohmann::json& meta() const { return meta_; }
  bool has(const std::string& name) const { return index_.count(name) != 0; }
  // 64-byte aligned view, valid while the reader lives; throws naming the missing section.
  std::span<const std::byte> section(const std::string& name) const;
  std::vector<std::string> section_names() const;  // in file order
  const std::string& path() const { return path_; }

 private:
  struct Entry {
    uint64_t offset;
    uint64_t bytes;
  };
  struct FreeAligned {
    void operator()(std::byte* p) const;
  };

  std::string path_;
  nlohmann::json meta_;
  std::vector<std::string> order_;
  std::map<std::string, Entry> index_;
  std::unique_ptr<std::byte, FreeAligned> data_;
};

}  // namespace ff
