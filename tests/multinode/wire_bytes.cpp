// The Comm counters' cross-node bytes against what the link between nodes really carried, run
// across namespaced nodes (on_nodes.sh):
//   wire_bytes DP ZERO TP PP
// Every rank trains `tiny` in the given layout; after two warm-up steps (TCP connections made,
// every group created) the ranks train 10 more steps between two barriers. Around that window
// the first rank of each node reads its veth's counters from /proc/net/dev (the node's own network
// namespace) and every rank reads the bytes it counted to other nodes (cross_node_traffic).
//
// What the veth counts beyond the counted payload:
//  - per packet, Ethernet + IPv4 + TCP headers: 14 + 20 + 20 bytes, +12 with TCP timestamps (on
//    by default; read from this namespace's sysctl). A GSO super-packet is one packet with one set
//    of headers, so payload = tx_bytes - headers * tx_packets holds whatever the segmentation;
//    pure ACKs come out as 0.
//  - per MPI message, Open MPI's headers (TCP BTL fragment header, ob1 match or rendezvous header
//    and the rendezvous's ACK/FIN), and the barriers' few bytes: not subtracted. The program
//    prints them per counted message, to show they are a residual, not a fudge.
// Passes when every node's TCP payload is within 5% of the bytes its ranks counted, the traffic
// is large enough to mean something (> 256 KiB per node), and, when every node holds a multiple of
// tp ranks, the tp group counted no cross-node byte and the mesh gave no warning.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "comm/comm.h"
#include "comm/comm_world.h"
#include "comm/mesh.h"
#include "comm/nodes.h"
#include "shared_data.h"
#include "train/trainer.h"
#include "train_fixtures.h"

using namespace ff;

namespace {

constexpr const char* kLinkDevice = "ffnet";  // the harness's veth in every node (netns_nodes.sh)

struct LinkCounters {
  int64_t tx_bytes = -1, tx_packets = -1;
};

// /proc/net/dev follows this process's network namespace: the node's own veth.
LinkCounters read_link(const std::string& device) {
  std::ifstream in("/proc/net/dev");
  std::string line;
  while (std::getline(in, line)) {
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string name = line.substr(0, colon);
    name.erase(0, name.find_first_not_of(' '));
    if (name != device) continue;
    std::istringstream fields(line.substr(colon + 1));
    int64_t v[10];
    for (int64_t& x : v) fields >> x;  // rx: bytes packets errs drop fifo frame compressed multicast; tx: bytes packets
    return {v[8], v[9]};
  }
  return {};
}

// Link-layer, IP and TCP header bytes of one packet in this namespace.
int header_bytes_per_packet() {
  std::ifstream in("/proc/sys/net/ipv4/tcp_timestamps");
  int timestamps = 1;
  in >> timestamps;
  return 14 + 20 + 20 + (timestamps ? 12 : 0);
}

TrainConfig layout_config(const std::string& data, int dp, int zero, int tp, int pp) {
  TrainConfig c = testkit::tiny_config(data);
  c.steps = 12;
  c.dp = dp, c.zero = zero, c.tp = tp, c.pp = pp;
  if (pp > 1) {  // as pp_equivalence: every stage holds blocks, 2 x PP micro-batches per step
    c.model.n_layers = 4 * pp / 2;
    c.micro_batch = 2;
    c.grad_accum = 2 * pp;
  } else {
    c.micro_batch = 4;
  }
  return c;
}

}  // namespace

