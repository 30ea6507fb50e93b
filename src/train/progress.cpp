#include "train/progress.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <vector>

#include <fmt/format.h>

#include "calibrate/hardware_peak.h"
#include "core/memory.h"
#include "io/atomic_file.h"
#include "io/tensorboard/metrics_scalars.h"
#include "kernels/cpu_isa.h"
#include "kernels/gemm.h"
#include "train/dp_mode_config.h"

namespace ff {

namespace fs = std::filesystem;

namespace {
std::string format_duration(double s) {
  if (!std::isfinite(s) || s < 0) return "?";
  int total = int(s + 0.5);
  if (total >= 3600) return fmt::format("{}h{:02}m", total / 3600, total / 60 % 60);
  if (total >= 60) return fmt::format("{}m{:02}s", total / 60, total % 60);
  return fmt::format("{}s", total);
}

// The shape keys a user compares runs by, in config.toml's names.
std::string describe_model_shape(const ModelConfig& m) {
  std::string s = fmt::format("dim {}, {} layers, {} heads ({} kv, head_dim {}), ffn_dim {}, vocab {}, seq_len {}",
                              m.dim, m.n_layers, m.n_heads, m.n_kv_heads, m.head_dim(), m.ffn_dim, m.vocab_size,
                              m.seq_len);
  if (m.tied_embeddings) s += ", tied embeddings";
  if (m.moe.enabled())
    s += fmt::format(", MoE: {} experts (top {}{}) of ffn_dim {} in {}", m.moe.n_experts, m.moe.top_k,
                     m.moe.shared_experts > 0 ? fmt::format(", {} shared", m.moe.shared_experts) : "",
                     m.moe.expert_width(m.ffn_dim),
                     m.moe.moe_layers == "all" ? "every block" : "blocks " + m.moe.moe_layers);
  return s;
}
}  // namespace

ProgressReport::ProgressReport(const TrainConfig& cfg, const std::string& out_dir, const Mesh* mesh, int step)
    : cfg_(cfg), out_dir_(out_dir), mesh_(mesh) {
  if (!leader()) return;  // only the leader reports MFU, so only it measures (once per machine: cached)
  // Always continued from `step` (0 on a fresh start): a job the supervisor restarted before its
  // first checkpoint keeps the restart rows it logged and loses only its step rows.
  metrics_ = std::make_unique<MetricsWriter>((fs::path(out_dir) / "metrics.jsonl").string(), true, step);
  if (cfg_.tensorboard) {
    events_ = std::make_unique<EventFileWriter>(out_dir);
    // The steps after `step` that the earlier files logged are logged again by this run.
    if (step > 0) events_->write_session_start(step + 1);
    // The resolved config (config.toml's text) in the Text tab, indented into a Markdown code
    // block so its '#' comments are not read as headings; a resumed run adds its own.
    std::istringstream toml(config_to_toml(cfg_));
    std::string code;
    for (std::string line; std::getline(toml, line);) code += "    " + line + "\n";
    events_->write_text(step, "config", code);
  }
  flops_per_token_ = training_flops_per_token(cfg_.model);
  static const HardwarePeak peak = machine_peak();
  const int ranks = mesh_ ? mesh_->world().size() : 1;
  const int cores = cores_in_use(ranks, ranks_on_this_machine(), cfg_.threads, peak.cores);
  // A bf16 run multiplies bf16 where the CPU can (2 products per fp32 lane): its MFU divides by
  // that ceiling, not the fp32 FMA peak it would exceed.
  peak_flops_ = peak.peak_flops_per_core(cfg_.precision == Precision::bf16) * cores;
  gemm_ceiling_flops_ = peak.sgemm_flops_per_core * cores;
}

ProgressReport::~ProgressReport() = default;

bool ProgressReport::leader() const { return !mesh_ || mesh_->world().rank() == 0; }

void ProgressReport::start(ParallelModel& par, const std::string& memory_line, bool quiet) {
  par_ = &par;
  if (!leader() || quiet) return;
  const ModelConfig& m = cfg_.model;
  std::printf("training %zu parameters, %d steps of %d x %d tokens (%lld tokens per step), dp %d, tp %d%s, pp %d, "
              "zero %d, recompute %s, %d threads per rank, precision %s, %s GEMM\n",
              ParamLayout(m).total(), cfg_.steps, cfg_.global_batch(), m.seq_len,
              (long long)cfg_.global_batch() * m.seq_len, cfg_.dp, cfg_.tp, cfg_.sp ? " (sequence parallel)" : "",
              cfg_.pp, cfg_.zero, recompute_name(cfg_.recompute), cfg_.threads, precision_name(cfg_.precision),
              gemm_backend_name());
  std::printf("model: %s\n", describe_model_shape(m).c_str());
  if (const std::string isa = kernel_isa_description(); !isa.empty()) std::printf("%s\n", isa.c_str());
  std::printf("%s\n", memory_line.c_str());
  std::printf("run folder: %s (the full resolved config is its config.toml; --print-config prints it here)\n",
              fs::absolute(out_dir_).lexically_normal().c_str());
  std::printf("progress lines: tok/s and MFU over the last %d steps (metrics.jsonl also keeps each step's own)\n",
              kRateWindow);
  if (const ContextParallel* cp = par.context())
    std::printf("context parallel: cp %d, %s attention, %s chunks, %d of the %d tokens of each sequence per rank\n",
                cfg_.cp, cp_comm_names().name(cfg_.cp_comm), cp_balance_names().name(cfg_.cp_balance),
                cp->layout().local_len(), cfg_.model.seq_len);
  if (cfg_.doc_mask)
    std::printf("document masks: each token attends to its own document (from a BOS, or after an EOS) and RoPE "
                "positions restart at each; the attention skips the tiles no query of a tile can see\n");
  if (cfg_.precision != Precision::fp32)
    std::printf("precision %s: %s\n", precision_name(cfg_.precision),
                cfg_.precision == Precision::fp16  ? f16_path_description().c_str()
                : cfg_.precision == Precision::fp8 ? "fp8 GEMM inputs emulated: each operand quantised to e4m3/e5m2 and "
                                                     "back, then an fp32 GEMM (slower than fp32: no fp8 units here)"
                                                   : bf16_path_description().c_str());
  if (const std::string lr = describe_lr_scaling(cfg_); !lr.empty()) std::printf("%s\n", lr.c_str());
  if (cfg_.dp_mode != DpMode::sync) std::printf("%s\n", describe_dp_mode(cfg_).c_str());
  if (const StageSplit* split = par.split())
    std::printf("pipeline: %s schedule, %d micro-batches per step\n%s", pipe_schedule_names().name(cfg_.schedule),
                cfg_.grad_accum,
                describe_split(*split).c_str());
}

void ProgressReport::evaluating(int step, bool quiet) const {
  if (!leader() || quiet) return;
  std::printf("evaluating after step %d: %d batches of %d x %d validation tokens\n", step, cfg_.eval_batches,
              cfg_.micro_batch * cfg_.dp, cfg_.model.seq_len);
  std::fflush(stdout);
}

void ProgressReport::saving(int step, const std::string& step_dir, bool quiet) const {
  if (!leader() || quiet) return;
  std::printf("saving checkpoint step_%d to %s\n", step, step_dir.c_str());
  std::fflush(stdout);
}

void ProgressReport::saved(int step, double seconds, bool async, bool quiet) const {
  if (!leader() || quiet) return;
  if (async)
    std::printf("checkpoint step_%d: training waited %.2f s for it; its files are written in the background\n", step,
                seconds);
  else
    std::printf("checkpoint step_%d saved in %.2f s\n", step, seconds);
  std::fflush(stdout);
}

void ProgressReport::stopped(int step, int steps, const char* signal, const std::string& step_dir,
                             int exit_code) const {
  if (!leader()) return;
  metrics_->write({{"event", "stopped"},
                   {"step", step},
                   {"signal", signal},
                   {"checkpoint", step_dir},
                   {"exit_code", exit_code},
                   {"time", metrics_time_now()}});
  // On stderr, unbuffered, even when quiet: the process exits next, perhaps under a deadline.
  std::fflush(stdout);
  std::fprintf(stderr,
               "fivefold train: stopped by %s after step %d of %d; checkpoint %s written. Run the same command to "
               "resume (exit status %d)\n",
               signal, step, steps, step_dir.c_str(), exit_code);
}

void ProgressReport::step(const StepRecord& r, double val_loss, const MoeTraining* moe, bool quiet,
                          const AttentionTileCounts* doc_tiles) {
  const double tokens = double(cfg_.global_batch()) * cfg_.model.seq_len;
  // The first step pays for page faults and library warm-up; ETA and averages skip it.
  if (++steps_seen_ > 1) run_seconds_ += r.seconds, ++steps_timed_, recent_.add(tokens, r.seconds);
  if (!leader()) return;
  const double tokens_per_s = tokens / r.seconds;
  // Until a timed step exists (the first step of this process) the average is that step's own.
  const double recent_tokens_per_s = recent_.empty() ? tokens_per_s : recent_.per_second();
  // Over the hardware's FMA peak of the cores in use (MFU), and over what the GEMM library reaches
  // on them (the share of the GEMM ceiling): the first is the honest figure, the second says how
  // much of the gap is the library's.
  const double achieved = tokens_per_s * flops_per_token_, recent_achieved = recent_tokens_per_s * flops_per_token_;
  const double mfu = achieved / peak_flops_, gemm_share = achieved / gemm_ceiling_flops_;
  const double recent_mfu = recent_achieved / peak_flops_, recent_gemm_share = recent_achieved / gemm_ceiling_flops_;
  const int last = cfg_.stop_at > 0 ? cfg_.stop_at : cfg_.steps;
  const double eta = steps_timed_ > 0 ? run_seconds_ / steps_timed_ * (last - r.step) : NAN;
  nlohmann::json rec = {{"step", r.step}, {"loss", r.loss}, {"lr", r.lr},
                        {"grad_norm", r.grad_norm}, {"tokens_per_s", tokens_per_s},
                        {"mfu", mfu}, {"gemm_ceiling_share", gemm_share}, {"peak_flops", peak_flops_},
                        {"flops_per_token", flops_per_token_}, {"step_seconds", r.seconds},
                        {"tokens_per_s_avg", recent_tokens_per_s}, {"mfu_avg", recent_mfu},
                        {"time", metrics_time_now()}};
  if (std::isfinite(val_loss)) rec["val_loss"] = val_loss, rec["eval_seconds"] = r.eval_seconds;
  if (r.skipped) rec["skipped"] = true;
  if (r.spike_median > 0) rec["loss_spike_median"] = r.spike_median;
  if (r.loss_scale > 0) rec["loss_scale"] = r.loss_scale, rec["skipped"] = r.skipped;
  const MemorySnapshot mem = MemoryLedger::instance().snapshot();
  nlohmann::json bytes;
  for (int i = 0; i < kMemCategories; ++i) bytes[mem_category_name(MemCategory(i))] = mem.current[i];
  bytes["peak_total"] = mem.total_peak;
  rec["bytes"] = bytes;
  if (moe) rec["moe"] = moe->metrics();
  if (par_ && mesh_ && mesh_->world().size() > 1) {
    const ExposedComm& c = par_->exposed_comm();  // rank 0's: each rank's differ by its waits
    rec["comm"] = {{"exposed_ms", c.total_s() * 1e3}, {"in_compute_ms", c.in_compute_s * 1e3},
                   {"after_backward_ms", c.after_backward_s * 1e3}};
  }
  if (doc_tiles) rec["attention_tiles"] = {{"visited", doc_tiles->visited}, {"skipped", doc_tiles->skipped}};
  metrics_->write(rec);
  if (events_) events_->write_scalars(r.step, tensorboard_scalars(rec), rec["time"].get<double>());
  if (quiet || (r.step % cfg_.log_every != 0 && r.step != last && !std::isfinite(val_loss))) return;
  std::string line = fmt::format(
      "step {:>5}/{} | loss {:.4f} | lr {:.2e} | {:.0f} tok/s | MFU {:.1f}% (GEMM ceiling {:.0f}%) | ETA {}", r.step,
      cfg_.steps, r.loss, r.lr, recent_tokens_per_s, 100 * recent_mfu, 100 * recent_gemm_share, format_duration(eta));
  if (moe) line += moe->progress();
  if (std::isfinite(val_loss)) line += fmt::format(" | val {:.4f} (eval {:.2f} s)", val_loss, r.eval_seconds);
  if (r.loss_scale > 0) line += fmt::format(" | scale {:g}{}", r.loss_scale, r.skipped ? " (overflow: skipped)" : "");
  std::printf("%s\n", line.c_str());
  std::fflush(stdout);
}

void ProgressReport::write_trace(const Tracer* tracer, bool quiet) const {
  if (!tracer) return;
  // Each rank writes its part next to the target; rank 0 merges them into one file.
  const int rank = mesh_ ? mesh_->world().rank() : 0, ranks = mesh_ ? mesh_->world().size() : 1;
  write_file_atomic(cfg_.trace + ".rank" + std::to_string(rank), tracer->events_json());
  // Once the leader passes the barrier, every rank's part is written.
  if (mesh_) mesh_->world().barrier();
  if (!leader()) return;
  std::vector<std::string> parts;
  for (int r = 0; r < ranks; ++r) {
    const std::string path = cfg_.trace + ".rank" + std::to_string(r);
    std::ifstream f(path);
    parts.emplace_back(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
    fs::remove(path);
  }
  Tracer::write_file(cfg_.trace, parts);
  if (!quiet) std::printf("trace written to %s (open it in https://ui.perfetto.dev)\n", cfg_.trace.c_str());
}

}  // namespace ff
