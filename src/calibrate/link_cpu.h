#pragma once
// The CPU a machine's kernel spends on the bytes its ranks send to and receive from other nodes
// (TCP, the NIC's or veth's driver, the qdisc, softirq), which the planner charges to the cores
// those ranks compute on (plan/cost_rates.h: LinkClass::cpu_seconds_per_byte). Measured machine
// wide from /proc/stat, by one rank per machine (a kernel: calibrate/shared_cores.h), while every
// rank exchanges large messages with every rank of the other nodes; less the same counters over
// an idle window as long, in which the ranks wait without traffic (other work on the machine).
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

// Per rank, the bytes through its machine's kernel when every rank sends `bytes_per_peer` to each
// rank on another node and receives as much from each: the sent plus the received bytes of all
// ranks on that machine (two namespaced nodes on one machine pay for both ends of each byte).
std::vector<double> exchange_bytes_by_machine(const std::vector<int>& node_of_rank,
                                              const std::vector<int64_t>& machine_of_rank, double bytes_per_peer);

struct LinkCpu {
  double cpu_seconds_per_byte = 0;  // the machines' mean of each one's median over rounds
  // Rank 0's machine over all rounds, for [measured]: the exchanges' wall seconds and bytes
  // through it, its kernel and user CPU meanwhile, and the idle windows' scaled to as long.
  double seconds = 0, bytes = 0, kernel = 0, user = 0, idle_kernel = 0, idle_user = 0;
};

// Collective over `world` (ranks on two or more nodes); machine_of_rank: machine_keys(world).
LinkCpu measure_link_cpu(const Comm& world, const std::vector<int64_t>& machine_of_rank);

}  // namespace ff
