#include "train/train_config.h"

#include "parallel/tensor/tensor_plan.h"
#include "train/moe_config_check.h"
#include "train/dp_mode_config.h"
#include "parallel/grad_wire.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <cmath>
#include <filesystem>
#include <functional>
#include <sstream>
#include <stdexcept>
#include <variant>

#include <fmt/format.h>
#include <toml++/toml.h>

namespace ff {

namespace {

// An enum field seen as text through its enum's table: the one way a key's names are read,
// printed and listed.
struct EnumRef {
  std::function<const char*()> name;                             // the value, as the table names it
  std::function<void(const std::string& text, const std::string& key)> set;  // throws for a name the table lacks
};
using FieldRef = std::variant<int*, float*, bool*, uint64_t*, std::string*, EnumRef>;
struct Binding {
  ConfigKey key;
  std::function<FieldRef(TrainConfig&)> ref;
};
#define FF_FIELD(expr) [](TrainConfig& c) -> FieldRef { return &c.expr; }
#define FF_ENUM(expr) [](TrainConfig& c) { return &c.expr; }

// An enum key: its help line is `before`, the table's names with their help, then `after`.
template <typename T, typename Field>
Binding enum_key(const char* name, const char* before, const EnumTable<T>& table, const char* after, Field field) {
  return {{name, before + table.described() + after}, [&table, field](TrainConfig& c) -> FieldRef {
            T* value = field(c);
            return EnumRef{[&table, value] { return table.name(*value); },
                           [&table, value](const std::string& text, const std::string& key) {
                             *value = table.parse(text, key);
                           }};
          }};
}

const std::vector<Binding>& bindings() {
  static const std::vector<Binding> table = {
      {{"data", "folder written by `fivefold prepare`, or weighted folders mixed row by row: [\"code:0.3\", \"web:0.7\"] (--data code:0.3,web:0.7)"}, FF_FIELD(data)},
      {{"doc_mask", "packed rows: a token attends only to its own document (which starts at the tokenizer's BOS or after its EOS), RoPE positions restart at each document (true | false)"}, FF_FIELD(doc_mask)},
      {{"vocab_size", "tokens in the vocabulary; 0 = read it from the tokenizer in `data`"}, FF_FIELD(model.vocab_size)},
      {{"dim", "residual width (hidden size)"}, FF_FIELD(model.dim)},
      {{"n_layers", "decoder blocks"}, FF_FIELD(model.n_layers)},
      {{"n_heads", "query heads; dim must divide by it unless head_dim is set"}, FF_FIELD(model.n_heads)},
      {{"n_kv_heads", "key/value heads (grouped-query attention); n_heads must divide by it"}, FF_FIELD(model.n_kv_heads)},
      {{"ffn_dim", "SwiGLU inner width"}, FF_FIELD(model.ffn_dim)},
      {{"seq_len", "tokens per training sequence"}, FF_FIELD(model.seq_len)},
      {{"rms_eps", "RMSNorm epsilon"}, FF_FIELD(model.rms_eps)},
      {{"rope_theta", "rotary embedding base"}, FF_FIELD(model.rope_theta)},
      enum_key("rope_scaling", "rotary frequencies: ", rope_scaling_names(), "", FF_ENUM(model.rope_scaling.kind)),
      {{"rope_factor", "rope_scaling linear or llama3: the context extension factor"}, FF_FIELD(model.rope_scaling.factor)},
      {{"rope_low_freq_factor", "rope_scaling llama3: wavelengths above rope_original_seq_len / this are divided by rope_factor"}, FF_FIELD(model.rope_scaling.low_freq_factor)},
      {{"rope_high_freq_factor", "rope_scaling llama3: wavelengths below rope_original_seq_len / this are kept"}, FF_FIELD(model.rope_scaling.high_freq_factor)},
      {{"rope_original_seq_len", "rope_scaling llama3: the context the model was pretrained at (HF original_max_position_embeddings)"}, FF_FIELD(model.rope_scaling.original_context)},
      {{"max_positions", "the context the model serves (HF max_position_embeddings; 0 = seq_len); seq_len may not exceed it"}, FF_FIELD(model.max_positions)},
      {{"head_dim", "width of one attention head (0 = dim / n_heads)"}, FF_FIELD(model.head_size)},
      {{"qkv_bias", "a bias on the q, k and v projections (Qwen2.5)"}, FF_FIELD(model.qkv_bias)},
      {{"tied_embeddings", "LM head shares the embedding matrix"}, FF_FIELD(model.tied_embeddings)},
      {{"init_std", "std of the normal init of weight matrices"}, FF_FIELD(model.init_std)},
      {{"n_experts", "routed experts per MoE block (0 = a dense model)"}, FF_FIELD(model.moe.n_experts)},
      {{"top_k", "experts each token is routed to"}, FF_FIELD(model.moe.top_k)},
      {{"expert_ffn_dim", "SwiGLU width of one expert (0 = ffn_dim)"}, FF_FIELD(model.moe.expert_ffn_dim)},
      {{"moe_layers", "which blocks are MoE: \"all\" or a comma list such as \"1,3\" (others dense)"}, FF_FIELD(model.moe.moe_layers)},
      {{"shared_experts", "always-active experts per MoE block (their SwiGLU is shared_experts x expert_ffn_dim wide)"}, FF_FIELD(model.moe.shared_experts)},
      enum_key("router", "router scores: ", router_names(), " (gates renormalised over the chosen top_k)", FF_ENUM(model.moe.router)),
      {{"aux_loss_coeff", "Switch load-balancing loss coefficient (coeff * E * sum f_i P_i)"}, FF_FIELD(model.moe.aux_loss_coeff)},
      {{"z_loss_coeff", "router z-loss coefficient (coeff * mean logsumexp(logits)^2)"}, FF_FIELD(model.moe.z_loss_coeff)},
      {{"router_bias_update", "aux-loss-free balancing (DeepSeek-V3): selection-bias step per optimizer step (0 = off)"}, FF_FIELD(model.moe.router_bias_update)},
      {{"capacity_factor", "tokens an expert takes per micro-batch = ceil(cf * N * top_k / E), the rest dropped (0 = dropless)"}, FF_FIELD(model.moe.capacity_factor)},
      {{"steps", "optimizer steps; a fresh run's LR schedule spans exactly these (see lr_schedule_steps)"}, FF_FIELD(steps)},
      {{"stop_at", "stop after this step with a checkpoint, as if interrupted (0 = run all steps)"}, FF_FIELD(stop_at)},
      {{"seed", "seed of the weight init and the data order"}, FF_FIELD(seed)},
      {{"init_from", "start from the weights of this folder (an `import` output, a run folder or a step_N folder): fresh optimizer, step 0, the model's shape keys taken from it; ignored when --out already holds a checkpoint (\"\" = initialise from seed)"}, FF_FIELD(init_from)},
      {{"micro_batch", "sequences per forward/backward"}, FF_FIELD(micro_batch)},
      {{"grad_accum", "micro-batches accumulated per optimizer step"}, FF_FIELD(grad_accum)},
      {{"lr", "peak learning rate (after warmup)"}, FF_FIELD(lr)},
      {{"min_lr_ratio", "cosine schedule ends at lr * min_lr_ratio"}, FF_FIELD(min_lr_ratio)},
      {{"warmup_steps", "linear warmup steps from 0"}, FF_FIELD(warmup_steps)},
      {{"lr_schedule_steps", "length of the lr schedule in steps, past which lr stays at lr * min_lr_ratio (0 = steps of a fresh run; a resume keeps the length its checkpoint recorded, so a larger --steps continues at the floor; a value here re-plans it)"}, FF_FIELD(lr_schedule_steps)},
      {{"weight_decay", "AdamW decoupled weight decay on matrices (norms are not decayed)"}, FF_FIELD(weight_decay)},
      enum_key("optimizer", "", optimizer_names(), "", FF_ENUM(optimizer)),
      {{"beta1", "AdamW first-moment decay"}, FF_FIELD(beta1)},
      {{"beta2", "AdamW second-moment decay"}, FF_FIELD(beta2)},
      {{"adam_eps", "AdamW epsilon"}, FF_FIELD(adam_eps)},
      {{"grad_clip", "clip the global gradient L2 norm to this (0 = off)"}, FF_FIELD(grad_clip)},
      enum_key("recompute", "activation recomputation: ", recompute_names(), "", FF_ENUM(recompute)),
      enum_key("precision", "", precision_names(), ": low-precision GEMM inputs with fp32 accumulation; fp32 norms, softmax, loss, master weights, gradients, AdamW", FF_ENUM(precision)),
      enum_key("zero3_gather", "", dtype_option_names(), ": dtype of ZeRO-3's parameter all-gathers (16-bit: half the bytes, every gathered parameter rounded; needs that precision)", FF_ENUM(zero3_gather)),
      {{"loss_scale_init", "fp16: initial dynamic loss scale"}, FF_FIELD(loss_scale.init)},
      {{"loss_scale_window", "fp16: clean steps before the loss scale doubles"}, FF_FIELD(loss_scale.window)},
      {{"loss_scale_hysteresis", "fp16: overflows (skipped steps) before the loss scale halves"}, FF_FIELD(loss_scale.hysteresis)},
      {{"threads", "OpenMP threads per rank (0 = cores of this machine / ranks on it)"}, FF_FIELD(threads)},
      {{"eval_every", "validation loss every N steps and at the end (0 = never)"}, FF_FIELD(eval_every)},
      {{"eval_batches", "micro-batches of validation data per evaluation"}, FF_FIELD(eval_batches)},
      {{"ckpt_every", "checkpoint every N steps, and always at the end (0 = end only)"}, FF_FIELD(ckpt_every)},
      {{"ckpt_every_minutes", "also checkpoint when this many minutes (rank 0's clock) have passed since the last save or the start (0 = off)"}, FF_FIELD(ckpt_every_minutes)},
      {{"keep_checkpoints", "complete checkpoints (step_N/ folders) kept in the run folder, newest first"}, FF_FIELD(keep_checkpoints)},
      {{"ckpt_async", "write checkpoints in a background thread while training continues (true | false)"}, FF_FIELD(ckpt_async)},
      {{"log_every", "progress line every N steps"}, FF_FIELD(log_every)},
      {{"dp", "data-parallel replicas (0 = all ranks left by tp, pp, cp)"}, FF_FIELD(dp)},
      {{"tp", "tensor-parallel degree (Megatron column/row split; heads, kv heads, ffn_dim, vocab divide by it)"}, FF_FIELD(tp)},
      {{"sp", "sequence parallelism over the tp group: norms and residuals on 1/tp of the tokens"}, FF_FIELD(sp)},
      {{"ep", "expert-parallel degree: n_experts split over blocks of ep ranks of dp x cp (divides dp x cp and n_experts)"}, FF_FIELD(ep)},
      {{"ep_overlap", "expert parallel all-to-alls asynchronous, overlapped with the shared experts and the router backward (same results)"}, FF_FIELD(ep_overlap)},
      {{"pp", "pipeline-parallel stages (layers split by cost; grad_accum = micro-batches per step)"}, FF_FIELD(pp)},
      enum_key("schedule", "pipeline schedule: ", pipe_schedule_names(), "", FF_ENUM(schedule)),
      {{"chunks", "model chunks per pipeline rank (> 1 only with the interleaved schedule)"}, FF_FIELD(chunks)},
      {{"cp", "context-parallel degree: each sequence split over cp ranks (seq_len divides by 2 x cp)"}, FF_FIELD(cp)},
      enum_key("cp_comm", "context-parallel attention: ", cp_comm_names(), "", FF_ENUM(cp_comm)),
      enum_key("cp_balance", "sequence chunks per cp rank: ", cp_balance_names(), "", FF_ENUM(cp_balance)),
      {{"zero", "ZeRO stage over the data-parallel group: 0 (DDP), 1, 2 or 3 (FSDP)"}, FF_FIELD(zero)},
      {{"bucket_mb", "DDP gradient bucket size in MiB"}, FF_FIELD(bucket_mb)},
      enum_key("grad_reduce_dtype", "", grad_reduce_dtype_names(), ": dtype of the data-parallel gradient reduction (bf16: half the bytes, fp32 sums)", FF_ENUM(grad_reduce_dtype)),
      {{"packed_weights", "bf16 | fp16: GEMM weights also kept in oneDNN's blocked layout, packed once per step (faster products; 4 bytes per weight element more; false saves them; no effect where fivefold's tile GEMM runs bf16 on AMX)"}, FF_FIELD(packed_weights)},
      {{"wgrad_rows", "bf16 | fp16, 2+ threads: each thread computes its own rows of a weight gradient with a single-threaded oneDNN matmul (faster; fp32 sums in another order; false: one matmul over all threads; no effect under the AMX tile GEMM)"}, FF_FIELD(wgrad_rows)},
      enum_key("grad_sync", "DDP all-reduce: ", grad_sync_names(), "", FF_ENUM(grad_sync)),
      {{"trace", "write a Chrome trace (open in Perfetto) of the run to this file"}, FF_FIELD(trace)},
      {{"tensorboard", "write the metrics.jsonl scalars (loss, val loss, lr, gradient norm, tokens/s, MFU, memory by category, loss scale) to a TensorBoard event file in the run folder as well: tensorboard --logdir OUT (true | false)"}, FF_FIELD(tensorboard)},
      enum_key("on_nonfinite", "a non-finite or vanished gradient norm: ", nonfinite_action_names(), "", FF_ENUM(on_nonfinite)),
      {{"loss_spike", "warn (and defer the checkpoint) when the loss exceeds this x its recent median; 0 = off"}, FF_FIELD(loss_spike)},
      {{"collective_timeout", "seconds a collective may wait; then every rank dumps run_dir/flight/ and the job ends"}, FF_FIELD(collective_timeout)},
      enum_key("dp_mode", "data parallelism: ", dp_mode_names(), " (needs dp >= 2, zero 0, tp = pp = 1)", FF_ENUM(dp_mode)),
      {{"sync_every", "local_sgd, diloco: local optimizer steps between averagings (H)"}, FF_FIELD(sync_every)},
      {{"outer_lr", "diloco: outer Nesterov learning rate"}, FF_FIELD(outer_lr)},
      {{"outer_momentum", "diloco: outer Nesterov momentum (0 = plain SGD)"}, FF_FIELD(outer_momentum)},
      enum_key("diloco_pseudo_grad_dtype", "diloco: pseudo-gradient all-reduce type, ", pseudo_grad_dtype_names(), "", FF_ENUM(diloco_pseudo_grad_dtype)),
      {{"max_staleness", "async: gradients are applied this many steps late (0 = sync)"}, FF_FIELD(max_staleness)},
      {{"simulate_straggler", "RANK:FACTOR: that rank sleeps (FACTOR-1) x its compute time per step (tests, benchmarks)"}, FF_FIELD(simulate_straggler)},
      enum_key("lr_scaling", "scale lr with the global batch: ", lr_scaling_names(), " (of global batch / lr_reference_batch)", FF_ENUM(lr_scaling)),
      {{"lr_reference_batch", "sequences per step that lr was tuned for (lr_scaling linear, sqrt)"}, FF_FIELD(lr_reference_batch)},
      {{"scaled_lr", "set at start, not read: the peak lr after lr_scaling (= lr with none)"}, FF_FIELD(scaled_lr)},
  };
  return table;
}
#undef FF_FIELD
#undef FF_ENUM

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1])});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

