#include "io/byte_fields.h"
#include "io/token_shard.h"

#include <cstring>
#include <stdexcept>

#include "io/atomic_file.h"
#include "io/checksum.h"
#include "io/file_reader.h"

namespace ff {

namespace {

using detail::get_field;
using detail::put_field;

constexpr char kMagic[8] = {'F', 'F', 'T', 'O', 'K', 'E', 'N', 'S'};
constexpr uint32_t kVersion = 2;
constexpr size_t kHeaderBytes = 48;
// The header fields the checksum covers besides the payload: vocab, reserved, tokenizer sum.
constexpr size_t kCoveredAt = 32, kCoveredBytes = 16;
const char* const kFix = "re-run fivefold prepare to rebuild the token shards";
const char* const kMissingFix = "run fivefold prepare first, it writes the token shards";

// Hashing the covered fields with the payload's hash (not the payload itself) avoids copying a
// large payload next to its header; any change to a field or to the payload changes the result.
uint64_t shard_checksum(const unsigned char* header, const void* payload, size_t payload_bytes) {
  unsigned char buf[kCoveredBytes + 8];
  std::memcpy(buf, header + kCoveredAt, kCoveredBytes);
  put_field<uint64_t>(buf, kCoveredBytes, checksum64(payload, payload_bytes));
  return checksum64(buf, sizeof(buf));
}

template <typename T>
std::vector<T> narrow(const std::vector<int32_t>& tokens) {
  return std::vector<T>(tokens.begin(), tokens.end());
}

TokenShardInfo read_header(const FileReader& f, unsigned char (&h)[kHeaderBytes]) {
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
  TokenShardInfo info;
  info.version = get_field<uint32_t>(h, 8);
  info.dtype_bytes = get_field<uint32_t>(h, 12);
  info.tokens = get_field<uint64_t>(h, 16);
  info.checksum = get_field<uint64_t>(h, 24);
  info.vocab_size = get_field<uint32_t>(h, 32);
  info.tokenizer_checksum = get_field<uint64_t>(h, 40);
  if (info.version == 1) {
    f.fail("version 1 shard: its vocab field is not covered by the checksum, so its ids cannot "
           "be trusted against a vocabulary");
  }
  if (info.version != kVersion) {
    f.fail("unsupported version " + std::to_string(info.version) + " (this build reads version " +
           std::to_string(kVersion) + ")");
  }
  if (info.vocab_size == 0) f.fail("vocab size 0 in the header");
  if (info.dtype_bytes != 2 && info.dtype_bytes != 4) {
    f.fail("unsupported dtype code " + std::to_string(info.dtype_bytes) +
           " (expected 2 for u16 or 4 for u32)");
  }
  uint64_t payload = f.size() - kHeaderBytes;
  if (info.tokens > payload / info.dtype_bytes || payload != info.tokens * info.dtype_bytes) {
    // Divide before multiplying: a damaged count must not overflow into a plausible size.
    bool short_file = info.tokens > payload / info.dtype_bytes;
    f.fail(std::string(short_file ? "truncated" : "size mismatch") + ": header promises " +
           std::to_string(info.tokens) + " tokens of " + std::to_string(info.dtype_bytes) +
           " bytes but the payload is " + std::to_string(payload) + " bytes");
  }
  return info;
}

template <typename T>
void widen_checked(const FileReader& f, const unsigned char* header, const TokenShardInfo& info,
                   std::vector<int32_t>& out) {
  std::vector<T> raw(info.tokens);
  f.read_at(kHeaderBytes, raw.data(), raw.size() * sizeof(T));
  if (shard_checksum(header, raw.data(), raw.size() * sizeof(T)) != info.checksum) {
    f.fail("checksum mismatch, the file is corrupt");
  }
  out.resize(raw.size());
  uint64_t bad_at = raw.size();
  for (size_t i = 0; i < raw.size(); ++i) {
    out[i] = int32_t(raw[i]);
    if (uint64_t(raw[i]) >= info.vocab_size && bad_at == raw.size()) bad_at = i;
  }
  if (bad_at != raw.size()) {
    f.fail("token id " + std::to_string(uint64_t(raw[bad_at])) + " at position " +
           std::to_string(bad_at) + " is outside the vocabulary of " +
           std::to_string(info.vocab_size));
  }
}

}  // namespace

void write_token_shard(const std::string& path, const std::vector<int32_t>& tokens,
                       int vocab_size, uint64_t tokenizer_checksum) {
  if (vocab_size <= 0) {
    throw std::runtime_error("write_token_shard(" + path + "): vocab_size must be positive, got " +
                             std::to_string(vocab_size) + "; pass the tokenizer's vocab_size()");
  }
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i] < 0 || tokens[i] >= vocab_size) {
      throw std::runtime_error("write_token_shard(" + path + "): token id " +
                               std::to_string(tokens[i]) + " at position " + std::to_string(i) +
                               " is outside [0, " + std::to_string(vocab_size) +
                               "); encode with the tokenizer whose vocab_size you pass");
    }
  }
  const uint32_t dtype_bytes = vocab_size <= 65535 ? 2 : 4;
  std::vector<uint16_t> small;
  const void* payload = tokens.data();
  if (dtype_bytes == 2) {
    small = narrow<uint16_t>(tokens);
    payload = small.data();
  }
  const size_t payload_bytes = tokens.size() * dtype_bytes;

  unsigned char h[kHeaderBytes] = {};
  std::memcpy(h, kMagic, 8);
  put_field<uint32_t>(h, 8, kVersion);
  put_field<uint32_t>(h, 12, dtype_bytes);
  put_field<uint64_t>(h, 16, tokens.size());
  put_field<uint32_t>(h, 32, uint32_t(vocab_size));
  put_field<uint64_t>(h, 40, tokenizer_checksum);
  put_field<uint64_t>(h, 24, shard_checksum(h, payload, payload_bytes));

  AtomicFileWriter w(path);
  w.write(h, kHeaderBytes);
  w.write(payload, payload_bytes);
  w.commit();
}

