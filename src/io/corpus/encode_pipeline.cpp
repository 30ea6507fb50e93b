#include "io/corpus/encode_pipeline.h"

#include <condition_variable>
#include <deque>
#include <exception>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

namespace ff {

namespace {

// A batch closes at this much text (or one document, if larger): small enough that the live
// batches of many threads stay well under the memory budget, large enough that the queue's
// locking is noise beside the encoding.
constexpr size_t kBatchTextBytes = size_t(1) << 20;
constexpr size_t kBatchDocuments = 4096;

struct ReadBatch {
  uint64_t seq = 0;
  std::vector<Document> docs;
  ReadProgress progress;
};

struct EncodedBatch {
  std::vector<EncodedDocument> docs;
  ReadProgress progress;
};

size_t text_bytes(const Document& d) { return d.text.size() + d.prompt.size() + d.completion.size(); }

class Pipeline {
 public:
  Pipeline(DocumentReader& reader, int threads, const EncodePipelineHooks& hooks)
      : reader_(reader), hooks_(hooks), window_(uint64_t(2 * threads + 2)) {
    workers_.emplace_back([this] { guarded([this] { read_all(); }); });
    for (int t = 0; t < threads; ++t) workers_.emplace_back([this] { guarded([this] { encode_all(); }); });
  }
  ~Pipeline() {
    stop_all();
    for (auto& w : workers_) w.join();
  }

  void consume_all() {
    for (;;) {
      EncodedBatch batch;
      {
        std::unique_lock lock(m_);
        cv_.wait(lock, [&] { return stop_ || done_.count(next_) || (read_done_ && next_ == batches_read_); });
        if (stop_ || !done_.count(next_)) break;
        auto it = done_.find(next_);
        batch = std::move(it->second);
        done_.erase(it);
        ++next_;
      }
      cv_.notify_all();  // the reader may be waiting for room
      for (EncodedDocument& d : batch.docs) hooks_.consume(std::move(d));
      if (hooks_.batch_done) hooks_.batch_done(batch.progress);
    }
    std::lock_guard lock(m_);
    if (error_) std::rethrow_exception(error_);
  }

  void stop_all() {
    {
      std::lock_guard lock(m_);
      stop_ = true;
    }
    cv_.notify_all();
  }

 private:
  template <typename F>
  void guarded(F body) {
    try {
      body();
    } catch (...) {
      {
        std::lock_guard lock(m_);
        if (!error_) error_ = std::current_exception();
        stop_ = true;
      }
      cv_.notify_all();
    }
  }

  void read_all() {
    uint64_t seq = 0;
    for (;;) {
      ReadBatch batch;
      batch.seq = seq;
      size_t bytes = 0;
      Document doc;
      while (bytes < kBatchTextBytes && batch.docs.size() < kBatchDocuments && reader_.next(doc)) {
        bytes += text_bytes(doc);
        batch.docs.push_back(std::move(doc));
      }
      if (batch.docs.empty()) break;
      batch.progress = {reader_.file_bytes_read(), reader_.counts().bad_records,
                        reader_.counts().empty_documents};
      std::unique_lock lock(m_);
      cv_.wait(lock, [&] { return stop_ || seq - next_ < window_; });
      if (stop_) return;
      work_.push_back(std::move(batch));
      batches_read_ = ++seq;
      lock.unlock();
      cv_.notify_all();
    }
    {
      std::lock_guard lock(m_);
      read_done_ = true;
    }
    cv_.notify_all();
  }

  void encode_all() {
    for (;;) {
      ReadBatch batch;
      {
        std::unique_lock lock(m_);
        cv_.wait(lock, [&] { return stop_ || !work_.empty() || read_done_; });
        if (stop_ || work_.empty()) return;
        batch = std::move(work_.front());
        work_.pop_front();
      }
      EncodedBatch out;
      out.progress = batch.progress;
      out.docs.reserve(batch.docs.size());
      for (const Document& d : batch.docs) out.docs.push_back(hooks_.encode(d));
      {
        std::lock_guard lock(m_);
        done_.emplace(batch.seq, std::move(out));
      }
      cv_.notify_all();
    }
  }

  DocumentReader& reader_;
  const EncodePipelineHooks& hooks_;
  const uint64_t window_;  // batches alive at once, from read to consumed
  std::mutex m_;
  std::condition_variable cv_;
  std::deque<ReadBatch> work_;
  std::map<uint64_t, EncodedBatch> done_;
  uint64_t next_ = 0, batches_read_ = 0;
  bool read_done_ = false, stop_ = false;
  std::exception_ptr error_;
  std::vector<std::thread> workers_;
};

}  // namespace

void run_encode_pipeline(DocumentReader& reader, int threads, const EncodePipelineHooks& hooks) {
  Pipeline p(reader, threads < 1 ? 1 : threads, hooks);
  try {
    p.consume_all();
  } catch (...) {
    p.stop_all();
    throw;
  }
}

}  // namespace ff
