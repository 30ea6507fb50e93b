#include "io/tokens/token_shard_format.h"

#include <algorithm>
#include <cstring>

#include "io/byte_fields.h"
#include "io/checksum.h"

namespace ff::shard_format {

void BlockChecksum::add(const void* data, size_t bytes) {
  const auto* p = static_cast<const unsigned char*>(data);
  while (bytes > 0) {
    // A whole block straight from the caller's buffer when none is pending: no copy.
    if (block_.empty() && bytes >= kChecksumBlockBytes) {
      sums_.push_back(checksum64(p, kChecksumBlockBytes));
      p += kChecksumBlockBytes, bytes -= kChecksumBlockBytes;
      continue;
    }
    const size_t take = std::min(bytes, kChecksumBlockBytes - block_.size());
    block_.insert(block_.end(), p, p + take);
    p += take, bytes -= take;
    if (block_.size() == kChecksumBlockBytes) {
      sums_.push_back(checksum64(block_.data(), block_.size()));
      block_.clear();
    }
  }
}

uint64_t BlockChecksum::finish() {
  if (!block_.empty()) sums_.push_back(checksum64(block_.data(), block_.size()));
  block_.clear();
  return checksum64(sums_.data(), sums_.size() * sizeof(uint64_t));
}

uint64_t header_checksum(const unsigned char* header, uint64_t body_sum) {
  // Hashing the covered fields with the body's sum (not the body itself) avoids copying a large
  // body next to its header; any change to a field or to the body changes the result.
  unsigned char buf[kCoveredBytes + 8];
  std::memcpy(buf, header + kCoveredAt, kCoveredBytes);
  detail::put_field<uint64_t>(buf, kCoveredBytes, body_sum);
  return checksum64(buf, sizeof(buf));
}

}  // namespace ff::shard_format
