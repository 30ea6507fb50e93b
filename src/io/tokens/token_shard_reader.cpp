#include "io/tokens/token_shard_reader.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "io/byte_fields.h"
#include "io/checksum.h"

namespace ff {

using namespace shard_format;
using detail::get_field;

namespace {

constexpr uint32_t kVersionWithoutMask = 2;

uint64_t payload_bytes(const TokenShardInfo& info) { return info.tokens * info.dtype_bytes; }
uint64_t body_bytes(const TokenShardInfo& info) {
  return payload_bytes(info) + (info.loss_mask ? mask_bytes(info.tokens) : 0);
}

uint64_t token_at(const unsigned char* raw, uint32_t dtype_bytes, size_t i) {
  return dtype_bytes == 2 ? get_field<uint16_t>(raw, 2 * i) : get_field<uint32_t>(raw, 4 * i);
}

// The first id at or past vocab in raw's n tokens, or n.
size_t first_bad_id(const unsigned char* raw, uint32_t dtype_bytes, size_t n, uint32_t vocab) {
  for (size_t i = 0; i < n; ++i)
    if (token_at(raw, dtype_bytes, i) >= vocab) return i;
  return n;
}

}  // namespace

TokenShardReader::TokenShardReader(const std::string& path) : file_(path, "token shard", kFix, kMissingFix) {
  const FileReader& f = file_;
  unsigned char* h = header_;
  if (f.size() < kHeaderBytes) {
    if (f.size() >= 8) {
      f.read_at(0, h, 8);
      if (std::memcmp(h, kMagic, 8) != 0) f.fail("not a fivefold token shard (bad magic)");
    }
    f.fail("truncated: " + std::to_string(f.size()) + " bytes, shorter than the " +
           std::to_string(kHeaderBytes) + "-byte header");
  }
  f.read_at(0, h, kHeaderBytes);
  if (std::memcmp(h, kMagic, 8) != 0) f.fail("not a fivefold token shard (bad magic)");
  info_.version = get_field<uint32_t>(h, 8);
  info_.dtype_bytes = get_field<uint32_t>(h, 12);
  info_.tokens = get_field<uint64_t>(h, 16);
  info_.checksum = get_field<uint64_t>(h, 24);
  info_.vocab_size = get_field<uint32_t>(h, 32);
  const uint32_t flags = get_field<uint32_t>(h, 36);
  info_.tokenizer_checksum = get_field<uint64_t>(h, 40);
  if (info_.version == 1)
    f.fail("version 1 shard: its vocab field is not covered by the checksum, so its ids cannot "
           "be trusted against a vocabulary");
  if (info_.version != kVersion && info_.version != kVersionWithoutMask)
    f.fail("unsupported version " + std::to_string(info_.version) + " (this build reads versions " +
           std::to_string(kVersionWithoutMask) + " and " + std::to_string(kVersion) + ")");
  if (info_.version == kVersionWithoutMask && flags != 0) f.fail("version 2 shard with nonzero reserved field");
  if ((flags & ~kFlagLossMask) != 0) f.fail("unknown flags " + std::to_string(flags) + " in the header");
  info_.loss_mask = (flags & kFlagLossMask) != 0;
  if (info_.vocab_size == 0) f.fail("vocab size 0 in the header");
  if (info_.dtype_bytes != 2 && info_.dtype_bytes != 4)
    f.fail("unsupported dtype code " + std::to_string(info_.dtype_bytes) + " (expected 2 for u16 or 4 for u32)");
  const uint64_t body = f.size() - kHeaderBytes;
  // Divide before multiplying: a damaged count must not overflow into a plausible size.
  const bool short_file = info_.tokens > body / info_.dtype_bytes || body < body_bytes(info_);
  if (short_file || body != body_bytes(info_))
    f.fail(std::string(short_file ? "truncated" : "size mismatch") + ": header promises " +
           std::to_string(info_.tokens) + " tokens of " + std::to_string(info_.dtype_bytes) + " bytes" +
           (info_.loss_mask ? " and their loss mask" : "") + " but the body is " + std::to_string(body) + " bytes");
}

void TokenShardReader::verify() const {
  const uint64_t payload = payload_bytes(info_), body = body_bytes(info_);
  uint64_t body_sum = 0;
  size_t bad = SIZE_MAX;
  uint64_t bad_at = 0, bad_id = 0;
  if (info_.version == kVersionWithoutMask) {
    // Version 2 hashed its payload in one call, so it is checked in memory (such shards predate
    // corpora larger than memory).
    std::vector<unsigned char> raw(payload);
    file_.read_at(kHeaderBytes, raw.data(), raw.size());
    body_sum = checksum64(raw.data(), raw.size());
    bad = first_bad_id(raw.data(), info_.dtype_bytes, info_.tokens, info_.vocab_size);
    if (bad != info_.tokens) bad_at = bad, bad_id = token_at(raw.data(), info_.dtype_bytes, bad);
  } else {
    BlockChecksum sum;
    std::vector<unsigned char> buf(kChecksumBlockBytes);  // a multiple of both dtypes
    for (uint64_t at = 0; at < body; at += buf.size()) {
      const size_t n = size_t(std::min<uint64_t>(buf.size(), body - at));
      file_.read_at(kHeaderBytes + at, buf.data(), n);
      sum.add(buf.data(), n);
      if (at < payload && bad == SIZE_MAX) {
        const size_t ids = size_t(std::min<uint64_t>(n, payload - at)) / info_.dtype_bytes;
        const size_t i = first_bad_id(buf.data(), info_.dtype_bytes, ids, info_.vocab_size);
        if (i != ids) bad = i, bad_at = at / info_.dtype_bytes + i, bad_id = token_at(buf.data(), info_.dtype_bytes, i);
      }
    }
    body_sum = sum.finish();
    if (bad == SIZE_MAX) bad = info_.tokens;
  }
  if (header_checksum(header_, body_sum) != info_.checksum) file_.fail("checksum mismatch, the file is corrupt");
  if (bad != info_.tokens)
    file_.fail("token id " + std::to_string(bad_id) + " at position " + std::to_string(bad_at) +
               " is outside the vocabulary of " + std::to_string(info_.vocab_size));
}

void TokenShardReader::check_matches(const TokenShardExpect& expect) const {
  if (expect.vocab_size > 0 && info_.vocab_size != uint32_t(expect.vocab_size))
    file_.fail("it was made with a vocabulary of " + std::to_string(info_.vocab_size) + " tokens but " +
               (expect.vocab_source.empty() ? "the model" : expect.vocab_source) + " has " +
               std::to_string(expect.vocab_size) + "; use the shards prepared with the model's tokenizer");
  if (expect.tokenizer_checksum != 0 && info_.tokenizer_checksum != 0 &&
      info_.tokenizer_checksum != expect.tokenizer_checksum)
    file_.fail("it was encoded by a different tokenizer than " +
               (expect.vocab_source.empty() ? std::string("the one in use") : expect.vocab_source) +
               " (tokenizer checksums differ); use the shards prepared with the same tokenizer");
}

void TokenShardReader::check_range(uint64_t begin, size_t count) const {
  if (begin > info_.tokens || count > info_.tokens - begin)
    throw std::runtime_error("token shard " + path() + ": tokens [" + std::to_string(begin) + ", " +
                            std::to_string(begin + count) + ") lie past its " + std::to_string(info_.tokens) + " tokens");
}

void TokenShardReader::read_tokens(uint64_t begin, size_t count, int32_t* out) const {
  check_range(begin, count);
  if (info_.dtype_bytes == 4) {
    file_.read_at(kHeaderBytes + begin * 4, out, count * 4);  // u32 ids < vocab fit int32 (verified)
    return;
  }
  // u16 ids land in the back half of out and widen front to back, so no element is read after
  // it was overwritten.
  auto* narrow = reinterpret_cast<unsigned char*>(out) + count * 2;
  file_.read_at(kHeaderBytes + begin * 2, narrow, count * 2);
  for (size_t i = 0; i < count; ++i) out[i] = int32_t(get_field<uint16_t>(narrow, 2 * i));
}

void TokenShardReader::read_loss_mask(uint64_t begin, size_t count, uint8_t* out) const {
  check_range(begin, count);
  if (!info_.loss_mask) {
    std::fill(out, out + count, uint8_t(1));
    return;
  }
  if (count == 0) return;
  const uint64_t first = begin / 8, last = (begin + count - 1) / 8;
  std::vector<uint8_t> bits(size_t(last - first + 1));
  file_.read_at(kHeaderBytes + payload_bytes(info_) + first, bits.data(), bits.size());
  for (size_t i = 0; i < count; ++i) {
    const uint64_t at = begin + i;
    out[i] = uint8_t((bits[size_t(at / 8 - first)] >> (at % 8)) & 1u);
  }
}

}  // namespace ff