std::vector<int32_t> read_token_shard(const std::string& path) {
  return read_token_shard(path, TokenShardExpect{});
}

std::vector<int32_t> read_token_shard(const std::string& path, const TokenShardExpect& expect) {
  FileReader f(path, "token shard", kFix, kMissingFix);
  unsigned char h[kHeaderBytes];
  TokenShardInfo info = read_header(f, h);
  std::vector<int32_t> out;
  if (info.dtype_bytes == 2) {
    widen_checked<uint16_t>(f, h, info, out);
  } else {
    widen_checked<uint32_t>(f, h, info, out);
  }
  // Compared only after the checksum held, so the message describes the file, not damage.
  if (expect.vocab_size > 0 && info.vocab_size != uint32_t(expect.vocab_size)) {
    f.fail("it was made with a vocabulary of " + std::to_string(info.vocab_size) +
           " tokens but " + (expect.vocab_source.empty() ? "the model" : expect.vocab_source) +
           " has " + std::to_string(expect.vocab_size) +
           "; use the shards prepared with the model's tokenizer");
  }
  if (expect.tokenizer_checksum != 0 && info.tokenizer_checksum != 0 &&
      info.tokenizer_checksum != expect.tokenizer_checksum) {
    f.fail("it was encoded by a different tokenizer.model than " +
           (expect.vocab_source.empty() ? std::string("the one in use") : expect.vocab_source) +
           " (tokenizer checksums differ); use the shards prepared with the same tokenizer");
  }
  return out;
}

TokenShardInfo read_token_shard_info(const std::string& path) {
  FileReader f(path, "token shard", kFix, kMissingFix);
  unsigned char h[kHeaderBytes];
  return read_header(f, h);
}

}  // namespace ff