[[noreturn]] void unknown_key(const std::string& key, const std::string& source) {
  std::string best;
  size_t best_d = 99;
  for (const auto& b : bindings()) {
    size_t d = edit_distance(key, b.key.name);
    if (d < best_d) best_d = d, best = b.key.name;
  }
  std::string hint = best_d <= 3 ? fmt::format(" Did you mean '{}'?", best) : "";
  throw std::runtime_error(fmt::format(
      "unknown config key '{}' ({}).{} Run `fivefold train --help` for the list of keys.", key,
      source, hint));
}

template <typename T>
T parse_number(const std::string& key, const std::string& text, const std::string& source) {
  // parse_args turns a bare `--dim` into "true": say the value is missing, not that it is bad.
  if (text == "true" && source == "on the command line")
    throw std::runtime_error(fmt::format("config key '{}' ({}): --{} needs a value, e.g. --{} {}", key,
                                         source, key, key, std::is_integral_v<T> ? "64" : "0.5"));
  T value{};
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end)
    throw std::runtime_error(fmt::format("config key '{}' ({}): '{}' is not a valid {}", key,
                                         source, text,
                                         std::is_integral_v<T> ? "integer" : "number"));
  return value;
}

// TOML has types, so a file must use the one the key has: `dim = "64"`, `dim = 64.0`, `dim = 1e2`
// and `tied_embeddings = 1` are refused instead of converted. An integer for a real-valued key is
// the one conversion taken, since it is exact (`rope_theta = 10000`).
void check_toml_type(const std::string& raw_key, const toml::node& node, const std::string& path) {
  std::string key = raw_key;
  std::replace(key.begin(), key.end(), '-', '_');
  auto it = std::find_if(bindings().begin(), bindings().end(),
                         [&](const Binding& b) { return key == b.key.name; });
  if (it == bindings().end()) return;  // set_config_key names the unknown key
  TrainConfig probe;
  const FieldRef ref = it->ref(probe);
  const char* want = nullptr;
  if (std::holds_alternative<int*>(ref) || std::holds_alternative<uint64_t*>(ref)) {
    if (!node.is_integer()) want = "an integer (e.g. 64, without quotes or a decimal point)";
  } else if (std::holds_alternative<float*>(ref)) {
    if (!node.is_number()) want = "a number (e.g. 0.5, without quotes)";
  } else if (std::holds_alternative<bool*>(ref)) {
    if (!node.is_boolean()) want = "true or false (without quotes)";
  } else if (!node.is_string()) {
    want = "a string in quotes";
  }
  if (!want) return;
  std::ostringstream shown;
  if (node.is_string()) shown << '"' << *node.value<std::string>() << '"';
  else if (node.is_integer()) shown << *node.value<int64_t>();
  else if (node.is_floating_point()) shown << fmt::format("{}", *node.value<double>());
  else if (node.is_boolean()) shown << (*node.value<bool>() ? "true" : "false");
  else shown << "a " << node.type();
  throw std::runtime_error(fmt::format("config file '{}': key '{}' is {} but must be {}", path, raw_key,
                                       shown.str(), want));
}

