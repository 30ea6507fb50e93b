#pragma once
// Training metrics as JSON Lines: one object per line, flushed at once, so a crashed run still
// leaves every record it produced and `tail -f` or pandas.read_json(lines=True) read it live.
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

namespace ff {

class MetricsWriter {
 public:
  // append = true continues the file of a resumed run; false starts it afresh.
  explicit MetricsWriter(const std::string& path, bool append);
  void write(const nlohmann::json& record);
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::ofstream out_;
};

}  // namespace ff
