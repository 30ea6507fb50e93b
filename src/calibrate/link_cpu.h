#pragma once
// The CPU a machine's kernel spends on the bytes its ranks send to and receive from other nodes
// (TCP, the NIC's or veth's driver, the qdisc, softirq), which the planner charges to the cores
// those ranks compute on (plan/cost_rates.h: LinkClass::cpu_seconds_per_byte). Measured machine
// wide from /proc/stat, by one rank per machine (a kernel: calibrate/shared_cores.h), while the
// ranks at each place on the nodes all-reduce 4 MiB buffers as DDP's buckets do (its cross-node
// bytes counted by comm/nodes.h); less the same counters over an idle window as long,
// in which the ranks wait without traffic (other work on the machine). Twice: with the ranks
// blocked in the all-reduce (a waiting rank polls, comm/engine.h), and with the all-reduce left
// to the comm thread while the caller sleeps as compute would run (how the bytes the planner
// charges move: those the compute hides).
#include <cstdint>
#include <string>
#include <vector>

#include "comm/comm.h"

namespace ff {

// Machine-wide CPU seconds, summed over its CPUs: user (with nice; the ranks' busy-polling lands
// here) and kernel (system + irq + softirq).
struct MachineCpu {
  double user = 0, kernel = 0;
};
// From /proc/stat's first line ("cpu  user nice system idle iowait irq softirq ..."), in clock ticks.
MachineCpu parse_proc_stat_cpu(const std::string& line, double ticks_per_second);
MachineCpu machine_cpu();  // this machine now

// Per rank, the bytes through its machine's kernel in a symmetric collective (each rank receives
// from other nodes as much as it sends to them), given what every rank sent across: the sent and
// the received bytes of all ranks on that machine (two namespaced nodes on one machine pay for
// both ends of each byte).
std::vector<double> bytes_through_machine(const std::vector<double>& sent_by_rank,
                                          const std::vector<int64_t>& machine_of_rank);

// Rank 0's machine over all rounds of one way of waiting, for [measured]: the all-reduces' wall
// seconds and bytes through it, its kernel and user CPU meanwhile, and the idle windows' scaled to
// as long; per_byte: the machines' mean of each one's median over rounds.
struct LinkCpuWindows {
  double per_byte = 0, seconds = 0, bytes = 0, kernel = 0, user = 0, idle_kernel = 0, idle_user = 0;
};

struct LinkCpu {
  LinkCpuWindows blocking, behind;  // the ranks blocked in the all-reduce; the caller asleep
  double cpu_seconds_per_byte() const { return behind.per_byte; }
};

// Collective over `world` (ranks on two or more nodes); machine_of_rank: machine_keys(world).
LinkCpu measure_link_cpu(const Comm& world, const std::vector<int64_t>& machine_of_rank);

}  // namespace ff
