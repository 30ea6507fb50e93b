#include "comm/engine.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <numeric>
#include <sstream>
#include <stdexcept>
#include <string>

#ifdef __linux__
#include <sys/prctl.h>
#endif
#include <sys/stat.h>
#include <unistd.h>

#include "comm/comm.h"
#include "comm/comm_world.h"
#include "comm/flight_recorder.h"
#include "comm/singleton_session.h"

namespace ff::detail {
namespace {

// A singleton's own Open MPI session directory base (none when a launcher or the user chose it).
SingletonSession& singleton_session() {
  static SingletonSession session;  // the process's one MPI session: made at start, released at finalize
  return session;
}

// Variables a launcher (mpirun, Slurm's srun with PMIx/PMI2) sets in every rank's environment.
bool launched_by_mpi_launcher() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE"}) {
    if (std::getenv(name)) return true;
  }
  return false;
}

}  // namespace

Engine& Engine::instance() {
  static Engine engine;
  return engine;
}

Engine::~Engine() {
  // A program that forgot finalize_comm still ends cleanly (mpirun reports a rank that exits
  // without MPI_Finalize as a failure).
  if (running()) stop();
}

bool Engine::mpi_live() const {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  return initialized && !finalized;
}

Comm& Engine::world() {
  if (!running()) {
    throw std::logic_error(
        "the comm layer is not initialised: call ff::init_comm(&argc, &argv) (or create an "
        "ff::CommSession) at the start of main, before using comm_world()");
  }
  return *world_;
}

void Engine::start(int* argc, char*** argv) {
  if (running()) return;
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) {
    throw std::logic_error(
        "init_comm: MPI was already initialised by other code; let ff::init_comm be the only "
        "place that initialises MPI (it needs MPI_THREAD_SERIALIZED)");
  }
  // A plain ./fivefold is an Open MPI singleton. By default that spends ~0.35 s probing network
  // transports (UCX, PSM, OFI) and starting a helper daemon that a one-process job never uses;
  // with these two settings MPI_Init takes ~20 ms. A user's own setting wins, jobs started by a
  // launcher are not touched, and the variables are removed again after MPI_Init so that
  // processes this one starts do not inherit them.
  // Isolated singletons all use job family 0, so they share /tmp/ompi.HOST.UID/jf.0: one that
  // finalises removes it while another is creating its own directory inside it, and that one's
  // MPI_Init fails ("unable to create /tmp/ompi.vm.0/jf.0/1", seen with tests running two at a
  // time). Each singleton gets a session base of its own, removed after MPI_Finalize.
  std::vector<const char*> set_here;
  if (!launched_by_mpi_launcher()) {
    if (!std::getenv("OMPI_MCA_orte_tmpdir_base")) {
      remove_stale_singleton_sessions("/tmp");  // the trees of killed singletons
      singleton_session().open("/tmp");
    }
    for (auto [name, value] : {std::pair{"OMPI_MCA_ess_singleton_isolated", "1"}, std::pair{"OMPI_MCA_pml", "ob1"},
                               std::pair{"OMPI_MCA_orte_tmpdir_base", singleton_session().dir().c_str()}}) {
      if (!std::getenv(name) && *value) {
        setenv(name, value, 0);
        set_here.push_back(name);
      }
    }
  }
  int provided = 0;
  int rc = MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided);
  for (const char* name : set_here) unsetenv(name);
  if (rc != MPI_SUCCESS) {
    throw std::runtime_error(
        "MPI_Init_thread failed (code " + std::to_string(rc) +
        "); check that Open MPI works here: `mpirun -np 2 hostname` must print two lines");
  }
  if (provided < MPI_THREAD_SERIALIZED) {
    MPI_Finalize();
    throw std::runtime_error(
        "this MPI provides thread level " + std::to_string(provided) +
        " but the comm layer needs MPI_THREAD_SERIALIZED (its comm thread and waiting callers "
        "take turns calling MPI); use an MPI built with thread support (Debian's Open MPI is)");
  }
  int* tag_ub = nullptr;
  int has_ub = 0;
  MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &tag_ub, &has_ub);
  if (!has_ub || *tag_ub < kTagsNeeded - 1) {
    MPI_Finalize();
    throw std::runtime_error("this MPI's largest tag (MPI_TAG_UB) is " +
                             std::to_string(has_ub ? *tag_ub : 0) + " but the comm layer needs " +
                             std::to_string(kTagsNeeded - 1) + " (see op.h); use Open MPI");
  }

  // The world Comm is a duplicate, so library traffic never meets anything else that might
  // use MPI_COMM_WORLD, and it returns errors to us instead of aborting without context.
  MPI_Comm dup = MPI_COMM_NULL;
  auto during = [] { return std::string("init_comm"); };
  check_mpi(MPI_Comm_dup(MPI_COMM_WORLD, &dup), "MPI_Comm_dup", during);
  check_mpi(MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler", during);
  nodes_ = discover_nodes(dup);  // before the world Comm, whose state records its peers' nodes
  int size = 0;
  MPI_Comm_size(dup, &size);
  std::vector<int> members(size_t(size), 0);
  std::iota(members.begin(), members.end(), 0);
  world_.reset(new Comm(std::make_shared<CommState>(dup, std::move(members))));

  stop_ = false;
  running_.store(true, std::memory_order_release);
  thread_ = std::thread([this] { thread_main(); });
}