int main(int argc, char** argv) {
  CommSession session(&argc, &argv);
  const Comm& world = comm_world();
  if (argc != 5) return std::fprintf(stderr, "usage: wire_bytes DP ZERO TP PP\n"), 2;
  const int dp = std::atoi(argv[1]), zero = std::atoi(argv[2]), tp = std::atoi(argv[3]), pp = std::atoi(argv[4]);
  const Mesh mesh(world, MeshDegrees{.dp = dp, .tp = tp, .pp = pp});
  const std::string data = testkit::shared_tiny_data_dir(world);
  Trainer t(layout_config(data, dp, zero, tp, pp), testkit::temp_dir("wire"), &mesh);
  t.quiet = true;

  const std::vector<int>& nodes = world_rank_nodes();
  const int node = nodes[size_t(world.rank())], n_nodes = node_count();
  bool node_leader = true;  // the first rank of its node reads the node's veth
  for (int r = 0; r < world.rank(); ++r) node_leader = node_leader && nodes[size_t(r)] != node;
  if (n_nodes < 2) {
    if (world.rank() == 0) std::printf("FAIL: all ranks on one node; run under on_nodes.sh\n");
    return 1;
  }

  const int warmup = 2, steps = 10;
  for (int i = 0; i < warmup; ++i) t.train_step();
  const Comm& tp_group = mesh.group(MeshGroup::tp);
  tp_group.reset_stats();
  auto settle = [&] {
    world.barrier();
    usleep(200 * 1000);  // the last ACKs of what came before leave the link
  };
  settle();
  const LinkCounters link0 = node_leader ? read_link(kLinkDevice) : LinkCounters{};
  const CrossNodeTraffic counted0 = cross_node_traffic();
  world.barrier();
  for (int i = 0; i < steps; ++i) t.train_step();
  settle();
  const LinkCounters link1 = node_leader ? read_link(kLinkDevice) : LinkCounters{};
  const CrossNodeTraffic counted1 = cross_node_traffic();
  const uint64_t tp_cross = tp_group.stats().cross_node_bytes;

  // Per node: veth tx bytes, tx packets, readable (1/0), counted bytes, counted messages.
  std::vector<int64_t> per_node(size_t(5 * n_nodes), 0);
  int64_t* mine = &per_node[size_t(5 * node)];
  if (node_leader) {
    mine[0] = link1.tx_bytes - link0.tx_bytes;
    mine[1] = link1.tx_packets - link0.tx_packets;
    mine[2] = link0.tx_bytes >= 0 && link1.tx_bytes >= 0;
  }
  mine[3] = int64_t(counted1.bytes - counted0.bytes);
  mine[4] = int64_t(counted1.messages - counted0.messages);
  world.all_reduce(per_node.data(), per_node.size());
  int64_t tp_cross_all = int64_t(tp_cross);
  world.all_reduce(&tp_cross_all, 1);

  int failures = 0;
  if (world.rank() == 0) {
    const int header = header_bytes_per_packet();
    for (int k = 0; k < n_nodes; ++k) {
      const int64_t* v = &per_node[size_t(5 * k)];
      if (!v[2]) {
        std::printf("node %d: no device %s in /proc/net/dev: run under tests/multinode/on_nodes.sh\n", k, kLinkDevice);
        ++failures;
        continue;
      }
      const double payload = double(v[0] - header * v[1]), counted = double(v[3]);
      const double rel = std::fabs(payload - counted) / counted;
      const bool ok = counted > 256 * 1024 && rel <= 0.05;
      std::printf("dp=%d zero=%d tp=%d pp=%d node %d, %d steps: veth tx %lld B in %lld packets, TCP payload "
                  "%.0f B (%d B headers/packet); Comm counted %.0f B in %lld messages to other nodes; "
                  "difference %.2f%% (tol 5%%), %.1f B per message (MPI headers): %s\n",
                  dp, zero, tp, pp, k, steps, (long long)v[0], (long long)v[1], payload, header, counted,
                  (long long)v[4], 100 * rel, (payload - counted) / double(std::max<int64_t>(v[4], 1)),
                  ok ? "ok" : "FAIL");
      failures += !ok;
    }
    // Whether tp can fit inside the nodes, from the launcher's placement alone: then the mesh must
    // keep it there (however mpirun dealt the ranks out) and say nothing.
    bool tp_fits = true;
    for (int k = 0; k < n_nodes; ++k)
      tp_fits = tp_fits && std::count(nodes.begin(), nodes.end(), k) % tp == 0;
    if (tp_fits && (tp_cross_all != 0 || !mesh.node_warning().empty())) {
      std::printf("FAIL: tp %d fits inside nodes, but the tp group sent %lld B across nodes (warning: '%s')\n", tp,
                  (long long)tp_cross_all, mesh.node_warning().c_str());
      ++failures;
    }
  }
  world.all_reduce(&failures, 1);
  return failures == 0 ? 0 : 1;
}
