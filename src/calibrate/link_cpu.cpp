#include "calibrate/link_cpu.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "comm/nodes.h"

namespace ff {

namespace {
using clock_type = std::chrono::steady_clock;
double since(clock_type::time_point t0) { return std::chrono::duration<double>(clock_type::now() - t0).count(); }

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

std::vector<double> exchange_bytes_by_machine(const std::vector<int>& node_of_rank,
                                              const std::vector<int64_t>& machine_of_rank, double bytes_per_peer) {
  const size_t n = node_of_rank.size();
  std::map<int64_t, double> through;
  for (size_t r = 0; r < n; ++r) {
    const auto peers =
        std::count_if(node_of_rank.begin(), node_of_rank.end(), [&](int v) { return v != node_of_rank[r]; });
    through[machine_of_rank.at(r)] += 2 * double(peers) * bytes_per_peer;  // sent and received
  }
  std::vector<double> out(n);
  for (size_t r = 0; r < n; ++r) out[r] = through[machine_of_rank[r]];
  return out;
}

LinkCpu measure_link_cpu(const Comm& world, const std::vector<int64_t>& machine_of_rank) {
  const std::vector<int>& node_of = world_rank_nodes();
  const int n = world.size(), me = world.rank();
  const auto off_node = std::count_if(node_of.begin(), node_of.end(), [&](int v) { return v != node_of[size_t(me)]; });
  // 4 MiB to each peer (a DDP bucket's size), less with many peers: at most 32 MiB per rank each way.
  const size_t per_peer =
      std::clamp<size_t>((size_t(8) << 20) / size_t(std::max<long>(1, off_node)), size_t(1) << 16, size_t(1) << 20);
  std::vector<size_t> counts(size_t(n), 0);
  for (int r = 0; r < n; ++r)
    if (node_of[size_t(r)] != node_of[size_t(me)]) counts[size_t(r)] = per_peer;
  std::vector<float> in(per_peer * size_t(off_node), 1.0f), out(in.size());
  auto exchange = [&] { world.all_to_allv(in.data(), counts, out.data(), counts); };
  const double through = exchange_bytes_by_machine(node_of, machine_of_rank, 4.0 * double(per_peer))[size_t(me)];
  // One reader per machine: its first rank.
  const auto first_here = std::find(machine_of_rank.begin(), machine_of_rank.end(), machine_of_rank[size_t(me)]);
  const bool reads = first_here - machine_of_rank.begin() == me;

  exchange();  // connections and buffers set up before anything is counted
  world.barrier();
  auto t0 = clock_type::now();
  exchange();
  double one = since(t0);
  world.all_reduce(&one, 1, ReduceOp::max);
  const int reps = int(std::clamp(std::ceil(kWindowSeconds / std::max(one, 1e-6)), 1.0, 1000.0));

  LinkCpu r;
  std::vector<double> per_byte;
  for (int round = 0; round < kRounds; ++round) {
    world.barrier();
    const MachineCpu a = machine_cpu();
    t0 = clock_type::now();
    for (int i = 0; i < reps; ++i) exchange();
    world.barrier();
    const double busy = since(t0);
    const MachineCpu b = machine_cpu();
    // As long again without traffic: rank 0 sleeps while the others wait for it in a barrier
    // (their waits sleep after a short spin, comm/engine.h); what the kernel does meanwhile is
    // other work's, which the exchanges' window holds as well.
    t0 = clock_type::now();
    if (me == 0) std::this_thread::sleep_for(std::chrono::duration<double>(busy));
    world.barrier();
    const double scale = busy / since(t0);
    const MachineCpu c = machine_cpu();
    const double kernel = b.kernel - a.kernel, idle_kernel = (c.kernel - b.kernel) * scale;
    per_byte.push_back(std::max(0.0, kernel - idle_kernel) / (through * reps));
    r.seconds += busy, r.bytes += through * reps, r.kernel += kernel, r.idle_kernel += idle_kernel;
    r.user += b.user - a.user, r.idle_user += (c.user - b.user) * scale;
  }
  std::sort(per_byte.begin(), per_byte.end());
  double mine[2] = {reads ? per_byte[per_byte.size() / 2] : 0.0, reads ? 1.0 : 0.0};
  world.all_reduce(mine, 2);
  r.cpu_seconds_per_byte = mine[0] / mine[1];
  // The raw sums of rank 0's machine, for the file.
  double* fields[] = {&r.seconds, &r.bytes, &r.kernel, &r.user, &r.idle_kernel, &r.idle_user};
  double raw[std::size(fields)];
  for (size_t i = 0; i < std::size(fields); ++i) raw[i] = *fields[i];
  world.broadcast(raw, std::size(fields), 0);
  for (size_t i = 0; i < std::size(fields); ++i) *fields[i] = raw[i];
  return r;
}

}  // namespace ff