void Engine::stop() {
  if (!running()) return;
  stop_comm_watchdog();  // finalizing is no hang, and the watchdog must not outlive MPI
  drain();
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
  // From here CommStates skip MPI_Comm_free: MPI_Finalize reclaims every communicator, so
  // Comms that outlive finalize_comm (a Mesh in main's scope) are harmless.
  running_.store(false, std::memory_order_release);
  world_.reset();
  scratch_.clear();
  MPI_Finalize();
  singleton_session().release();
}

void Engine::submit(std::shared_ptr<Op> op, bool caller_waits) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!running()) {
      throw std::logic_error("communication after finalize_comm (" + op->describe() +
                             "); finish all communication before finalize_comm");
    }
    queue_.push_back(std::move(op));
  }
  if (!caller_waits) wake_.notify_one();
}

static double monotonic_us() {
  return std::chrono::duration<double, std::micro>(
             std::chrono::steady_clock::now().time_since_epoch()).count();
}

bool Engine::round() {
  bool moved = false;
  std::deque<std::shared_ptr<Op>> fresh;
  {
    std::lock_guard<std::mutex> lock(mu_);
    fresh.swap(queue_);
  }
  for (auto& op : fresh) {
    op->started_us = monotonic_us();
    op->start();
    active_.push_back(std::move(op));
    moved = true;
  }
  for (auto& op : active_) {
    if (!op->finished() && op->progress()) moved = true;
  }
  size_t kept = 0;
  for (size_t i = 0; i < active_.size(); ++i) {
    if (active_[i]->finished()) {
      active_[i]->release();
      FlightRecorder::instance().end(active_[i]->flight_id);
      active_[i]->completed_us = monotonic_us();
      active_[i]->complete.store(true, std::memory_order_release);
      moved = true;
    } else {
      active_[kept++] = std::move(active_[i]);
    }
  }
  active_.resize(kept);  // may destroy Ops and CommStates; their MPI calls run under our token
  active_count_.store(active_.size(), std::memory_order_release);
  return moved;
}

void Engine::thread_main() {
#ifdef __linux__
  // The back-off sleeps are 20 us to 1 ms; Linux's default 50 us timer slack would stretch the
  // short ones three-fold.
  prctl(PR_SET_TIMERSLACK, 5000UL, 0, 0, 0);
#endif
  Backoff backoff(std::chrono::microseconds{0});
  std::unique_lock<std::mutex> lk(mu_);
  while (true) {
    // Asleep (no CPU) while there is nothing in flight, or while a waiting caller drives.
    wake_.wait(lk, [&] {
      return stop_ || (waiters_.load() == 0 && (!queue_.empty() || active_count_.load() > 0));
    });
    if (stop_) return;
    lk.unlock();
    bool moved = false;
    if (try_take_token()) {
      moved = round();
      give_token();
    }
    lk.lock();
    if (moved) {
      backoff.progressed();
      continue;  // something completed: the next message is likely ready, poll again at once
    }
    // Nothing moved: the caller computes and the peers are slower. Sleep, but wake at once for
    // a new submission.
    wake_.wait_for(lk, backoff.next_sleep(), [&] { return stop_ || !queue_.empty(); });
  }
}

