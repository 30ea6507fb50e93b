#include "ckpt/sharded_manifest.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <filesystem>
#include <map>
#include <stdexcept>

#include "io/atomic_file.h"
#include "io/byte_fields.h"
#include "io/checksum.h"
#include "io/file_reader.h"

namespace ff {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr const char* kFormat = "fivefold sharded checkpoint";
constexpr int kVersion = 1;
constexpr char kShardMagic[8] = {'F', 'F', 'S', 'H', 'A', 'R', 'D', 'S'};
// The manifest file is exactly kPrefix + 16 hex digits + kMiddle + BODY + kSuffix.
constexpr std::string_view kPrefix = "{\"checksum64\": \"";
constexpr std::string_view kMiddle = "\", \"manifest\": ";
constexpr std::string_view kSuffix = "}\n";

std::string hex64(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016" PRIx64, v);
  return buf;
}

uint64_t parse_hex64(const std::string& s) {
  if (s.size() != 16 || s.find_first_not_of("0123456789abcdef") != std::string::npos)
    throw std::invalid_argument("\"" + s + "\" is not a 16-digit hex checksum");
  return std::stoull(s, nullptr, 16);
}

DType parse_dtype(const std::string& s) {
  for (DType t : {DType::f32, DType::bf16, DType::f16})
    if (s == dtype_name(t)) return t;
  throw std::invalid_argument("unknown dtype \"" + s + "\" (expected f32, bf16 or f16)");
}

json piece_to_json(const PieceRecord& p) {
  json sums = json::array();
  for (uint64_t c : p.checksums) sums.push_back(hex64(c));
  return {{"tensor", p.tensor},   {"shape", p.shape},
          {"box", {p.box.r0, p.box.r1, p.box.c0, p.box.c1}},
          {"dtype", dtype_name(p.dtype)}, {"offset", p.offset}, {"bytes", p.bytes},
          {"checksums", std::move(sums)}};
}

PieceRecord piece_from_json(const json& j) {
  PieceRecord p;
  p.tensor = j.at("tensor").get<std::string>();
  p.shape = j.at("shape").get<std::vector<int64_t>>();
  const auto b = j.at("box").get<std::vector<int64_t>>();
  if (b.size() != 4) throw std::invalid_argument("a piece's box must be [r0, r1, c0, c1]");
  p.box = {b[0], b[1], b[2], b[3]};
  p.dtype = parse_dtype(j.at("dtype").get<std::string>());
  p.offset = j.at("offset").get<uint64_t>();
  p.bytes = j.at("bytes").get<uint64_t>();
  for (const auto& c : j.at("checksums")) p.checksums.push_back(parse_hex64(c.get<std::string>()));
  return p;
}

json file_to_json(const ShardFileRecord& r) {
  json pieces = json::array();
  for (const auto& p : r.pieces) pieces.push_back(piece_to_json(p));
  return {{"file", r.file},
          {"rank", r.rank},
          {"bytes", r.bytes},
          {"block_bytes", r.block_bytes},
          {"pieces", std::move(pieces)}};
}

ShardFileRecord file_from_json(const json& j) {
  ShardFileRecord r;
  r.file = j.at("file").get<std::string>();
  r.rank = j.at("rank").get<int>();
  r.bytes = j.at("bytes").get<uint64_t>();
  r.block_bytes = j.at("block_bytes").get<uint64_t>();
  for (const auto& p : j.at("pieces")) r.pieces.push_back(piece_from_json(p));
  return r;
}

std::string piece_name(const ShardFileRecord& f, const PieceRecord& p) {
  return "piece " + describe(p.box) + " of \"" + p.tensor + "\" in " + f.file;
}

[[noreturn]] void refuse(const std::string& step_dir, const std::string& problem) {
  throw std::runtime_error("cannot write the manifest of " + step_dir + ": " + problem);
}

// One piece on its own: in its tensor, sized right, inside its file. Checked on write and again
// on read, so the reader may index blocks and bytes without further checks.
std::string piece_problem(const ShardFileRecord& f, const PieceRecord& p) {
  const std::string what = piece_name(f, p);
  if (f.block_bytes == 0 || f.block_bytes % 8 != 0) return f.file + " has a bad block_bytes";
  if (p.box.empty() || !contains(full_box(p.shape), p.box))
    return what + " is empty or outside the tensor " + describe(full_box(p.shape));
  if (p.bytes != uint64_t(p.box.numel()) * dtype_size(p.dtype) ||
      p.checksums.size() != (p.bytes + f.block_bytes - 1) / f.block_bytes)
    return what + " has a byte count or checksum count that does not match its box";
  if (p.offset < kShardHeaderBytes || p.offset + p.bytes > f.bytes)
    return what + " lies outside its data file (" + std::to_string(f.bytes) + " bytes)";
  return "";
}

struct Located {
  const ShardFileRecord* file;
  const PieceRecord* piece;
};

// Within one tensor: one shape and dtype, no overlap, full coverage. A sweep over pieces sorted
// by first row compares a piece only with those still spanning its first row, so the cost is
// near linear for the layouts in use (few pieces share a row) rather than all pairs.
void check_tensor(const std::string& step_dir, std::vector<Located> ps) {
  const PieceRecord& first = *ps.front().piece;
  for (const auto& l : ps) {
    if (l.piece->shape != first.shape || l.piece->dtype != first.dtype)
      refuse(step_dir, piece_name(*l.file, *l.piece) + " disagrees with " +
                           piece_name(*ps.front().file, first) + " on the tensor's shape or dtype");
  }
  std::sort(ps.begin(), ps.end(), [](const Located& a, const Located& b) {
    return a.piece->box.r0 < b.piece->box.r0;
  });
  std::vector<Located> active;
  int64_t covered = 0;
  for (const auto& l : ps) {
    std::erase_if(active, [&](const Located& a) { return a.piece->box.r1 <= l.piece->box.r0; });
    for (const auto& a : active) {
      if (!intersect(a.piece->box, l.piece->box).empty())
        refuse(step_dir, piece_name(*l.file, *l.piece) + " overlaps " +
                             piece_name(*a.file, *a.piece) +
                             "; each element must be saved by exactly one rank (save one replica)");
    }
    active.push_back(l);
    covered += l.piece->box.numel();
  }
  const Box full = full_box(first.shape);
  if (covered != full.numel()) {  // no overlaps, so the areas add up
    std::vector<Box> boxes;
    for (const auto& l : ps) boxes.push_back(l.piece->box);
    refuse(step_dir, "tensor \"" + first.tensor + "\" is covered by " + std::to_string(covered) +
                         " of its " + std::to_string(full.numel()) + " elements (" +
                         describe(uncovered(full, boxes).front()) +
                         " is missing); some rank did not add its pieces");
  }
}

}  // namespace

