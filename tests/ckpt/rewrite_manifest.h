#pragma once
// A manifest written by other code: step's manifest body edited and written back with a valid
// checksum, so a test sees what the reader trusts beyond the checksum (shared by the sharded
// checkpoint faults and the fuzz loops).
#include <cstdio>
#include <filesystem>
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "../io/io_test_util.h"
#include "ckpt/sharded_manifest.h"
#include "io/checksum.h"

namespace ff::testing {

inline void rewrite_manifest(const std::string& step, const std::function<void(nlohmann::json&)>& edit) {
  const std::string path = (std::filesystem::path(step) / kManifestName).string();
  const std::string raw = read_all(path);
  const std::string head = "{\"checksum64\": \"0000000000000000\", \"manifest\": ";
  auto body = nlohmann::json::parse(raw.substr(head.size(), raw.size() - head.size() - 2));
  edit(body);
  const std::string text = body.dump();
  char sum[17];
  std::snprintf(sum, sizeof(sum), "%016llx", (unsigned long long)checksum64(text.data(), text.size()));
  write_all(path, "{\"checksum64\": \"" + std::string(sum) + "\", \"manifest\": " + text + "}\n");
}

}  // namespace ff::testing
