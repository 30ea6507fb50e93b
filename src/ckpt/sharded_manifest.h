#pragma once
// A sharded checkpoint (principle 16, docs/principles.md; the idea of PyTorch DCP and Megatron
// dist-ckpt) is a folder step_N/ holding one data file per rank (rank_00003.bin: that rank's
// pieces) and manifest.json, written last by one rank from every rank's ShardFileRecord. The
// manifest says where every piece of every tensor lives, so any layout can load any other by
// intersecting boxes.
//
// manifest.json is plain JSON: {"checksum64": "<16 hex>", "manifest": BODY}, the checksum taken
// over BODY's exact bytes, so a flipped byte anywhere is caught even where the JSON still parses.
// BODY = {"format", "version", "step", "config", "layout", "state",
//         "files": [{"file", "rank", "bytes", "block_bytes",
//                    "pieces": [{"tensor", "shape", "box": [r0, r1, c0, c1], "dtype",
//                                "offset", "bytes", "checksums": ["<16 hex>", ...]}]}]}
// config, layout and state are the caller's (model config, the layout it was saved under; data
// position, RNG, optimizer schedule), kept opaque here.
//
// A piece is checksummed in blocks of block_bytes (1 MiB by default) rather than as a whole, so a
// rank that needs only part of a large piece (a ZeRO chunk of a whole tensor) reads and verifies
// just the blocks it touches, and a staging buffer of a few blocks suffices for any piece size.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ckpt/sharded_box.h"
#include "core/dtype.h"

namespace ff {

struct PieceRecord {
  std::string tensor;
  std::vector<int64_t> shape;  // the whole tensor's shape
  Box box;                     // the region this piece holds, stored row-major
  DType dtype = DType::f32;
  uint64_t offset = 0;  // in the data file
  uint64_t bytes = 0;   // box.numel() * dtype_size(dtype)
  std::vector<uint64_t> checksums;  // checksum64 of each block_bytes block, the last one short
};

// What one rank's write produced: all the manifest needs from that rank.
struct ShardFileRecord {
  std::string file;  // name inside the step folder
  int rank = 0;
  uint64_t bytes = 0;  // the data file's size
  uint64_t block_bytes = 0;
  std::vector<PieceRecord> pieces;
};

// Compact text of a record, so the caller gathers every rank's metadata with one gather of
// strings (saver.h does; the format itself never communicates), and back.
std::string encode_shard_record(const ShardFileRecord& r);
ShardFileRecord decode_shard_record(const std::string& text);

struct CheckpointInfo {
  int64_t step = 0;
  nlohmann::json config = nlohmann::json::object();  // the model: compared on load
  nlohmann::json layout = nlohmann::json::object();  // the mesh it was saved under: informational
  nlohmann::json state = nlohmann::json::object();   // data position, RNG, schedule
};

struct Manifest {
  CheckpointInfo info;
  std::vector<ShardFileRecord> files;  // in rank order
};

constexpr const char* kManifestName = "manifest.json";
// What to do about a damaged checkpoint, ending every such error.
constexpr const char* kDamagedCheckpointFix =
    "the checkpoint is damaged: restore the folder from a copy, or use an earlier one (`fivefold "
    "train` resumes from the previous complete checkpoint by itself; sample, eval and export take "
    "an earlier step_N folder)";

// Checks that the records describe one consistent checkpoint (each tensor has one shape and
// dtype, no two pieces overlap, every tensor is covered whole, ranks are distinct, each data
// file exists at its recorded size), then writes step_dir/manifest.json atomically. Call it
// after every rank's write() has returned; what a crash leaves before this is ignored.
void write_manifest(const std::string& step_dir, const CheckpointInfo& info,
                    std::vector<ShardFileRecord> files);
// Reads and verifies (checksum, format, version) step_dir/manifest.json.
Manifest read_manifest(const std::string& step_dir);

// The data file header: 64 bytes, pieces follow at 64-byte aligned offsets.
//   0 char[8] "FFSHARDS"  8 u32 version  12 u32 rank  16 i64 step  24 u64 block_bytes
//   32..56 zero  56 u64 checksum64 of bytes [0, 56)
constexpr uint64_t kShardHeaderBytes = 64;
void encode_shard_header(unsigned char* dst, int rank, int64_t step, uint64_t block_bytes);
// Empty when the header is valid and matches rank and step; otherwise what is wrong.
std::string check_shard_header(const unsigned char* src, int rank, int64_t step);

}  // namespace ff
