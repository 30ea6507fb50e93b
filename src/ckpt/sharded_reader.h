#pragma once
// Loading a sharded checkpoint under any layout: the caller asks for boxes of tensors (its tp
// block, its ZeRO chunk, its pipeline stage's tensors) and the reader fills them from whichever
// pieces intersect, whatever layout and rank count wrote them. It reads only the checksum blocks
// that hold requested elements (pread, never a whole file), verifies each block it reads, and
// stages through one ledger-tracked workspace buffer of at most ReadOptions::staging_bytes (one
// block at least), so loading never holds more than that beyond the caller's own buffers.
#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "ckpt/sharded_box.h"
#include "ckpt/sharded_manifest.h"
#include "core/dtype.h"
#include "io/file_reader.h"

namespace ff {

// The checkpoint's data is damaged (a checksum mismatch, a truncated, missing or foreign data
// file, a region no piece covers): another checkpoint of the same run may still be good, whereas
// the reader's other errors (an unknown tensor, a shape or dtype the request does not match) say
// the caller asked for another model's state, which no earlier checkpoint would fix.
struct CheckpointDamaged : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct ReadRequest {
  std::string tensor;
  Box box;  // the region wanted
  // Element (r, c) of box lands at dst.at((r - box.r0) * row_stride + (c - box.c0)); dst's dtype
  // must be the tensor's (no conversion yet). row_stride 0 means box.cols() (dense).
  TypedPtr dst;
  int64_t row_stride = 0;
};

// Requests that fill dst with elements [begin, end) of box's row-major order: a ZeRO chunk of a
// tensor (box = the whole tensor) or of a tp block (box = the block).
std::vector<ReadRequest> flat_read_requests(const std::string& tensor, const Box& box,
                                            int64_t begin, int64_t end, TypedPtr dst);

struct ReadOptions {
  uint64_t staging_bytes = kReadStagingBytes;  // rounded down to whole blocks, at least one
};

struct ReadStats {
  uint64_t bytes_read = 0;  // every byte pread, data file headers included
  int files_opened = 0;
  uint64_t blocks_verified = 0;
  uint64_t staging_bytes = 0;  // the largest staging buffer allocated
};

class ShardedCheckpointReader {
 public:
  struct TensorInfo {
    std::vector<int64_t> shape;
    DType dtype = DType::f32;
  };

  // Reads and verifies the manifest; opens no data file yet.
  explicit ShardedCheckpointReader(const std::string& step_dir, ReadOptions opt = {});
  ~ShardedCheckpointReader();

  const std::string& dir() const { return dir_; }
  const CheckpointInfo& info() const { return manifest_.info; }
  const Manifest& manifest() const { return manifest_; }
  bool has(const std::string& tensor) const { return tensors_.count(tensor) != 0; }
  const TensorInfo& tensor(const std::string& name) const;  // throws naming the tensor
  std::vector<std::string> tensor_names() const;

  // Fills every request or throws naming the problem: CheckpointDamaged for a region no piece
  // covers or a missing, truncated or damaged data file, std::runtime_error for a request that
  // does not fit the checkpoint (unknown tensor, dtype, shape). Requests may overlap each other.
  void read(const std::vector<ReadRequest>& requests);
  const ReadStats& stats() const { return stats_; }

 private:
  struct PieceRef {
    size_t file, piece;  // indices into manifest_.files and its pieces
  };
  struct Tensor {
    TensorInfo info;
    std::vector<PieceRef> pieces;
  };
  struct Job;
  const FileReader& open(size_t file);
  void read_piece(const PieceRef& ref, const std::vector<Job>& jobs, unsigned char* staging,
                  uint64_t staging_bytes);

  std::string dir_;
  ReadOptions opt_;
  Manifest manifest_;
  std::map<std::string, Tensor> tensors_;
  std::map<size_t, std::unique_ptr<FileReader>> open_;
  ReadStats stats_;
};

}  // namespace ff
