#include "ckpt/safetensors.h"

#include <algorithm>
#include <cstring>
#include <set>
#include <stdexcept>

#include "io/atomic_file.h"
#include "io/file_reader.h"

namespace ff {

namespace {

const char* const kFix = "re-export the weights from their checkpoint";
// The reference implementation's limit; a larger length is damage, not a header worth allocating.
constexpr uint64_t kMaxHeaderBytes = 100ull << 20;

// 0 for dtypes this writer does not produce.
size_t element_bytes(const std::string& dtype) {
  if (dtype == "F32" || dtype == "I32") return 4;
  if (dtype == "BF16" || dtype == "F16") return 2;
  if (dtype == "I64") return 8;
  return 0;
}

// -1 when a dimension is negative or the product overflows.
int64_t element_count(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0 || (d > 0 && n > INT64_MAX / d)) return -1;
    n *= d;
  }
  return n;
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

}  // namespace

void write_safetensors(const std::string& path, const std::vector<SafeTensor>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  // ordered_json keeps __metadata__ first and tensors in data order, which eases inspection.
  nlohmann::ordered_json header;
  header["__metadata__"] = nlohmann::ordered_json::object();
  for (const auto& [k, v] : metadata) header["__metadata__"][k] = v;
  std::set<std::string> seen;
  uint64_t offset = 0;
  for (const auto& t : tensors) {
    const std::string where = "write_safetensors(" + path + "): tensor \"" + t.name + "\" ";
    if (t.name.empty() || t.name == "__metadata__" || !seen.insert(t.name).second) {
      throw std::runtime_error(where +
                               "has an empty, reserved or duplicate name; give every "
                               "tensor a unique name other than __metadata__");
    }
    const size_t eb = element_bytes(t.dtype);
    if (eb == 0) {
      throw std::runtime_error(where + "has dtype \"" + t.dtype +
                               "\"; use F32 or BF16 (F16, I32, I64 are also accepted)");
    }
    const int64_t n = element_count(t.shape);
    if (n < 0 || uint64_t(n) * eb != t.bytes) {
      throw std::runtime_error(where + "has shape " + shape_text(t.shape) + " of " + t.dtype +
                               ", which needs " + (n < 0 ? "an invalid" : std::to_string(n * eb)) +
                               " bytes, but " + std::to_string(t.bytes) +
                               " were given; pass the buffer that matches the shape");
    }
    if (t.bytes > 0 && t.data == nullptr) {
      throw std::runtime_error(where + "has no data pointer; pass the tensor's buffer");
    }
    header[t.name] = {
        {"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {offset, offset + t.bytes}}};
    offset += t.bytes;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  const uint64_t n = text.size();

  AtomicFileWriter w(path);
  w.write(&n, 8);
  w.write(text.data(), text.size());
  for (const auto& t : tensors) w.write(t.data, t.bytes);
  w.commit();
}

namespace {

struct Parsed {
  nlohmann::json header;
  uint64_t data_start;
};

Parsed parse(const std::string& path) {
  FileReader f(path, "safetensors file", kFix);
  if (f.size() < 8) f.fail("truncated: shorter than the 8-byte header length");
  uint64_t n = 0;
  f.read_at(0, &n, 8);
  if (n > kMaxHeaderBytes) {
    f.fail("not a safetensors file: header length " + std::to_string(n) +
           " exceeds the format's 100 MiB limit");
  }
  if (n > f.size() - 8) {
    f.fail("not a safetensors file or truncated: header length " + std::to_string(n) +
           " exceeds the file size " + std::to_string(f.size()));
  }
  std::string text(n, '\0');
  f.read_at(8, text.data(), n);
  Parsed p{nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false), 8 + n};
  if (!p.header.is_object()) f.fail("not a safetensors file (the header is not a JSON object)");
  const uint64_t data_bytes = f.size() - p.data_start;
  struct Span {
    uint64_t begin, end;
    std::string name;
  };
  std::vector<Span> spans;
  for (const auto& [name, t] : p.header.items()) {
    if (name == "__metadata__") {
      if (!t.is_object()) f.fail("__metadata__ is " + std::string(t.type_name()) + ", not an object");
      for (const auto& [key, value] : t.items()) {
        if (!value.is_string()) f.fail("__metadata__ entry \"" + key + "\" is not a string");
      }
      continue;
    }
    if (!t.is_object() || !t.contains("dtype") || !t.contains("shape") ||
        !t.contains("data_offsets") || !t["dtype"].is_string() || !t["shape"].is_array() ||
        !t["data_offsets"].is_array() || t["data_offsets"].size() != 2) {
      f.fail("tensor \"" + name + "\" lacks dtype, shape or data_offsets");
    }
    const auto& off = t["data_offsets"];
    if (!off[0].is_number_unsigned() || !off[1].is_number_unsigned()) {
      f.fail("tensor \"" + name + "\" has non-integer data_offsets");
    }
    const uint64_t begin = off[0].get<uint64_t>(), end = off[1].get<uint64_t>();
    if (begin > end || end > data_bytes) {
      f.fail("truncated: tensor \"" + name + "\" spans [" + std::to_string(begin) + ", " +
             std::to_string(end) + ") but only " + std::to_string(data_bytes) +
             " data bytes exist");
    }
    std::vector<int64_t> shape;
    for (const auto& d : t["shape"]) {
      if (!d.is_number_integer()) f.fail("tensor \"" + name + "\" has a non-integer shape");
      shape.push_back(d.get<int64_t>());
    }
    const std::string dtype = t["dtype"].get<std::string>();
    const size_t eb = element_bytes(dtype);
    if (eb == 0) {
      f.fail("tensor \"" + name + "\" has dtype \"" + dtype + "\", which this reader does not know "
             "(F32, BF16, F16, I32, I64)");
    }
    const int64_t count = element_count(shape);
    // Divide rather than multiply: 2^62 elements of 4 bytes would wrap to 0 bytes.
    const uint64_t bytes = end - begin;
    if (count < 0 || bytes % eb != 0 || uint64_t(count) != bytes / eb) {
      f.fail("tensor \"" + name + "\" has shape " + shape_text(shape) + " of " + dtype + " but " +
             std::to_string(bytes) + " data bytes");
    }
    spans.push_back({begin, end, name});
  }
  // The tensors must tile the data region exactly: an overlap lets two tensors alias, a gap or
  // trailing bytes is data nobody accounts for.
  std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  uint64_t covered = 0;
  for (const auto& s : spans) {
    if (s.begin < covered) {
      f.fail("tensor \"" + s.name + "\" at [" + std::to_string(s.begin) + ", " + std::to_string(s.end) +
             ") overlaps the tensor before it, which ends at " + std::to_string(covered));
    }
    if (s.begin > covered) {
      f.fail("the data bytes [" + std::to_string(covered) + ", " + std::to_string(s.begin) +
             ") belong to no tensor");
    }
    covered = s.end;
  }
  if (covered != data_bytes) {
    f.fail(std::to_string(data_bytes - covered) + " trailing bytes after the last tensor (data ends at " +
           std::to_string(covered) + ")");
  }
  return p;
}

}  // namespace

nlohmann::json read_safetensors_header(const std::string& path) { return parse(path).header; }

uint64_t safetensors_data_start(const std::string& path) { return parse(path).data_start; }

}  // namespace ff
