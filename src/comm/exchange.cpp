// Operations whose messages are all posted at once and finish together.
//   ExchangeOp: send, recv, all_to_all and all_to_allv. Buffers larger than MPI's int count are
//     cut into kMaxMessageBytes messages; both sides cut the same way, so the pieces match in
//     order (MPI never reorders messages between one pair of ranks with the same tag).
//   NbcOp: plain MPI nonblocking collectives (broadcast, barrier). They are not on the hot path
//     of training, so Open MPI's own algorithms serve; the engine's polling progresses them like
//     everything else.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "comm/comm_world.h"
#include "comm/op.h"

namespace ff::detail {
namespace {

constexpr uint64_t kRecvBit = uint64_t(1) << 63;

class ExchangeOp final : public Op {
 public:
  ExchangeOp(std::shared_ptr<CommState> comm, CommOpKind kind, CommType type, int tag,
             std::vector<Transfer> sends, std::vector<Transfer> recvs, std::string what);

  void start() override;
  bool progress() override;
  std::string describe() const override { return what_; }

 private:
  void on_done(uint64_t token, const MPI_Status& status, int error);

  CommType type_;
  MPI_Datatype dtype_;
  size_t es_;
  int tag_;
  std::vector<Transfer> sends_, recvs_;
  std::vector<size_t> expected_;  // element count of each posted receive piece
  std::string what_;
  RequestSet requests_;
};

ExchangeOp::ExchangeOp(std::shared_ptr<CommState> comm, CommOpKind kind, CommType type, int tag,
                       std::vector<Transfer> sends, std::vector<Transfer> recvs, std::string what)
    : Op(std::move(comm), kind),
      type_(type),
      dtype_(mpi_type(type)),
      es_(comm_type_size(type)),
      tag_(tag),
      sends_(std::move(sends)),
      recvs_(std::move(recvs)),
      what_(std::move(what)) {}

void ExchangeOp::start() {
  size_t piece = kMaxMessageBytes / es_;
  // Receives first, so most messages find their buffer already posted (no unexpected-message
  // copy inside MPI).
  for (const Transfer& t : recvs_) {
    for (size_t off = 0; off < t.count; off += piece) {
      size_t len = std::min(piece, t.count - off);
      MPI_Request req;
      check_mpi(MPI_Irecv(t.data + off * es_, mpi_count(len), dtype_, t.peer, tag_, comm_->comm, &req),
                "MPI_Irecv", [&] { return what_; });
      requests_.add(req, kRecvBit | expected_.size());
      expected_.push_back(len);
    }
  }
  for (const Transfer& t : sends_) {
    for (size_t off = 0; off < t.count; off += piece) {
      size_t len = std::min(piece, t.count - off);
      MPI_Request req;
      check_mpi(MPI_Isend(t.data + off * es_, mpi_count(len), dtype_, t.peer, tag_, comm_->comm, &req),
                "MPI_Isend", [&] { return what_; });
      note_cross_node_send(*comm_, t.peer, len * es_);
      requests_.add(req, uint64_t(t.peer));
    }
  }
  finished_ = requests_.live() == 0;
}

bool ExchangeOp::progress() {
  bool moved = false;
  while (requests_.test_some(
             [&](uint64_t token, const MPI_Status& st, int error) { on_done(token, st, error); },
             [&] { return what_; }) > 0) {
    moved = true;
  }
  finished_ = requests_.live() == 0;
  return moved;
}

void ExchangeOp::on_done(uint64_t token, const MPI_Status& status, int error) {
  bool is_recv = token & kRecvBit;
  if (error != MPI_SUCCESS) {
    int error_class = error;
    MPI_Error_class(error, &error_class);
    abort_job(what_ + ": " + (is_recv ? "receive from rank " : "send to rank ") +
              std::to_string(is_recv ? status.MPI_SOURCE : int(token)) + " failed: " +
              mpi_error_string(error) +
              (error_class == MPI_ERR_TRUNCATE
                   ? "; the matching send was longer than this receive: the counts on the two "
                     "ranks must agree"
                   : ""));
  }
  if (!is_recv) return;
  size_t expected = expected_[size_t(token & ~kRecvBit)];
  int got = 0;
  MPI_Get_count(&status, dtype_, &got);
  if (size_t(got) != expected) {
    abort_job(what_ + ": rank " + std::to_string(status.MPI_SOURCE) + " sent " +
              std::to_string(got) + " elements where " + std::to_string(expected) +
              " were expected; the send and receive counts on the two ranks must agree");
  }
}

class NbcOp final : public Op {
 public:
  NbcOp(std::shared_ptr<CommState> comm, CommOpKind kind, NbcPoster post, std::string what)
      : Op(std::move(comm), kind), post_(std::move(post)), what_(std::move(what)) {}

  void start() override;
  bool progress() override;
  std::string describe() const override { return what_; }

 private:
  NbcPoster post_;
  std::string what_;
  std::vector<MPI_Request> requests_;
};

void NbcOp::start() {
  post_(comm_->comm, requests_);
  finished_ = requests_.empty();
}

bool NbcOp::progress() {
  int flag = 0;
  check_mpi(MPI_Testall(int(requests_.size()), requests_.data(), &flag, MPI_STATUSES_IGNORE),
            "MPI_Testall", [&] { return what_; });
  finished_ = flag != 0;
  return finished_;
}

}  // namespace

std::shared_ptr<Op> make_exchange(std::shared_ptr<CommState> comm, CommOpKind kind, CommType type, int tag,
                                  std::vector<Transfer> sends, std::vector<Transfer> recvs,
                                  std::string what) {
  return std::make_shared<ExchangeOp>(std::move(comm), kind, type, tag, std::move(sends), std::move(recvs),
                                      std::move(what));
}

std::shared_ptr<Op> make_nbc(std::shared_ptr<CommState> comm, CommOpKind kind, NbcPoster post,
                             std::string what) {
  return std::make_shared<NbcOp>(std::move(comm), kind, std::move(post), std::move(what));
}

}  // namespace ff::detail