std::string encode_shard_record(const ShardFileRecord& r) { return file_to_json(r).dump(); }

ShardFileRecord decode_shard_record(const std::string& text) {
  try {
    return file_from_json(json::parse(text));
  } catch (const std::exception& e) {
    throw std::runtime_error(std::string("malformed shard record: ") + e.what() +
                             "; pass write()'s result through encode_shard_record unchanged");
  }
}

void write_manifest(const std::string& step_dir, const CheckpointInfo& info,
                    std::vector<ShardFileRecord> files) {
  std::sort(files.begin(), files.end(),
            [](const auto& a, const auto& b) { return a.rank < b.rank; });
  std::map<std::string, std::vector<Located>> tensors;
  for (size_t i = 0; i < files.size(); ++i) {
    const auto& f = files[i];
    if (i > 0 && files[i - 1].rank == f.rank)
      refuse(step_dir, "rank " + std::to_string(f.rank) + " is listed twice; gather one record per rank");
    std::error_code ec;
    const auto size = fs::file_size(fs::path(step_dir) / f.file, ec);
    if (ec || size != f.bytes)
      refuse(step_dir, "data file " + f.file + (ec ? " is missing" : " has the wrong size") +
                           "; write the manifest only after every rank's write() returned");
    for (const auto& p : f.pieces) {
      const std::string bad = piece_problem(f, p);
      if (!bad.empty()) refuse(step_dir, bad + "; fix the caller's slicing");
      tensors[p.tensor].push_back({&f, &p});
    }
  }
  for (auto& [name, ps] : tensors) check_tensor(step_dir, std::move(ps));

  json body = {{"format", kFormat},        {"version", kVersion},     {"step", info.step},
               {"config", info.config},    {"layout", info.layout},   {"state", info.state},
               {"files", json::array()}};
  for (const auto& f : files) body["files"].push_back(file_to_json(f));
  const std::string text = body.dump();
  std::string out;
  out.reserve(text.size() + 64);
  out.append(kPrefix).append(hex64(checksum64(text.data(), text.size()))).append(kMiddle);
  out.append(text).append(kSuffix);
  write_file_atomic((fs::path(step_dir) / kManifestName).string(), out);
}