// `data = ["code:0.3", "web:0.7"]` as the one string the config holds ("code:0.3,web:0.7", the
// command line's form); data_mixture.h parses it.
std::string data_list_text(const toml::array& list, const std::string& path) {
  std::string text;
  for (const auto& entry : list) {
    const auto s = entry.value<std::string>();
    if (!entry.is_string() || s->find(',') != std::string::npos)
      throw std::runtime_error(fmt::format(
          "config file '{}:{}': key 'data' lists {}; each entry must be a string \"FOLDER:WEIGHT\" (a folder name "
          "without commas), e.g. data = [\"code:0.3\", \"web:0.7\"]",
          path, entry.source().begin.line, entry.is_string() ? "\"" + *s + "\"" : std::string("a value that is not a string")));
    text += (text.empty() ? "" : ",") + *s;
  }
  if (text.empty())
    throw std::runtime_error(fmt::format("config file '{}': key 'data' is an empty list; name at least one folder", path));
  return text;
}

// A 16-bit zero3_gather needs the precision of that dtype; throws naming both keys and the fix.
void validate_zero3_gather(const TrainConfig& c) {
  if (c.zero3_gather == DType::f32 || c.zero3_gather == gemm_input_dtype_of(c.precision)) return;
  const char* gather = dtype_option_names().name(c.zero3_gather);
  throw std::runtime_error(fmt::format(
      "config key 'zero3_gather' = '{}' needs precision = '{}' (got '{}'): parameters are gathered in the dtype "
      "the GEMMs read; set zero3_gather = fp32",
      gather, gather, precision_name(c.precision)));
}

}  // namespace

