#pragma once
// Export in the safetensors format (https://huggingface.co/docs/safetensors), so trained weights
// load in PyTorch / Hugging Face tools without any fivefold code:
//   u64 little-endian N, then N bytes of JSON (padded with spaces to a multiple of 8):
//   {"__metadata__": {str: str}, "<name>": {"dtype", "shape", "data_offsets": [begin, end]}, ...}
//   then the tensors back to back, offsets relative to the first byte after the header.
#include <cstddef>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace ff {

struct SafeTensor {
  std::string name;
  std::string dtype;  // "F32" or "BF16" (also "F16", "I32", "I64")
  std::vector<int64_t> shape;
  const void* data;
  size_t bytes;  // must equal product(shape) * element size
};

// Atomic (path.tmp, fsync, rename). Tensors are stored in the given order.
void write_safetensors(const std::string& path, const std::vector<SafeTensor>& tensors,
                       const std::map<std::string, std::string>& metadata);

// The parsed JSON header, after checking that it is well formed and that every tensor's
// data_offsets fit the file and match its dtype and shape.
nlohmann::json read_safetensors_header(const std::string& path);
// Where tensor data begins: 8 + the header length.
uint64_t safetensors_data_start(const std::string& path);

}  // namespace ff
