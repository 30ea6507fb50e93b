#pragma once
// One rank's half of a sharded save: it lists the pieces of tensors it holds and writes them to
// its own data file in the step folder; one rank then passes every rank's ShardFileRecord to
// write_manifest (sharded_manifest.h), which makes the checkpoint exist.
//
// The writer only reads the caller's buffers and its own members, and allocates nothing the
// size of the data: a caller saving asynchronously copies its pieces to staged (ledger-tracked)
// buffers, adds those, and calls write() from a background thread while training goes on.
#include <cstdint>
#include <string>
#include <vector>

#include "ckpt/sharded_box.h"
#include "ckpt/sharded_manifest.h"
#include "core/dtype.h"
#include "io/atomic_file.h"

namespace ff {

struct ShardWriterOptions {
  uint64_t block_bytes = uint64_t(1) << 20;  // checksum granularity; a multiple of 8
};

// "rank_00003.bin"
std::string shard_file_name(int rank);

class ShardWriter {
 public:
  ShardWriter(int rank, int64_t step, ShardWriterOptions opt = {});

  // data holds box's elements row-major and contiguous (a whole tensor or a tp block). Not
  // copied: it must stay alive and unchanged until write() returns. An empty box adds nothing.
  void add(const std::string& tensor, const std::vector<int64_t>& shape, const Box& box,
           ConstTypedPtr data);
  // data holds elements [begin, end) of box's row-major order: a ZeRO chunk of a tensor (box =
  // the whole tensor) or of a tp block (box = the block). Stored as up to three pieces.
  void add_flat(const std::string& tensor, const std::vector<int64_t>& shape, const Box& box,
                int64_t begin, int64_t end, ConstTypedPtr data);

  // Writes step_dir/rank_NNNNN.bin (temporary name, fsync, rename) and returns its record.
  ShardFileRecord write(const std::string& step_dir) const;
  size_t pieces() const { return pieces_.size(); }

 private:
  struct Pending {
    PieceRecord record;  // offset and checksums are filled by write()
    const void* data;
  };
  int rank_;
  int64_t step_;
  ShardWriterOptions opt_;
  std::vector<Pending> pieces_;
};

// The same data file written as the pieces arrive, for a producer that holds one bounded piece
// at a time (import streams a model through one buffer): each add() writes its bytes before
// returning, so the caller may reuse the buffer at once. Nothing appears at the file's name
// before commit(); a writer destroyed uncommitted leaves nothing behind.
class ShardStreamWriter {
 public:
  ShardStreamWriter(const std::string& step_dir, int rank, int64_t step, ShardWriterOptions opt = {});
  // As ShardWriter::add, written now.
  void add(const std::string& tensor, const std::vector<int64_t>& shape, const Box& box, ConstTypedPtr data);
  // fsync and rename; returns the record for write_manifest.
  ShardFileRecord commit();

 private:
  ShardWriterOptions opt_;
  AtomicFileWriter file_;
  ShardFileRecord record_;
};

}  // namespace ff
