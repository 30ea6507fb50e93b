#pragma once
// TFRecord framing, the container of a TensorBoard event file: each record is
//   uint64 length | masked CRC-32C of those 8 bytes | payload | masked CRC-32C of the payload
// all little-endian. The CRC is CRC-32C (Castagnoli), not zlib's CRC-32, and is "masked" because
// TensorFlow stores CRCs of data that may itself hold CRCs.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace ff {

// CRC-32C of the bytes, continued from `crc` (the CRC of the bytes before them; 0 to start).
uint32_t crc32c(const void* data, size_t bytes, uint32_t crc = 0);

// TensorFlow's mask: rotate right by 15 bits, then add a constant.
uint32_t masked_crc32c(const void* data, size_t bytes);

// The payload framed as one TFRecord (16 bytes of header and footer around it).
std::string frame_record(std::string_view payload);

}  // namespace ff