const std::vector<ConfigKey>& config_keys() {
  static const std::vector<ConfigKey> keys = [] {
    std::vector<ConfigKey> k;
    for (const auto& b : bindings()) k.push_back(b.key);
    return k;
  }();
  return keys;
}

void set_config_key(TrainConfig& c, const std::string& raw_key, const std::string& value,
                    const std::string& source) {
  std::string key = raw_key;
  std::replace(key.begin(), key.end(), '-', '_');
  auto it = std::find_if(bindings().begin(), bindings().end(),
                         [&](const Binding& b) { return key == b.key.name; });
  if (it == bindings().end()) unknown_key(raw_key, source);
  FieldRef ref = it->ref(c);
  if (auto p = std::get_if<int*>(&ref)) **p = parse_number<int>(key, value, source);
  else if (auto p = std::get_if<uint64_t*>(&ref)) **p = parse_number<uint64_t>(key, value, source);
  else if (auto p = std::get_if<float*>(&ref)) **p = parse_number<float>(key, value, source);
  else if (auto p = std::get_if<std::string*>(&ref)) **p = value;
  else if (auto p = std::get_if<EnumRef>(&ref)) {
    try {
      p->set(value, key);
    } catch (const std::runtime_error& e) {  // "unknown precision 'fp64'; use one of fp32 | bf16 | ..."
      throw std::runtime_error(fmt::format("config key '{}': {} ({})", key, e.what(), source));
    }
  } else if (auto p = std::get_if<bool*>(&ref)) {
    if (value == "true" || value == "1") **p = true;
    else if (value == "false" || value == "0") **p = false;
    else
      throw std::runtime_error(fmt::format("config key '{}' ({}): '{}' is not true or false",
                                           key, source, value));
  }
}

