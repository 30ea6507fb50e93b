#include "io/byte_fields.h"
#include "io/checkpoint_file.h"

#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>

#include "io/atomic_file.h"
#include "io/checksum.h"
#include "io/file_reader.h"

namespace ff {

namespace {

using detail::get_field;
using detail::put_field;

constexpr char kMagic[8] = {'F', 'F', 'C', 'H', 'K', 'P', 'N', 'T'};
constexpr uint32_t kVersion = 1;
constexpr uint64_t kPrefixBytes = 32;
constexpr uint64_t kAlign = 64;
const char* const kFix = "use an earlier checkpoint";
const char* const kMissingFix =
    "check the path; checkpoints are the files fivefold train writes into the run directory";

uint64_t align_up(uint64_t x) { return (x + kAlign - 1) / kAlign * kAlign; }


[[noreturn]] void damaged(const std::string& path, const std::string& what) {
  throw std::runtime_error("checkpoint " + path + " is damaged: " + what + "; " + kFix);
}

}  // namespace

void CheckpointWriter::set_meta(nlohmann::json meta) {
  if (!meta.is_object()) {
    throw std::runtime_error("CheckpointWriter::set_meta: meta must be a JSON object, got " +
                             std::string(meta.type_name()) + "; wrap the values in an object");
  }
  meta_ = std::move(meta);
}

void CheckpointWriter::check_new_name(const std::string& name) const {
  if (name.empty()) {
    throw std::runtime_error(
        "CheckpointWriter: a section name must not be empty; name it after "
        "what it holds (e.g. \"params\")");
  }
  for (const auto& s : sections_) {
    if (s.name == name) {
      throw std::runtime_error("CheckpointWriter: section \"" + name +
                               "\" was added twice; give each section a unique name");
    }
  }
}

void CheckpointWriter::add_section(const std::string& name, const void* data, size_t bytes) {
  check_new_name(name);
  auto owned = std::make_shared<std::vector<std::byte>>(bytes);
  if (bytes > 0) std::memcpy(owned->data(), data, bytes);
  sections_.push_back({name, owned->data(), bytes, owned});
}

void CheckpointWriter::add_section_view(const std::string& name, const void* data, size_t bytes) {
  check_new_name(name);
  sections_.push_back({name, data, bytes, nullptr});
}

void CheckpointWriter::write(const std::string& path) const {
  nlohmann::json table = nlohmann::json::array();
  uint64_t offset = 0;
  for (const auto& s : sections_) {
    table.push_back({{"name", s.name},
                     {"offset", offset},
                     {"bytes", uint64_t(s.bytes)},
                     {"checksum", checksum64(s.data, s.bytes)}});
    offset += align_up(s.bytes);
  }
  const nlohmann::json header = {{"meta", meta_}, {"data_bytes", offset}, {"sections", table}};
  std::string text;
  try {
    text = header.dump();
  } catch (const nlohmann::json::exception& e) {
    // Only invalid UTF-8 in a meta string can fail here; replacing it would corrupt the meta.
    throw std::runtime_error("checkpoint " + path + ": meta cannot be serialized (" + e.what() +
                             "); store binary data as a section, not as a meta string");
  }

  unsigned char prefix[kPrefixBytes] = {};
  std::memcpy(prefix, kMagic, 8);
  put_field<uint32_t>(prefix, 8, kVersion);
  put_field<uint64_t>(prefix, 16, text.size());
  put_field<uint64_t>(prefix, 24, checksum64(text.data(), text.size()));

  AtomicFileWriter w(path);
  w.write(prefix, kPrefixBytes);
  w.write(text.data(), text.size());
  w.write_zeros(align_up(w.bytes_written()) - w.bytes_written());
  for (const auto& s : sections_) {
    w.write(s.data, s.bytes);
    w.write_zeros(align_up(s.bytes) - s.bytes);
  }
  w.commit();
}

void CheckpointReader::FreeAligned::operator()(std::byte* p) const { std::free(p); }

CheckpointReader::CheckpointReader(const std::string& path) : path_(path) {
  FileReader f(path, "checkpoint", kFix, kMissingFix);
  unsigned char prefix[kPrefixBytes];
  if (f.size() >= 8) {
    f.read_at(0, prefix, 8);
    if (std::memcmp(prefix, kMagic, 8) != 0) f.fail("not a fivefold checkpoint (bad magic)");
  }
  if (f.size() < kPrefixBytes) {
    f.fail("truncated: " + std::to_string(f.size()) + " bytes, shorter than the " +
           std::to_string(kPrefixBytes) + "-byte prefix");
  }
  f.read_at(0, prefix, kPrefixBytes);
  const uint32_t version = get_field<uint32_t>(prefix, 8);
  if (version != kVersion) {
    f.fail("unsupported version " + std::to_string(version) + " (this build reads version " +
           std::to_string(kVersion) + "); load it with the fivefold build that wrote it");
  }
  const uint64_t header_bytes = get_field<uint64_t>(prefix, 16);
  if (header_bytes > f.size() - kPrefixBytes) {
    f.fail("truncated: the header claims " + std::to_string(header_bytes) +
           " bytes but the file has " + std::to_string(f.size()));
  }
  std::string text(header_bytes, '\0');
  f.read_at(kPrefixBytes, text.data(), text.size());
  if (checksum64(text.data(), text.size()) != get_field<uint64_t>(prefix, 24)) {
    damaged(path, "header checksum mismatch");
  }
  nlohmann::json header = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!header.is_object() || !header.contains("data_bytes") || !header.contains("sections") ||
      !header["sections"].is_array() || !header["data_bytes"].is_number_unsigned()) {
    damaged(path, "header is not the expected JSON");
  }
  meta_ = header.value("meta", nlohmann::json::object());

