#include "ckpt/sharded_writer.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <stdexcept>

#include "io/atomic_file.h"
#include "io/checksum.h"

namespace ff {

namespace {

// Pieces start on 64-byte boundaries, so a reader may view them in place with vector alignment.
constexpr uint64_t kPieceAlign = 64;

uint64_t align_up(uint64_t v) { return (v + kPieceAlign - 1) / kPieceAlign * kPieceAlign; }

}  // namespace

std::string shard_file_name(int rank) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "rank_%05d.bin", rank);
  return buf;
}

namespace {

ShardWriterOptions checked(int rank, ShardWriterOptions opt) {
  if (rank < 0) throw std::invalid_argument("ShardWriter: rank must be >= 0");
  if (opt.block_bytes == 0 || opt.block_bytes % 8 != 0)
    throw std::invalid_argument("ShardWriter: block_bytes must be a positive multiple of 8, got " +
                                std::to_string(opt.block_bytes));
  return opt;
}

}  // namespace

ShardWriter::ShardWriter(int rank, int64_t step, ShardWriterOptions opt)
    : rank_(rank), step_(step), opt_(checked(rank, opt)) {}

namespace {

// The record of data as a piece of tensor's box, offset and checksums not yet known; nullopt
// for an empty box. Throws on a box outside the tensor or null data.
std::optional<PieceRecord> piece_record(const std::string& tensor, const std::vector<int64_t>& shape,
                                        const Box& box, ConstTypedPtr data, const char* who) {
  if (tensor.empty()) throw std::invalid_argument(std::string(who) + ": empty tensor name");
  if (!contains(full_box(shape), box))
    throw std::invalid_argument(std::string(who) + ": " + describe(box) + " lies outside tensor \"" + tensor +
                                "\" " + describe(full_box(shape)));
  if (box.empty()) return std::nullopt;
  if (!data) throw std::invalid_argument(std::string(who) + ": null data for \"" + tensor + "\"");
  PieceRecord r;
  r.tensor = tensor;
  r.shape = shape;
  r.box = box;
  r.dtype = data.dtype();
  r.bytes = uint64_t(box.numel()) * dtype_size(data.dtype());
  return r;
}

// Appends r's bytes at the next aligned offset of w, filling r's offset and block checksums.
void append_piece(AtomicFileWriter& w, PieceRecord& r, const void* data, uint64_t block_bytes) {
  w.write_zeros(align_up(w.bytes_written()) - w.bytes_written());
  r.offset = w.bytes_written();
  const auto* src = static_cast<const unsigned char*>(data);
  for (uint64_t at = 0; at < r.bytes; at += block_bytes)
    r.checksums.push_back(checksum64(src + at, std::min(block_bytes, r.bytes - at)));
  w.write(src, r.bytes);
}

ShardFileRecord empty_record(int rank, uint64_t block_bytes) {
  ShardFileRecord out;
  out.file = shard_file_name(rank);
  out.rank = rank;
  out.block_bytes = block_bytes;
  return out;
}

void write_header(AtomicFileWriter& w, int rank, int64_t step, uint64_t block_bytes) {
  unsigned char header[kShardHeaderBytes];
  encode_shard_header(header, rank, step, block_bytes);
  w.write(header, sizeof(header));
}

}  // namespace

void ShardWriter::add(const std::string& tensor, const std::vector<int64_t>& shape, const Box& box,
                      ConstTypedPtr data) {
  if (std::optional<PieceRecord> r = piece_record(tensor, shape, box, data, "ShardWriter::add"))
    pieces_.push_back({std::move(*r), data.data()});
}

void ShardWriter::add_flat(const std::string& tensor, const std::vector<int64_t>& shape,
                           const Box& box, int64_t begin, int64_t end, ConstTypedPtr data) {
  size_t at = 0;
  for (const Box& b : split_flat_range(box, begin, end)) {
    add(tensor, shape, b, data.at(at));
    at += size_t(b.numel());
  }
}

ShardFileRecord ShardWriter::write(const std::string& step_dir) const {
  ShardFileRecord out = empty_record(rank_, opt_.block_bytes);
  AtomicFileWriter w((std::filesystem::path(step_dir) / out.file).string());
  write_header(w, rank_, step_, opt_.block_bytes);
  for (const auto& p : pieces_) {
    PieceRecord r = p.record;
    append_piece(w, r, p.data, opt_.block_bytes);
    out.pieces.push_back(std::move(r));
  }
  out.bytes = w.bytes_written();
  w.commit();
  return out;
}

ShardStreamWriter::ShardStreamWriter(const std::string& step_dir, int rank, int64_t step, ShardWriterOptions opt)
    : opt_(checked(rank, opt)),
      file_((std::filesystem::path(step_dir) / shard_file_name(rank)).string()),
      record_(empty_record(rank, opt.block_bytes)) {
  write_header(file_, rank, step, opt.block_bytes);
}

void ShardStreamWriter::add(const std::string& tensor, const std::vector<int64_t>& shape, const Box& box,
                            ConstTypedPtr data) {
  std::optional<PieceRecord> r = piece_record(tensor, shape, box, data, "ShardStreamWriter::add");
  if (!r) return;
  append_piece(file_, *r, data.data(), opt_.block_bytes);
  record_.pieces.push_back(std::move(*r));
}

ShardFileRecord ShardStreamWriter::commit() {
  record_.bytes = file_.bytes_written();
  file_.commit();
  return record_;
}

}  // namespace ff