void Engine::wait(Op& op) {
  if (op.complete.load(std::memory_order_acquire)) return;
  double timeout_s = op.comm()->options.timeout_s;
  auto started = std::chrono::steady_clock::now();
  waiters_.fetch_add(1);
  Backoff backoff(kWaiterSpinWindow);
  unsigned polls = 0;
  while (!op.complete.load(std::memory_order_acquire)) {
    bool moved = false;
    if (try_take_token()) {
      moved = round();
      give_token();
    }
    if (op.complete.load(std::memory_order_acquire)) break;
    if (moved) {
      backoff.progressed();
      continue;
    }
    auto sleep = backoff.next_sleep();
    if (sleep.count() == 0) {
      // Spinning: yield the core every few polls to any other runnable thread (a compute
      // thread, an oversubscribed rank); a syscall on every poll would halve the polling rate.
      if (++polls % 16 == 0) std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(sleep);
    }
    if (timeout_s > 0 &&
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count() > timeout_s) {
      std::ostringstream limit;
      limit << timeout_s;
      abort_job(op.describe() + " did not complete within " + limit.str() +
                " s (CommOptions::timeout_s): a peer rank is stuck or dead; raise the timeout "
                "if this step is legitimately that slow");
    }
  }
  waited_ns_.fetch_add(uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                    std::chrono::steady_clock::now() - started).count()),
                        std::memory_order_relaxed);
  bool work_left;
  {
    std::lock_guard<std::mutex> lock(mu_);
    waiters_.fetch_sub(1);
    work_left = !queue_.empty() || active_count_.load() > 0;
  }
  // The comm thread takes over whatever is still in flight. Waking it for nothing would cost
  // a context switch per blocking call, on a core another rank may be using.
  if (work_left) wake_.notify_one();
}

void Engine::drain() {
  // Same driving loop as wait(), until nothing is queued or in flight.
  waiters_.fetch_add(1);
  Backoff backoff(kWaiterSpinWindow);
  while (true) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (queue_.empty() && active_count_.load() == 0) break;
    }
    bool moved = false;
    with_token([&] { moved = round(); });
    if (moved) {
      backoff.progressed();
    } else if (auto sleep = backoff.next_sleep(); sleep.count() > 0) {
      std::this_thread::sleep_for(sleep);
    }
  }
  waiters_.fetch_sub(1);
}

bool Engine::try_token_for(int ms) {
  if (holds_token()) return true;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  while (std::chrono::steady_clock::now() < deadline) {
    if (try_take_token()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return false;
}

// ---- what the engine runs on ----

// Runs with the MPI token held (engine start, or a split on the driving thread).
CommState::CommState(MPI_Comm c, std::vector<int> members) : comm(c), world_ranks(std::move(members)) {
  check_mpi(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank", [] { return std::string("creating a Comm"); });
  check_mpi(MPI_Comm_size(comm, &size), "MPI_Comm_size", [] { return std::string("creating a Comm"); });
  const std::vector<int>& nodes = Engine::instance().rank_nodes();
  peer_off_node.assign(size_t(size), 0);
  for (int r = 0; r < size; ++r)
    peer_off_node[size_t(r)] = nodes[size_t(world_ranks[size_t(r)])] != nodes[size_t(world_ranks[size_t(rank)])];
  spans_nodes_evenly = group_spans_nodes_evenly(*this);
}

CommState::~CommState() {
  // After finalize_comm MPI has reclaimed every communicator; freeing again would be an error.
  Engine& engine = Engine::instance();
  if (comm == MPI_COMM_NULL || !engine.running()) return;
  engine.with_token([&] { MPI_Comm_free(&comm); });
}

std::string Op::describe() const {
  return std::string(comm_op_name(kind_)) + " on a group of " + std::to_string(comm_->size);
}

std::byte* ScratchPool::take(size_t bytes) {
  // Smallest free buffer that fits; the pool only ever holds a handful.
  auto best = free_.end();
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    if (it->bytes >= bytes && (best == free_.end() || it->bytes < best->bytes)) best = it;
  }
  if (best == free_.end()) {
    // Default-initialised: the first use overwrites it, so zeroing would be wasted work.
    lent_.push_back({bytes, std::unique_ptr<std::byte[]>(new std::byte[bytes])});
  } else {
    lent_.push_back(std::move(*best));
    free_.erase(best);
  }
  return lent_.back().data.get();
}

void ScratchPool::give(std::byte* buffer) {
  auto it = std::find_if(lent_.begin(), lent_.end(),
                         [&](const Buffer& b) { return b.data.get() == buffer; });
  if (it == lent_.end()) throw std::logic_error("ScratchPool::give: buffer was not lent by this pool");
  free_.push_back(std::move(*it));
  lent_.erase(it);
}

void ScratchPool::clear() {
  free_.clear();
  lent_.clear();
}

size_t ScratchPool::bytes_held() const {
  size_t total = 0;
  for (const auto& b : free_) total += b.bytes;
  for (const auto& b : lent_) total += b.bytes;
  return total;
}

}  // namespace ff::detail
