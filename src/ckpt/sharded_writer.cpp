#include "ckpt/sharded_writer.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
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

ShardWriter::ShardWriter(int rank, int64_t step, ShardWriterOptions opt)
    : rank_(rank), step_(step), opt_(opt) {
  if (rank < 0) throw std::invalid_argument("ShardWriter: rank must be >= 0");
  if (opt.block_bytes == 0 || opt.block_bytes % 8 != 0)
    throw std::invalid_argument("ShardWriter: block_bytes must be a positive multiple of 8, got " +
                                std::to_string(opt.block_bytes));
}

void ShardWriter::add(const std::string& tensor, const std::vector<int64_t>& shape, const Box& box,
                      ConstTypedPtr data) {
  if (tensor.empty()) throw std::invalid_argument("ShardWriter::add: empty tensor name");
  if (!contains(full_box(shape), box))
    throw std::invalid_argument("ShardWriter::add: " + describe(box) + " lies outside tensor \"" +
                                tensor + "\" " + describe(full_box(shape)));
  if (box.empty()) return;
  if (!data) throw std::invalid_argument("ShardWriter::add: null data for \"" + tensor + "\"");
  PieceRecord r;
  r.tensor = tensor;
  r.shape = shape;
  r.box = box;
  r.dtype = data.dtype();
  r.bytes = uint64_t(box.numel()) * dtype_size(data.dtype());
  pieces_.push_back({std::move(r), data.data()});
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
  ShardFileRecord out;
  out.file = shard_file_name(rank_);
  out.rank = rank_;
  out.block_bytes = opt_.block_bytes;
  AtomicFileWriter w((std::filesystem::path(step_dir) / out.file).string());
  unsigned char header[kShardHeaderBytes];
  encode_shard_header(header, rank_, step_, opt_.block_bytes);
  w.write(header, sizeof(header));
  for (const auto& p : pieces_) {
    PieceRecord r = p.record;
    w.write_zeros(align_up(w.bytes_written()) - w.bytes_written());
    r.offset = w.bytes_written();
    const auto* src = static_cast<const unsigned char*>(p.data);
    for (uint64_t at = 0; at < r.bytes; at += opt_.block_bytes)
      r.checksums.push_back(checksum64(src + at, std::min(opt_.block_bytes, r.bytes - at)));
    w.write(src, r.bytes);
    out.pieces.push_back(std::move(r));
  }
  out.bytes = w.bytes_written();
  w.commit();
  return out;
}

}  // namespace ff