Manifest read_manifest(const std::string& step_dir) {
  FileReader f((fs::path(step_dir) / kManifestName).string(), "checkpoint manifest", kDamagedCheckpointFix,
               "the save that wrote " + step_dir + " did not finish, so the folder is not a "
               "checkpoint; use the previous complete one (`fivefold train` resumes from it by itself)");
  std::string raw(f.size(), '\0');
  f.read_at(0, raw.data(), raw.size());
  const size_t head = kPrefix.size() + 16 + kMiddle.size();
  if (raw.size() < head + kSuffix.size() || raw.compare(0, kPrefix.size(), kPrefix) != 0 ||
      raw.compare(kPrefix.size() + 16, kMiddle.size(), kMiddle) != 0 ||
      raw.compare(raw.size() - kSuffix.size(), kSuffix.size(), kSuffix) != 0)
    f.fail("damaged or not a fivefold manifest (its frame is wrong)");
  const std::string body = raw.substr(head, raw.size() - head - kSuffix.size());
  uint64_t want = 0;
  try {
    want = parse_hex64(raw.substr(kPrefix.size(), 16));
  } catch (const std::exception&) {
    f.fail("damaged (its checksum field is not hex)");
  }
  if (checksum64(body.data(), body.size()) != want) f.fail("damaged (checksum mismatch)");
  Manifest m;
  try {
    const json j = json::parse(body);
    if (j.at("format") != kFormat) f.fail("not a fivefold sharded checkpoint manifest");
    if (j.at("version") != kVersion)
      f.fail("format version " + j.at("version").dump() + ", this build reads version " +
             std::to_string(kVersion) + "; load it with the fivefold version that wrote it");
    m.info = {j.at("step").get<int64_t>(), j.at("config"), j.at("layout"), j.at("state")};
    for (const auto& fj : j.at("files")) m.files.push_back(file_from_json(fj));
    for (const auto& fr : m.files)
      for (const auto& p : fr.pieces)
        if (const std::string bad = piece_problem(fr, p); !bad.empty()) f.fail("malformed: " + bad);
  } catch (const std::runtime_error&) {
    throw;
  } catch (const std::exception& e) {
    f.fail(std::string("malformed: ") + e.what());
  }
  return m;
}

void encode_shard_header(unsigned char* dst, int rank, int64_t step, uint64_t block_bytes) {
  std::fill(dst, dst + kShardHeaderBytes, 0);
  std::copy(kShardMagic, kShardMagic + 8, dst);
  detail::put_field<uint32_t>(dst, 8, kVersion);
  detail::put_field<uint32_t>(dst, 12, uint32_t(rank));
  detail::put_field<int64_t>(dst, 16, step);
  detail::put_field<uint64_t>(dst, 24, block_bytes);
  detail::put_field<uint64_t>(dst, 56, checksum64(dst, 56));
}

std::string check_shard_header(const unsigned char* src, int rank, int64_t step) {
  if (!std::equal(kShardMagic, kShardMagic + 8, src)) return "not a fivefold shard (bad magic)";
  if (detail::get_field<uint64_t>(src, 56) != checksum64(src, 56))
    return "damaged header (checksum mismatch)";
  if (detail::get_field<uint32_t>(src, 8) != uint32_t(kVersion)) return "unknown shard version";
  if (detail::get_field<uint32_t>(src, 12) != uint32_t(rank) ||
      detail::get_field<int64_t>(src, 16) != step)
    return "written by rank " + std::to_string(detail::get_field<uint32_t>(src, 12)) + " at step " +
           std::to_string(detail::get_field<int64_t>(src, 16)) + ", the manifest expects rank " +
           std::to_string(rank) + " at step " + std::to_string(step) + " (a file from another save)";
  return "";
}

}  // namespace ff
