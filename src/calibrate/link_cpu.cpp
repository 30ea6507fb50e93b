#include "calibrate/link_cpu.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "calibrate/wall_clock.h"
#include "comm/nodes.h"

namespace ff {

namespace {
using clock_type = std::chrono::steady_clock;

// Each round's exchanges last about this long: /proc/stat counts in ticks of 10 ms per CPU, so a
// window of tens of ticks of kernel work resolves it to a few percent.
constexpr double kWindowSeconds = 0.4;
constexpr int kRounds = 3;  // the median of three: one round a neighbour's burst spoils is dropped
}  // namespace

MachineCpu parse_proc_stat_cpu(const std::string& line, double ticks_per_second) {
  std::istringstream in(line);
  std::string label;
  double user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0;
  if (!(in >> label >> user >> nice >> system >> idle >> iowait >> irq >> softirq) || label != "cpu" ||
      !(ticks_per_second > 0))
    throw std::runtime_error("/proc/stat: the first line is not 'cpu user nice system idle iowait irq softirq ...': '" +
                             line + "'");
  return MachineCpu{(user + nice) / ticks_per_second, (system + irq + softirq) / ticks_per_second};
}

MachineCpu machine_cpu() {
  std::ifstream in("/proc/stat");
  std::string line;
  if (!std::getline(in, line)) return {};  // no /proc: nothing measured, nothing charged
  return parse_proc_stat_cpu(line, double(sysconf(_SC_CLK_TCK)));
}

std::vector<double> bytes_through_machine(const std::vector<double>& sent_by_rank,
                                          const std::vector<int64_t>& machine_of_rank) {
  std::map<int64_t, double> through;
  for (size_t r = 0; r < sent_by_rank.size(); ++r) through[machine_of_rank.at(r)] += 2 * sent_by_rank[r];
  std::vector<double> out(sent_by_rank.size());
  for (size_t r = 0; r < out.size(); ++r) out[r] = through[machine_of_rank[r]];
  return out;
}

namespace {

// kRounds windows of `reps` calls of `op`, each followed by an idle window as long (rank 0 sleeps
// while the others wait for it in a barrier, their waits asleep after a short spin: what the
// kernel does meanwhile is other work's, which the busy window holds as well).
LinkCpuWindows measure_windows(const Comm& world, const std::vector<int64_t>& machine_of_rank, bool reads, int reps,
                               const std::function<void()>& op) {
  LinkCpuWindows w;
  std::vector<double> per_byte;
  for (int round = 0; round < kRounds; ++round) {
    world.barrier();
    const MachineCpu a = machine_cpu();
    const uint64_t sent0 = cross_node_traffic().bytes;
    auto t0 = clock_type::now();
    for (int i = 0; i < reps; ++i) op();
    world.barrier();
    const double busy = seconds_since(t0);
    const MachineCpu b = machine_cpu();
    double sent = double(cross_node_traffic().bytes - sent0);
    t0 = clock_type::now();
    if (world.rank() == 0) std::this_thread::sleep_for(std::chrono::duration<double>(busy));
    world.barrier();
    const double scale = busy / seconds_since(t0);
    const MachineCpu c = machine_cpu();
    std::vector<double> sent_by_rank(size_t(world.size()));
    world.all_gather(&sent, sent_by_rank.data(), sent_by_rank.size());
    const double through = bytes_through_machine(sent_by_rank, machine_of_rank)[size_t(world.rank())];
    const double kernel = b.kernel - a.kernel, idle_kernel = (c.kernel - b.kernel) * scale;
    per_byte.push_back(through > 0 ? std::max(0.0, kernel - idle_kernel) / through : 0.0);
    w.seconds += busy, w.bytes += through, w.kernel += kernel, w.idle_kernel += idle_kernel;
    w.user += b.user - a.user, w.idle_user += (c.user - b.user) * scale;
  }
  std::sort(per_byte.begin(), per_byte.end());
  double mine[2] = {reads ? per_byte[per_byte.size() / 2] : 0.0, reads ? 1.0 : 0.0};
  world.all_reduce(mine, 2);
  w.per_byte = mine[0] / mine[1];
  // The raw sums of rank 0's machine, for the file.
  double* fields[] = {&w.seconds, &w.bytes, &w.kernel, &w.user, &w.idle_kernel, &w.idle_user};
  double raw[std::size(fields)];
  for (size_t i = 0; i < std::size(fields); ++i) raw[i] = *fields[i];
  world.broadcast(raw, std::size(fields), 0);
  for (size_t i = 0; i < std::size(fields); ++i) *fields[i] = raw[i];
  return w;
}

}  // namespace

LinkCpu measure_link_cpu(const Comm& world, const std::vector<int64_t>& machine_of_rank) {
  const int me = world.rank();
  // The ranks at one place on every node all-reduce together (every such group at once, as dp
  // across nodes does beside tp inside them): one rank per node, so every byte crosses the link
  // and none goes through shared memory, whose copies can be the kernel's too (single-copy).
  const std::vector<int>& node_of = world_rank_nodes();
  const int place = int(std::count(node_of.begin(), node_of.begin() + me, node_of[size_t(me)]));
  const Comm across = world.split(place, me);
  // 4 MiB, a DDP bucket. Zeros: the sums stay finite however often they repeat.
  const size_t count = size_t(1) << 20;
  std::vector<float> buf(count, 0.0f);
  auto all_reduce = [&] { across.all_reduce(buf.data(), count); };
  // One reader per machine: its first rank.
  const auto first_here = std::find(machine_of_rank.begin(), machine_of_rank.end(), machine_of_rank[size_t(me)]);
  const bool reads = first_here - machine_of_rank.begin() == me;

  all_reduce();  // connections and buffers set up before anything is counted
  world.barrier();
  const auto t0 = clock_type::now();
  all_reduce();
  double one = seconds_since(t0);
  world.all_reduce(&one, 1, ReduceOp::max);
  const int reps = int(std::clamp(std::ceil(kWindowSeconds / std::max(one, 1e-6)), 1.0, 1000.0));
  LinkCpu r;
  r.blocking = measure_windows(world, machine_of_rank, reads, reps, all_reduce);
  // The caller asleep for as long as the all-reduce took blocked, standing in for the compute a
  // bucket's all-reduce hides behind: the comm thread moves the bytes (its polls back off to 1 ms
  // sleeps between progress, comm/engine.h).
  r.behind = measure_windows(world, machine_of_rank, reads, reps, [&] {
    CommRequest pending = across.all_reduce_async(buf.data(), count);
    std::this_thread::sleep_for(std::chrono::duration<double>(one));
    pending.wait();
  });
  return r;
}

}  // namespace ff
