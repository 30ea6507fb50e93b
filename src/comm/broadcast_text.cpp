#include "comm/broadcast_text.h"

#include <cstdint>

#include "comm/comm.h"

namespace ff {

std::string broadcast_text(const Comm& group, std::string text, int root) {
  int64_t n = int64_t(text.size());
  group.broadcast(&n, 1, root);
  text.resize(size_t(n));
  group.broadcast(reinterpret_cast<uint8_t*>(text.data()), size_t(n), root);
  return text;
}

}  // namespace ff
