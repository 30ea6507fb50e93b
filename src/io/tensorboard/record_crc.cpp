#include "io/tensorboard/record_crc.h"

#include <array>

#include "io/byte_fields.h"

namespace ff {

namespace {

// The reflected Castagnoli polynomial. A byte-at-a-time table: an event file gets a few hundred
// bytes per training step, so a faster CRC would change nothing a user sees.
constexpr uint32_t kCastagnoliReflected = 0x82F63B78u;

constexpr std::array<uint32_t, 256> make_table() {
  std::array<uint32_t, 256> table{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int bit = 0; bit < 8; ++bit) c = (c & 1) ? (c >> 1) ^ kCastagnoliReflected : c >> 1;
    table[i] = c;
  }
  return table;
}

constexpr std::array<uint32_t, 256> kTable = make_table();

}  // namespace

uint32_t crc32c(const void* data, size_t bytes, uint32_t crc) {
  const auto* p = static_cast<const unsigned char*>(data);
  uint32_t c = ~crc;
  for (size_t i = 0; i < bytes; ++i) c = kTable[(c ^ p[i]) & 0xFFu] ^ (c >> 8);
  return ~c;
}

uint32_t masked_crc32c(const void* data, size_t bytes) {
  const uint32_t crc = crc32c(data, bytes);
  return ((crc >> 15) | (crc << 17)) + 0xA282EAD8u;
}

std::string frame_record(std::string_view payload) {
  std::string out(8 + 4 + payload.size() + 4, '\0');
  auto* p = reinterpret_cast<unsigned char*>(out.data());
  detail::put_field<uint64_t>(p, 0, payload.size());
  detail::put_field<uint32_t>(p, 8, masked_crc32c(p, 8));
  out.replace(12, payload.size(), payload);
  detail::put_field<uint32_t>(p, 12 + payload.size(), masked_crc32c(payload.data(), payload.size()));
  return out;
}

}  // namespace ff
