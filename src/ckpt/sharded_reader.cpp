#include "ckpt/sharded_reader.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "ckpt/sharded_compat.h"
#include "core/memory.h"
#include "io/checksum.h"
#include "io/file_reader.h"

namespace ff {

namespace {

// A run of whole checksum blocks [first, last) of one piece.
struct BlockRun {
  uint64_t first, last;
};

// The blocks of piece p holding the region inter, merged into runs. Whole rows are one
// contiguous span; otherwise each row's bytes [r * row_bytes + cb0, r * row_bytes + cb1).
void add_runs(const PieceRecord& p, const Box& inter, uint64_t block, std::vector<BlockRun>& runs) {
  const uint64_t es = dtype_size(p.dtype), row_bytes = uint64_t(p.box.cols()) * es;
  const uint64_t cb0 = uint64_t(inter.c0 - p.box.c0) * es, cb1 = uint64_t(inter.c1 - p.box.c0) * es;
  const int64_t a = inter.r0 - p.box.r0, b = inter.r1 - p.box.r0;
  if (cb0 == 0 && cb1 == row_bytes) {
    runs.push_back({uint64_t(a) * row_bytes / block, (uint64_t(b) * row_bytes + block - 1) / block});
    return;
  }
  for (int64_t r = a; r < b; ++r) {
    const uint64_t s = uint64_t(r) * row_bytes + cb0, e = uint64_t(r) * row_bytes + cb1;
    const BlockRun run{s / block, (e - 1) / block + 1};
    if (!runs.empty() && run.first <= runs.back().last)
      runs.back().last = std::max(runs.back().last, run.last);
    else
      runs.push_back(run);
  }
}

std::vector<BlockRun> merge(std::vector<BlockRun> runs) {
  std::sort(runs.begin(), runs.end(), [](auto& x, auto& y) { return x.first < y.first; });
  std::vector<BlockRun> out;
  for (const auto& r : runs) {
    if (!out.empty() && r.first <= out.back().last)
      out.back().last = std::max(out.back().last, r.last);
    else
      out.push_back(r);
  }
  return out;
}

uint64_t window_bytes(uint64_t staging, uint64_t block) {
  return std::max<uint64_t>(1, staging / block) * block;
}

// Copies the part of inter (a region of piece p that req asked for) found in the window
// [w0, w1) of p's bytes, held at staging, to req's destination. A row's requested bytes are
// [r * row_bytes + cb0, r * row_bytes + cb1) of the piece, and a window may cut a row anywhere.
void scatter(const PieceRecord& p, const ReadRequest& req, const Box& inter, int64_t w0, int64_t w1,
             const unsigned char* staging) {
  const int64_t es = int64_t(dtype_size(p.dtype)), rb = p.box.cols() * es;
  const int64_t cb0 = (inter.c0 - p.box.c0) * es, cb1 = (inter.c1 - p.box.c0) * es;
  // The piece rows whose requested bytes meet the window.
  const int64_t r_lo = std::max(inter.r0 - p.box.r0, w0 < cb1 ? 0 : (w0 - cb1) / rb + 1);
  const int64_t r_hi = std::min(inter.r1 - p.box.r0, w1 <= cb0 ? 0 : (w1 - cb0 + rb - 1) / rb);
  const int64_t stride = req.row_stride ? req.row_stride : req.box.cols();
  const int64_t col = inter.c0 - req.box.c0;
  auto* dst = static_cast<unsigned char*>(req.dst.data());
  for (int64_t r = r_lo; r < r_hi; ++r) {
    const int64_t seg0 = r * rb + cb0, seg1 = r * rb + cb1;
    const int64_t s = std::max(seg0, w0), e = std::min(seg1, w1);
    const int64_t row = r + p.box.r0 - req.box.r0;
    std::memcpy(dst + (row * stride + col) * es + (s - seg0), staging + (s - w0), size_t(e - s));
  }
}

}  // namespace

std::vector<ReadRequest> flat_read_requests(const std::string& tensor, const Box& box,
                                            int64_t begin, int64_t end, TypedPtr dst) {
  std::vector<ReadRequest> out;
  size_t at = 0;
  for (const Box& b : split_flat_range(box, begin, end)) {
    out.push_back({tensor, b, dst.at(at), b.cols()});
    at += size_t(b.numel());
  }
  return out;
}

struct ShardedCheckpointReader::Job {
  const ReadRequest* req;
  Box inter;  // the part of req.box this piece holds
};

ShardedCheckpointReader::ShardedCheckpointReader(const std::string& step_dir, ReadOptions opt)
    : dir_(step_dir), opt_(opt) {
  refuse_single_file_checkpoint(step_dir);
  manifest_ = read_manifest(step_dir);
  for (size_t f = 0; f < manifest_.files.size(); ++f) {
    const auto& pieces = manifest_.files[f].pieces;
    for (size_t p = 0; p < pieces.size(); ++p) {
      Tensor& t = tensors_[pieces[p].tensor];
      t.info = {pieces[p].shape, pieces[p].dtype};  // write_manifest checked they all agree
      t.pieces.push_back({f, p});
    }
  }
}

ShardedCheckpointReader::~ShardedCheckpointReader() = default;

const ShardedCheckpointReader::TensorInfo& ShardedCheckpointReader::tensor(
    const std::string& name) const {
  auto it = tensors_.find(name);
  if (it == tensors_.end()) {
    std::string known;
    int shown = 0;
    for (const auto& [n, t] : tensors_)
      if (shown++ < 8) known += (known.empty() ? "" : ", ") + n;
    if (shown > 8) known += ", ... (" + std::to_string(shown) + " in all)";
    throw std::runtime_error("checkpoint " + dir_ + " has no tensor \"" + name + "\" (it holds: " +
                             known + "); it was saved by a different model or code version, "
                             "so point the run at a checkpoint of this model");
  }
  return it->second.info;
}

std::vector<std::string> ShardedCheckpointReader::tensor_names() const {
  std::vector<std::string> out;
  for (const auto& [n, t] : tensors_) out.push_back(n);
  return out;
}

const FileReader& ShardedCheckpointReader::open(size_t file) {
  auto& slot = open_[file];
  if (slot) return *slot;
  const ShardFileRecord& rec = manifest_.files[file];
  slot = std::make_unique<FileReader>(
      (std::filesystem::path(dir_) / rec.file).string(), "checkpoint data file",
      kDamagedCheckpointFix,
      std::string("the checkpoint is incomplete (a rank's file was lost): ") + kDamagedCheckpointFix);
  ++stats_.files_opened;
  if (slot->size() != rec.bytes)
    slot->fail((slot->size() < rec.bytes ? "truncated: " : "wrong size: ") +
               std::to_string(slot->size()) + " bytes, the manifest records " +
               std::to_string(rec.bytes));
  unsigned char header[kShardHeaderBytes];
  slot->read_at(0, header, sizeof(header));
  stats_.bytes_read += sizeof(header);
  const std::string bad = check_shard_header(header, rec.rank, manifest_.info.step);
  if (!bad.empty()) slot->fail(bad);
  return *slot;
}

void ShardedCheckpointReader::read(const std::vector<ReadRequest>& requests) {
  // Pieces in (file, offset) order, each with the parts of requests it holds.
  std::map<std::pair<size_t, size_t>, std::vector<Job>> work;
  for (const auto& req : requests) {
    const TensorInfo& info = tensor(req.tensor);
    const std::string what = "request for " + describe(req.box) + " of \"" + req.tensor + "\"";
    if (req.dst.dtype() != info.dtype)
      throw std::runtime_error(what + ": the destination is " + dtype_name(req.dst.dtype()) +
                               " but the checkpoint holds " + dtype_name(info.dtype) +
                               "; read into a buffer of the saved dtype and convert");
    if (!contains(full_box(info.shape), req.box))
      throw std::runtime_error(what + " lies outside the tensor, " +
                               describe(full_box(info.shape)) + " in " + dir_ +
                               "; the model's shapes differ from the checkpoint's, check the config");
    if (req.box.empty()) continue;
    if (!req.dst || (req.row_stride != 0 && req.row_stride < req.box.cols()))
      throw std::runtime_error(what + ": null destination or row_stride below the box width");
    std::vector<Box> found;
    for (const PieceRef& ref : tensors_.at(req.tensor).pieces) {
      const Box x = intersect(req.box, manifest_.files[ref.file].pieces[ref.piece].box);
      if (x.empty()) continue;
      work[{ref.file, ref.piece}].push_back({&req, x});
      found.push_back(x);
    }
    // write_manifest refuses holes, so a hole means a manifest edited or written by other code.
    const std::vector<Box> hole = uncovered(req.box, found);
    if (!hole.empty())
      throw CheckpointDamaged(
          "checkpoint " + dir_ + ": no piece covers " + describe(hole.front()) +
          (hole.size() > 1 ? " (and " + std::to_string(hole.size() - 1) + " more boxes)" : "") +
          " of tensor \"" + req.tensor + "\", asked for by a " + what + "; " +
          kDamagedCheckpointFix);
  }
  uint64_t staging = 0;
  for (const auto& [key, jobs] : work) {
    const ShardFileRecord& f = manifest_.files[key.first];
    staging = std::max(staging, std::min(window_bytes(opt_.staging_bytes, f.block_bytes),
                                         f.pieces[key.second].bytes));
  }
  if (work.empty()) return;
  TrackedBuffer<unsigned char> buf(staging, MemCategory::workspace);
  stats_.staging_bytes = std::max(stats_.staging_bytes, staging);
  for (const auto& [key, jobs] : work) {
    try {
      read_piece({key.first, key.second}, jobs, buf.data(), staging);
    } catch (const std::runtime_error& e) {
      // Every failure past the requests' checks is the files' (FileReader's or a checksum's).
      throw CheckpointDamaged(e.what());
    }
  }
}

void ShardedCheckpointReader::read_piece(const PieceRef& ref, const std::vector<Job>& jobs,
                                         unsigned char* staging, uint64_t staging_bytes) {
  const FileReader& file = open(ref.file);
  const uint64_t block = manifest_.files[ref.file].block_bytes;
  const PieceRecord& p = manifest_.files[ref.file].pieces[ref.piece];
  std::vector<BlockRun> runs;
  for (const Job& j : jobs) add_runs(p, j.inter, block, runs);
  const uint64_t window = std::min(window_bytes(staging_bytes, block), staging_bytes);
  for (const BlockRun& run : merge(std::move(runs))) {
    for (uint64_t w0 = run.first * block; w0 < std::min(run.last * block, p.bytes); w0 += window) {
      const uint64_t w1 = std::min({w0 + window, run.last * block, p.bytes});
      file.read_at(p.offset + w0, staging, w1 - w0);
      stats_.bytes_read += w1 - w0;
      for (uint64_t b = w0; b < w1; b += block) {
        const uint64_t n = std::min(block, w1 - b);
        if (checksum64(staging + (b - w0), n) != p.checksums[b / block])
          file.fail("checksum mismatch in bytes [" + std::to_string(p.offset + b) + ", " +
                    std::to_string(p.offset + b + n) + ") (block " + std::to_string(b / block) +
                    " of the piece " + describe(p.box) + " of \"" + p.tensor + "\")");
        ++stats_.blocks_verified;
      }
      for (const Job& j : jobs) scatter(p, *j.req, j.inter, int64_t(w0), int64_t(w1), staging);
    }
  }
}

}  // namespace ff
