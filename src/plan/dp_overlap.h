#pragma once
// How much of a step's data-parallel communication the step waits for. The link carries the
// segments' collectives one after another, in the order the engine issues them, each no earlier
// than the compute that makes it possible; what the link finishes after the compute ends is the
// exposed part. Segments are the layout's (embedding, blocks, head: model/parameters.h).
#include <vector>

namespace ff {

struct SegmentComm {
  double share = 0;  // of the rank's compute (forward and backward alike); the embedding's is ~0
  double all_reduce = 0, all_gather = 0, reduce_scatter = 0;  // seconds each takes on the link
  double bytes = 0;  // the buffer they were costed for
};

// DDP: backward makes the segments' gradients in reverse order, each at the end of its share of
// `backward`, and each gradient's all-reduce queues on the link then. The embedding's, made last,
// always waits; a large head's, made first, hides behind the blocks.
double ddp_exposed(const std::vector<SegmentComm>& segments, double backward);

// ZeRO-3 (gather_params) and ZeRO-2/3 (reduce_grads), one micro-batch: each segment's parameters
// are gathered one segment ahead of the compute that needs them (the gather pool's prefetch),
// forward in order and backward in reverse, and backward reduce-scatters each segment's gradient
// as soon as it is made. Without gathers only the reduce-scatters queue.
double zero_exposed(const std::vector<SegmentComm>& segments, double forward, double backward, bool gather_params,
                    bool reduce_grads);

}  // namespace ff