  const uint64_t data_start = align_up(kPrefixBytes + header_bytes);
  const uint64_t data_bytes = header["data_bytes"].get<uint64_t>();
  if (f.size() < data_start || f.size() - data_start < data_bytes) {
    f.fail("truncated: expected " + std::to_string(data_start + data_bytes) + " bytes, found " +
           std::to_string(f.size()));
  }
  if (f.size() - data_start != data_bytes) {
    damaged(path, "file size mismatch, expected " + std::to_string(data_start + data_bytes) +
                      " bytes, found " + std::to_string(f.size()));
  }

  std::vector<uint64_t> checksums;
  for (const auto& s : header["sections"]) {
    const auto is_u64 = [&](const char* key) {
      return s.contains(key) && s[key].is_number_unsigned();
    };
    if (!s.is_object() || !s.contains("name") || !s["name"].is_string() || !is_u64("offset") ||
        !is_u64("bytes") || !is_u64("checksum")) {
      damaged(path, "malformed section table entry");
    }
    const std::string name = s["name"].get<std::string>();
    const Entry e{s["offset"].get<uint64_t>(), s["bytes"].get<uint64_t>()};
    if (e.offset % kAlign != 0 || e.offset > data_bytes || e.bytes > data_bytes - e.offset) {
      damaged(path, "section " + name + " lies outside the data region");
    }
    if (!index_.emplace(name, e).second) damaged(path, "section " + name + " appears twice");
    order_.push_back(name);
    checksums.push_back(s["checksum"].get<uint64_t>());
  }

  // aligned_alloc needs a non-zero multiple of the alignment.
  void* raw = std::aligned_alloc(kAlign, align_up(data_bytes == 0 ? 1 : data_bytes));
  if (!raw) throw std::bad_alloc();
  data_.reset(static_cast<std::byte*>(raw));
  f.read_at(data_start, data_.get(), data_bytes);
  for (size_t i = 0; i < order_.size(); ++i) {
    const Entry& e = index_.at(order_[i]);
    if (checksum64(data_.get() + e.offset, e.bytes) != checksums[i]) {
      damaged(path, "section " + order_[i] + " checksum mismatch");
    }
  }
}

std::span<const std::byte> CheckpointReader::section(const std::string& name) const {
  auto it = index_.find(name);
  if (it == index_.end()) {
    std::string have;
    for (const auto& n : order_) have += (have.empty() ? "" : ", ") + n;
    throw std::runtime_error("checkpoint " + path_ + " has no section \"" + name +
                             "\" (it has: " + (have.empty() ? "none" : have) +
                             "); it was written by a different configuration, so resume with "
                             "the settings that wrote it or use a matching checkpoint");
  }
  return {data_.get() + it->second.offset, size_t(it->second.bytes)};
}

std::vector<std::string> CheckpointReader::section_names() const { return order_; }

}  // namespace ff