TrainConfig load_train_config(const std::string& toml_path,
                              const std::vector<std::pair<std::string, std::string>>& overrides,
                              KeySources* set_by) {
  TrainConfig c;
  // Where each key was set, by its canonical name ('_', not '-'); the last setting wins.
  auto note = [set_by](std::string key, std::string where) {
    std::replace(key.begin(), key.end(), '-', '_');
    if (set_by) (*set_by)[key] = std::move(where);
  };
  if (!toml_path.empty()) {
    if (!std::filesystem::exists(toml_path))
      throw std::runtime_error(fmt::format(
          "config file '{}' does not exist; pass --config with a file such as configs/tiny.toml",
          toml_path));
    if (std::filesystem::is_directory(toml_path))
      throw std::runtime_error(fmt::format(
          "config '{}' is a folder; pass --config with a TOML file such as configs/tiny.toml", toml_path));
    toml::table table;
    try {
      table = toml::parse_file(toml_path);
    } catch (const toml::parse_error& e) {
      std::ostringstream where;
      where << e.source().begin;
      throw std::runtime_error(fmt::format("config file '{}' is not valid TOML ({}): {}",
                                           toml_path, where.str(), e.description()));
    }
    for (auto&& [k, node] : table) {
      std::string key(k.str()), text;
      if (key == "data" && node.is_array()) {
        set_config_key(c, key, data_list_text(*node.as_array(), toml_path), fmt::format("in {}:{}", toml_path, node.source().begin.line));
        note(key, fmt::format("{}:{}", toml_path, node.source().begin.line));
        continue;
      }
      check_toml_type(key, node, toml_path);
      if (auto v = node.value<std::string>(); v && node.is_string()) text = *v;
      else if (node.is_boolean()) text = *node.value<bool>() ? "true" : "false";
      else if (node.is_integer()) text = std::to_string(*node.value<int64_t>());
      else if (node.is_floating_point()) text = fmt::format("{}", *node.value<double>());
      else
        throw std::runtime_error(fmt::format(
            "config file '{}': key '{}' must be a number, string or boolean (keys are flat, no "
            "tables)",
            toml_path, key));
      set_config_key(c, key, text, fmt::format("in {}:{}", toml_path, node.source().begin.line));
      note(key, fmt::format("{}:{}", toml_path, node.source().begin.line));
    }
  }
  for (const auto& [k, v] : overrides) {
    set_config_key(c, k, v, "on the command line");
    note(k, "--" + k);
  }
  return c;
}

