#include "io/tokens/token_shard_writer.h"

#include <cstring>
#include <stdexcept>

#include "io/byte_fields.h"

namespace ff {

using namespace shard_format;

TokenShardWriter::TokenShardWriter(const std::string& path, int vocab_size, uint64_t tokenizer_checksum,
                                   bool with_loss_mask)
    : path_(path),
      vocab_size_(vocab_size),
      tokenizer_checksum_(tokenizer_checksum),
      with_loss_mask_(with_loss_mask),
      dtype_bytes_(vocab_size <= 65535 ? 2 : 4),
      file_(path) {
  if (vocab_size <= 0)
    throw std::runtime_error("token shard " + path + ": vocab_size must be positive, got " +
                             std::to_string(vocab_size) + "; pass the tokenizer's vocab_size()");
  file_.write_zeros(kHeaderBytes);  // the header's place; written at commit
}

void TokenShardWriter::write_body(const void* data, size_t bytes) {
  sum_.add(data, bytes);
  file_.write(data, bytes);
}

void TokenShardWriter::append(const int32_t* ids, size_t n, const uint8_t* loss_mask) {
  if ((loss_mask != nullptr) != with_loss_mask_)
    throw std::logic_error("TokenShardWriter::append: a loss mask must be given exactly when the shard " +
                           path_ + " was opened with one");
  staging_.resize(n * dtype_bytes_);
  for (size_t i = 0; i < n; ++i) {
    if (ids[i] < 0 || ids[i] >= vocab_size_)
      throw std::runtime_error("token shard " + path_ + ": token id " + std::to_string(ids[i]) +
                               " at position " + std::to_string(tokens_ + i) + " is outside [0, " +
                               std::to_string(vocab_size_) + "); encode with the tokenizer whose vocab_size you pass");
    if (dtype_bytes_ == 2) detail::put_field<uint16_t>(staging_.data(), 2 * i, uint16_t(ids[i]));
    else detail::put_field<uint32_t>(staging_.data(), 4 * i, uint32_t(ids[i]));
  }
  write_body(staging_.data(), staging_.size());
  if (with_loss_mask_) {
    mask_bits_.resize(size_t(mask_bytes(tokens_ + n)), 0);
    for (size_t i = 0; i < n; ++i) {
      const uint64_t at = tokens_ + i;
      if (loss_mask[i]) mask_bits_[at / 8] |= uint8_t(1u << (at % 8));
    }
  }
  tokens_ += n;
}

void TokenShardWriter::commit() {
  if (with_loss_mask_) write_body(mask_bits_.data(), mask_bits_.size());
  unsigned char h[kHeaderBytes] = {};
  std::memcpy(h, kMagic, 8);
  detail::put_field<uint32_t>(h, 8, kVersion);
  detail::put_field<uint32_t>(h, 12, dtype_bytes_);
  detail::put_field<uint64_t>(h, 16, tokens_);
  detail::put_field<uint32_t>(h, 32, uint32_t(vocab_size_));
  detail::put_field<uint32_t>(h, 36, with_loss_mask_ ? kFlagLossMask : 0u);
  detail::put_field<uint64_t>(h, 40, tokenizer_checksum_);
  detail::put_field<uint64_t>(h, 24, header_checksum(h, sum_.finish()));
  file_.write_at(0, h, kHeaderBytes);
  file_.commit();
}

}  // namespace ff
