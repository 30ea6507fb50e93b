#include "train/slurm_tasks.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <system_error>

namespace ff {

int slurm_tasks_on_node(std::string_view per_node, int node) {
  if (node < 0) return 0;
  int first = 0;  // the first node the current entry covers
  while (!per_node.empty()) {
    const size_t comma = per_node.find(',');
    const std::string_view entry = per_node.substr(0, comma);
    per_node = comma == std::string_view::npos ? std::string_view() : per_node.substr(comma + 1);
    const char* const end = entry.data() + entry.size();
    int tasks = 0, repeat = 1;
    const auto [after_tasks, ec] = std::from_chars(entry.data(), end, tasks);
    if (ec != std::errc() || tasks <= 0) return 0;
    if (after_tasks != end) {  // "(xK)"
      if (end - after_tasks < 4 || after_tasks[0] != '(' || after_tasks[1] != 'x' || end[-1] != ')') return 0;
      const auto [after_repeat, ec_repeat] = std::from_chars(after_tasks + 2, end - 1, repeat);
      if (ec_repeat != std::errc() || after_repeat != end - 1 || repeat <= 0) return 0;
    }
    if (node < first + repeat) return tasks;
    first += repeat;
  }
  return 0;
}

int slurm_tasks_on_this_node() {
  const char* per_node = std::getenv("SLURM_STEP_TASKS_PER_NODE");
  const char* node = std::getenv("SLURM_NODEID");
  if (per_node && node)
    if (const int n = slurm_tasks_on_node(per_node, std::atoi(node)); n > 0) return n;
  if (const char* v = std::getenv("SLURM_NTASKS_PER_NODE")) return std::max(0, std::atoi(v));
  return 0;
}

}  // namespace ff