bool saved_doc_mask(const std::string& config_toml) {
  if (config_toml.empty()) return false;
  try {
    return toml::parse(config_toml)["doc_mask"].value_or(false);
  } catch (const toml::parse_error& e) {
    throw std::runtime_error(fmt::format("the checkpoint's saved config is not valid TOML: {}", e.description()));
  }
}

namespace {
// A key's value as the resolved config file writes it.
std::string toml_value_text(const FieldRef& ref) {
  std::string v;
  if (auto p = std::get_if<int*>(&ref)) v = std::to_string(**p);
  else if (auto p = std::get_if<uint64_t*>(&ref)) v = std::to_string(**p);
  else if (auto p = std::get_if<float*>(&ref)) {
    v = fmt::format("{}", **p);
    if (v.find_first_of(".en") == std::string::npos) v += ".0";  // keep it a TOML float
  } else if (auto p = std::get_if<bool*>(&ref)) v = **p ? "true" : "false";
  else if (auto p = std::get_if<std::string*>(&ref)) v = fmt::format("\"{}\"", **p);
  else if (auto p = std::get_if<EnumRef>(&ref)) v = fmt::format("\"{}\"", p->name());
  return v;
}
}  // namespace

std::string config_value_text(const TrainConfig& src, const std::string& key) {
  TrainConfig c = src;  // bindings hand out mutable references
  auto it = std::find_if(bindings().begin(), bindings().end(),
                         [&](const Binding& b) { return key == b.key.name; });
  if (it == bindings().end()) throw std::logic_error("config_value_text: no key '" + key + "'");
  return toml_value_text(it->ref(c));
}

std::string config_to_toml(const TrainConfig& src) {
  TrainConfig c = src;  // bindings hand out mutable references
  std::string out = "# resolved fivefold training config\n";
  for (const auto& b : bindings())
    out += fmt::format("{} = {}  # {}\n", b.key.name, toml_value_text(b.ref(c)), b.key.help);
  return out;
}

void validate_train_config(const TrainConfig& c) {
  auto need = [](bool ok, const std::string& msg) {
    if (!ok) throw std::runtime_error("config: " + msg);
  };
  need(!c.data.empty(), "key 'data' is empty; set it to the folder `fivefold prepare --out` wrote");
  need(c.steps > 0, fmt::format("steps must be positive (got {})", c.steps));
  need(c.stop_at >= 0 && c.stop_at <= c.steps,
       fmt::format("stop_at ({}) must be between 0 and steps ({})", c.stop_at, c.steps));
  need(c.micro_batch > 0, fmt::format("micro_batch must be positive (got {})", c.micro_batch));
  need(c.grad_accum > 0, fmt::format("grad_accum must be positive (got {})", c.grad_accum));
  need(c.lr > 0 && std::isfinite(c.lr), fmt::format("lr must be a positive number (got {})", c.lr));
  need(c.min_lr_ratio >= 0 && c.min_lr_ratio <= 1, "min_lr_ratio must be in [0, 1]");
  need(c.warmup_steps >= 0, "warmup_steps must be >= 0");
  need(c.lr_schedule_steps >= 0,
       fmt::format("lr_schedule_steps must be >= 0 (got {}; 0 = the run's steps)", c.lr_schedule_steps));
  need(c.beta1 >= 0 && c.beta1 < 1 && c.beta2 >= 0 && c.beta2 < 1, "beta1 and beta2 must be in [0, 1)");
  // Each of these passed before and ended in "loss became nan ... lower lr", the wrong advice.
  need(c.adam_eps > 0 && std::isfinite(c.adam_eps),
       fmt::format("adam_eps must be a positive number (got {}); 0 divides by zero where the second moment "
                   "is 0, 1e-8 is usual", c.adam_eps));
  need(c.weight_decay >= 0 && std::isfinite(c.weight_decay),
       fmt::format("weight_decay must be a number >= 0 (got {}); 0.1 is usual", c.weight_decay));
  need(c.model.init_std >= 0 && std::isfinite(c.model.init_std),
       fmt::format("init_std must be a number >= 0 (got {}); 0.02 is usual", c.model.init_std));
  need(std::isfinite(c.model.rms_eps) && std::isfinite(c.model.rope_theta),
       fmt::format("rms_eps and rope_theta must be finite (got {} and {})", c.model.rms_eps,
                   c.model.rope_theta));
  need(c.grad_clip >= 0, "grad_clip must be >= 0 (0 disables clipping)");
  need(c.threads >= 0, fmt::format("threads must be >= 0 (got {}; 0 = automatic)", c.threads));
  // Refused rather than clamped: a clamp would make the saved config lie about the run.
  need(c.threads <= max_useful_threads(),
       fmt::format("threads = {} is more than 4 x the {} cores of this machine, which only slows every "
                   "step down; use 0 (automatic) or at most {}",
                   c.threads, max_useful_threads() / 4, max_useful_threads()));
  need(c.eval_every >= 0 && c.eval_batches > 0, "eval_every must be >= 0 and eval_batches > 0");
  need(c.ckpt_every >= 0 && c.log_every > 0, "ckpt_every must be >= 0 and log_every > 0");
  need(c.ckpt_every_minutes >= 0 && std::isfinite(c.ckpt_every_minutes),
       "ckpt_every_minutes must be a number of minutes >= 0 (0 = no timed checkpoints)");
  need(c.keep_checkpoints >= 1,
       fmt::format("keep_checkpoints must be >= 1 (got {}): the run folder keeps at least the newest checkpoint",
                   c.keep_checkpoints));
  need(c.dp >= 0, fmt::format("dp must be >= 0 (got {}; 0 means all ranks)", c.dp));
  need(c.tp >= 1, fmt::format("tp must be >= 1 (got {})", c.tp));
  need(!c.sp || c.tp > 1, "sp = true needs tp > 1: sequence parallelism splits tokens over the tp group");
  validate_context_parallel(c.cp, c.cp_comm, c.model.seq_len, c.model.n_heads, c.model.n_kv_heads, c.tp);
  need(c.pp >= 1, fmt::format("pp must be >= 1 (got {})", c.pp));
  if (c.pp > 1) {
    try {
      validate_schedule_spec({c.schedule, c.pp, c.grad_accum, c.chunks});
    } catch (const std::exception& e) {
      throw std::runtime_error(fmt::format("config: pipeline (pp = {}, schedule = {}, grad_accum = {} micro-batches, "
                                           "chunks = {}): {}", c.pp, pipe_schedule_names().name(c.schedule),
                                           c.grad_accum, c.chunks, e.what()));
    }
    need(schedule_fills_pipeline({c.schedule, c.pp, c.grad_accum, c.chunks}),
         fmt::format("the 1f1b schedule needs grad_accum (micro-batches, {}) >= pp ({}) to fill the pipeline; "
                     "raise grad_accum or use schedule = gpipe", c.grad_accum, c.pp));
    need(c.model.n_layers >= c.pp * c.chunks,
         fmt::format("n_layers ({}) must be at least pp x chunks = {} x {}: every pipeline stage needs a layer",
                     c.model.n_layers, c.pp, c.chunks));
  } else {
    need(c.chunks == 1, fmt::format("chunks = {} needs pp > 1 and the interleaved schedule", c.chunks));
  }
  validate_zero3_gather(c);
  // Past 2^24 the scaled fp16 gradients overflow on every step and each skipped step only halves
  // the scale (1e30 skips a whole short run); below 1 small gradients underflow to 0, which reads
  // as a model gone bad. Both are refused rather than blamed on the model later.
  constexpr float kMaxLossScale = 16777216.0f;  // 2^24
  need(c.loss_scale.init >= 1 && c.loss_scale.init <= kMaxLossScale,
       fmt::format("loss_scale_init ({}) must be between 1 and {} (2^24): a larger fp16 loss scale overflows "
                   "every step's gradients, a smaller one lets them underflow to 0; 65536 is usual",
                   c.loss_scale.init, kMaxLossScale));
  need(c.loss_scale.window > 0 && c.loss_scale.hysteresis > 0,
       fmt::format("loss_scale_window ({}) and loss_scale_hysteresis ({}) must be positive integers; 2000 and 2 "
                   "are usual", c.loss_scale.window, c.loss_scale.hysteresis));
  need(c.zero >= 0 && c.zero <= 3, fmt::format("zero must be 0, 1, 2 or 3 (got {})", c.zero));
  need(c.bucket_mb > 0, "bucket_mb must be positive");
  need(c.loss_spike >= 0 && std::isfinite(c.loss_spike),
       fmt::format("loss_spike must be a number >= 0 (got {}; 0 turns the warning off)", c.loss_spike));
  need(c.collective_timeout > 0 && std::isfinite(c.collective_timeout),
       fmt::format("collective_timeout must be a positive number of seconds (got {}; 300 is the default)",
                   c.collective_timeout));
  validate_dp_mode_config(c);
  const ModelConfig& m = c.model;
  need(m.dim != 0 || m.n_layers != 0 || m.n_heads != 0 || m.ffn_dim != 0 || m.seq_len != 0,
       "the model's shape is not set (dim, n_layers, n_heads, ffn_dim and seq_len are all 0): pass --config "
       "with a model file such as configs/tiny.toml, or --init-from DIR to start from a model's weights");
  ModelConfig probe = c.model;
  // A vocab_size of 0 comes from the tokenizer later (and is checked then); check the rest now.
  if (probe.vocab_size == 0) probe.vocab_size = c.tp;
  probe.validate();
  validate_tensor_parallel(probe, c.tp, c.sp);
  validate_moe_layout(c);
}

std::vector<std::string> config_warnings(const TrainConfig& c) {
  std::vector<std::string> w;
  // A weight matrix scales its input by about init_std x sqrt(dim); far above 1 the first losses
  // are hundreds (init_std 10 at dim 64 starts near 255) and training spends its steps undoing it.
  const double gain = c.model.init_std * std::sqrt(double(c.model.dim));
  if (gain > 4)
    w.push_back(fmt::format("init_std = {} is large for dim = {}: each weight matrix multiplies its input's scale by "
                            "about init_std x sqrt(dim) = {:.3g}, so the first losses are far above ln(vocab); "
                            "0.02 is usual (at most {:.3g} here)",
                            c.model.init_std, c.model.dim, gain, 4 / std::sqrt(double(c.model.dim))));
  if (c.warmup_steps >= c.steps && c.warmup_steps > 0)
    w.push_back(fmt::format("warmup_steps = {} >= steps = {}: the learning rate rises for the whole run and never "
                            "reaches lr = {} (it ends at {:.3g}); make warmup_steps smaller than steps, e.g. {} (0 = no warmup)",
                            c.warmup_steps, c.steps, c.lr, double(c.lr) * c.steps / c.warmup_steps,
                            std::max(0, c.steps / 10)));
  return w;
}

}  // namespace ff
