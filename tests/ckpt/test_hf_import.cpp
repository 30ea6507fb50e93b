// Hugging Face folders in and out: each family's config.json maps to the ModelConfig written out
// here by hand and back; sharded BF16/F16/F32 safetensors import to exactly the values the test
// stored; the import is weights-only and streamed (the ledger never holds more than about one
// tensor); export then import is bitwise; every refusal names the file, the key or tensor, the
// value and what is supported; a padded vocabulary serves sample, eval and export.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ckpt/export_hf.h"
#include "ckpt/hf_config.h"
#include "ckpt/import_hf.h"
#include "ckpt/meta.h"
#include "ckpt/sharded.h"
#include "ckpt/state_pieces.h"
#include "cli_runner.h"
#include "core/memory.h"
#include "hf_folder_fixture.h"
#include "io/tokenizer/tokenizer.h"
#include "io/tokens/token_shard.h"
#include "model/parameters.h"
#include "test_data.h"
#include "tiny_hf_tokenizers.h"

using namespace ff;
using namespace ff::testkit;
using namespace ff::testing;
namespace fs = std::filesystem;

namespace {

void write_text(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

// Tokenizer files with bytes a re-serialiser would change (key order, spacing, no final newline).
void write_tokenizer_files(const std::string& dir) {
  write_text(dir + "/tokenizer.json", tiny_byte_level_tokenizer_json().dump(1));
  write_text(dir + "/tokenizer_config.json", "{\"tokenizer_class\":  \"PreTrainedTokenizerFast\", \"model_max_length\": 7}");
  write_text(dir + "/special_tokens_map.json", "{\n   \"eos_token\": \"<|endoftext|>\"   }");
}
constexpr int kTokenizerVocab = 31;  // tiny_byte_level_tokenizer_json: 30 tokens and <|endoftext|>

nlohmann::json llama32() {  // Llama 3.2 1B's shape, shrunk: llama3 rope scaling, GQA, tied
  return {{"architectures", {"LlamaForCausalLM"}}, {"model_type", "llama"}, {"vocab_size", 40},
          {"hidden_size", 32}, {"intermediate_size", 48}, {"num_hidden_layers", 2}, {"num_attention_heads", 4},
          {"num_key_value_heads", 2}, {"head_dim", 8}, {"hidden_act", "silu"}, {"max_position_embeddings", 131072},
          {"rms_norm_eps", 1e-5}, {"rope_theta", 500000.0}, {"tie_word_embeddings", true},
          {"attention_bias", false}, {"mlp_bias", false}, {"bos_token_id", 128000}, {"eos_token_id", 128001},
          {"rope_scaling", {{"factor", 32.0}, {"high_freq_factor", 4.0}, {"low_freq_factor", 1.0},
                            {"original_max_position_embeddings", 8192}, {"rope_type", "llama3"}}},
          {"torch_dtype", "bfloat16"}};
}
nlohmann::json smollm2() {  // SmolLM2-135M's form: 3 heads over 1 kv head, tied, theta 1e5
  return {{"model_type", "llama"}, {"vocab_size", 40}, {"hidden_size", 24}, {"intermediate_size", 40},
          {"num_hidden_layers", 2}, {"num_attention_heads", 3}, {"num_key_value_heads", 1},
          {"max_position_embeddings", 8192}, {"rms_norm_eps", 1e-5}, {"rope_theta", 100000},
          {"rope_scaling", nullptr}, {"tie_word_embeddings", true}, {"hidden_act", "silu"}};
}
nlohmann::json tinyllama() {  // TinyLlama's form: untied, 4 query heads per kv head, Llama 2's theta
  return {{"model_type", "llama"}, {"vocab_size", 40}, {"hidden_size", 32}, {"intermediate_size", 64},
          {"num_hidden_layers", 2}, {"num_attention_heads", 4}, {"num_key_value_heads", 1},
          {"max_position_embeddings", 2048}, {"rms_norm_eps", 1e-5}, {"tie_word_embeddings", false}};
}
nlohmann::json qwen25() {  // Qwen2.5-0.5B's form: q/k/v bias, eps 1e-6, tied, window off
  return {{"architectures", {"Qwen2ForCausalLM"}}, {"model_type", "qwen2"}, {"vocab_size", 40},
          {"hidden_size", 32}, {"intermediate_size", 48}, {"num_hidden_layers", 2}, {"num_attention_heads", 4},
          {"num_key_value_heads", 2}, {"max_position_embeddings", 32768}, {"rms_norm_eps", 1e-6},
          {"rope_theta", 1000000.0}, {"tie_word_embeddings", true}, {"use_sliding_window", false},
          {"sliding_window", 32768}, {"max_window_layers", 21}, {"hidden_act", "silu"}};
}
nlohmann::json mistral() {
  return {{"model_type", "mistral"}, {"vocab_size", 40}, {"hidden_size", 32}, {"intermediate_size", 48},
          {"num_hidden_layers", 1}, {"num_attention_heads", 4}, {"num_key_value_heads", 2},
          {"max_position_embeddings", 32768}, {"rope_theta", 1000000.0}, {"sliding_window", nullptr}};
}
nlohmann::json own_head_dim() {  // head_dim 12 with hidden 32 / 4 heads = 8; linear scaling
  nlohmann::json j = tinyllama();
  j["head_dim"] = 12;
  j["rope_scaling"] = {{"type", "linear"}, {"factor", 2.0}};
  return j;
}

struct Expected {
  int vocab, dim, layers, heads, kv, ffn, seq_len, max_positions, head_size;
  float eps, theta;
  bool tied, qkv_bias;
  RopeScaling rope;
};

void expect_model(const ModelConfig& c, const Expected& e) {
  EXPECT_EQ(c.vocab_size, e.vocab);
  EXPECT_EQ(c.dim, e.dim);
  EXPECT_EQ(c.n_layers, e.layers);
  EXPECT_EQ(c.n_heads, e.heads);
  EXPECT_EQ(c.n_kv_heads, e.kv);
  EXPECT_EQ(c.ffn_dim, e.ffn);
  EXPECT_EQ(c.seq_len, e.seq_len);
  EXPECT_EQ(c.max_positions, e.max_positions);
  EXPECT_EQ(c.head_size, e.head_size);
  EXPECT_EQ(c.rms_eps, e.eps);
  EXPECT_EQ(c.rope_theta, e.theta);
  EXPECT_EQ(c.tied_embeddings, e.tied);
  EXPECT_EQ(c.qkv_bias, e.qkv_bias);
  EXPECT_TRUE(c.rope_scaling == e.rope) << int(c.rope_scaling.kind) << " " << c.rope_scaling.factor;
  EXPECT_FALSE(c.moe.enabled());
}

RopeScaling llama3_scaling() { return {RopeScalingKind::llama3, 32.0f, 1.0f, 4.0f, 8192}; }

TEST(HfConfig, EachFamilyMapsToTheModelAndBack) {
  struct Case {
    const char* name;
    nlohmann::json cfg;
    Expected e;
    const char* architecture;
  };
  const std::vector<Case> cases = {
      {"llama3.2", llama32(), {40, 32, 2, 4, 2, 48, 2048, 131072, 0, 1e-5f, 500000.0f, true, false, llama3_scaling()},
       "LlamaForCausalLM"},
      {"smollm2", smollm2(), {40, 24, 2, 3, 1, 40, 2048, 8192, 0, 1e-5f, 100000.0f, true, false, {}}, "LlamaForCausalLM"},
      {"tinyllama", tinyllama(), {40, 32, 2, 4, 1, 64, 2048, 0, 0, 1e-5f, 10000.0f, false, false, {}}, "LlamaForCausalLM"},
      {"qwen2.5", qwen25(), {40, 32, 2, 4, 2, 48, 2048, 32768, 0, 1e-6f, 1e6f, true, true, {}}, "Qwen2ForCausalLM"},
      // MistralConfig and LlamaConfig default rms_norm_eps to 1e-6.
      {"mistral", mistral(), {40, 32, 1, 4, 2, 48, 2048, 32768, 0, 1e-6f, 1e6f, false, false, {}}, "LlamaForCausalLM"},
      {"head_dim", own_head_dim(),
       {40, 32, 2, 4, 1, 64, 2048, 0, 12, 1e-5f, 10000.0f, false, false, {RopeScalingKind::linear, 2.0f}},
       "LlamaForCausalLM"},
  };
  for (const Case& k : cases) {
    SCOPED_TRACE(k.name);
    const HfModel m = model_config_from_hf(k.cfg, "dir/config.json");
    EXPECT_EQ(m.family, k.cfg["model_type"]);
    EXPECT_EQ(m.max_position_embeddings, k.cfg["max_position_embeddings"]);
    expect_model(m.model, k.e);
    const nlohmann::json out = nlohmann::json::parse(hf_config_json(m.model, 1, 2, DType::f32).dump());
    EXPECT_EQ(out["architectures"][0], k.architecture);
    // max_position_embeddings is the model's context, not the training window.
    EXPECT_EQ(out["max_position_embeddings"], k.cfg["max_position_embeddings"]);
    EXPECT_EQ(out["vocab_size"], k.cfg["vocab_size"]);
    EXPECT_EQ(out["hidden_act"], "silu");
    if (k.e.qkv_bias) {
      EXPECT_EQ(out["model_type"], "qwen2");
      EXPECT_EQ(out["use_sliding_window"], false);
      EXPECT_EQ(out["sliding_window"], k.cfg["max_position_embeddings"]);  // as Qwen2.5's configs: off anyway
      EXPECT_EQ(out["max_window_layers"], k.e.layers);
      EXPECT_EQ(out["rms_norm_eps"], 1e-6);  // the shortest decimal of the float, as Qwen writes it
    } else {
      EXPECT_EQ(out["model_type"], "llama");
      EXPECT_EQ(out["attention_bias"], false);
      EXPECT_EQ(out["mlp_bias"], false);
    }
    if (k.e.rope.kind == RopeScalingKind::llama3) {
      const nlohmann::json want = {{"rope_type", "llama3"}, {"factor", 32.0}, {"low_freq_factor", 1.0},
                                   {"high_freq_factor", 4.0}, {"original_max_position_embeddings", 8192}};
      EXPECT_EQ(out["rope_scaling"], want);
    } else if (k.e.rope.kind == RopeScalingKind::linear) {
      EXPECT_EQ(out["rope_scaling"], (nlohmann::json{{"rope_type", "linear"}, {"factor", 2.0}}));
    } else {
      EXPECT_TRUE(out["rope_scaling"].is_null());
    }
    EXPECT_EQ(out["head_dim"], k.e.head_size ? k.e.head_size : k.e.dim / k.e.heads);
    // And back: every field the same.
    expect_model(model_config_from_hf(out, "exported/config.json").model, k.e);
  }
}

// Each refusal: the file, the key, its value and what is supported, all in one message.
TEST(HfConfig, UnsupportedConfigsAreRefusedByFileKeyAndValue) {
  struct Case {
    const char* name;
    std::function<nlohmann::json()> make;
    std::vector<std::string> words;
  };
  auto with = [](nlohmann::json j, const char* key, nlohmann::json v) {
    j[key] = std::move(v);
    return j;
  };
  auto rope = [&](const char* type) {
    return with(llama32(), "rope_scaling", {{"rope_type", type}, {"factor", 4.0}});
  };
  const std::vector<Case> cases = {
      {"model_type", [&] { return with(llama32(), "model_type", "gpt2"); },
       {"'model_type'", "\"gpt2\"", "llama", "mistral", "qwen2"}},
      {"yarn", [&] { return rope("yarn"); }, {"'rope_scaling.rope_type'", "\"yarn\"", "llama3", "linear"}},
      {"dynamic", [&] { return rope("dynamic"); }, {"'rope_scaling.rope_type'", "\"dynamic\"", "llama3"}},
      {"longrope", [&] { return rope("longrope"); }, {"'rope_scaling.rope_type'", "\"longrope\"", "llama3"}},
      {"old type key", [&] { return with(llama32(), "rope_scaling", {{"type", "yarn"}, {"factor", 4.0}}); },
       {"'rope_scaling.type'", "\"yarn\""}},
      {"llama3 incomplete",
       [&] { return with(llama32(), "rope_scaling", {{"rope_type", "llama3"}, {"factor", 8.0}}); },
       {"'rope_scaling'", "low_freq_factor"}},
      {"mistral window", [&] { return with(mistral(), "sliding_window", 4096); },
       {"'sliding_window'", "4096", "null", "32768"}},
      {"mistral default window", [&] {
         nlohmann::json j = mistral();
         j.erase("sliding_window");
         return j;
       },
       {"'sliding_window'", "4096"}},
      {"qwen2 window", [&] { return with(qwen25(), "use_sliding_window", true); },
       {"'use_sliding_window'", "true", "false"}},
      {"attention_bias", [&] { return with(llama32(), "attention_bias", true); },
       {"'attention_bias'", "true", "attention_bias false"}},
      {"mlp_bias", [&] { return with(qwen25(), "mlp_bias", true); }, {"'mlp_bias'", "true", "mlp_bias false"}},
      {"hidden_act", [&] { return with(tinyllama(), "hidden_act", "gelu"); }, {"'hidden_act'", "\"gelu\"", "silu"}},
      {"quantization", [&] { return with(tinyllama(), "quantization_config", {{"quant_method", "gptq"}}); },
       {"'quantization_config'", "gptq", "F32, BF16 or F16"}},
  };
  for (const Case& k : cases) {
    SCOPED_TRACE(k.name);
    // Through the import of a folder without any safetensors: the config is refused first.
    const std::string dir = temp_dir("hf_refuse");
    std::ofstream(dir + "/config.json") << k.make().dump();
    write_tokenizer_files(dir);
    try {
      import_hugging_face(dir, temp_dir("hf_refuse_out"));
      ADD_FAILURE() << "imported";
    } catch (const std::exception& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find(dir + "/config.json"), std::string::npos) << msg;
      EXPECT_NE(msg.find("supports"), std::string::npos) << msg;
      for (const std::string& w : k.words) EXPECT_NE(msg.find(w), std::string::npos) << w << " in: " << msg;
    }
  }
}

struct ReadBack {
  CheckpointMeta meta;
  std::vector<float> params;
};

ReadBack read_checkpoint(const std::string& run) {
  ReadBack r{checkpoint_meta_in(run), {}};
  const ParamLayout layout(r.meta.state.model);
  r.params.resize(layout.total());
  ShardedCheckpointReader reader(r.meta.dir);
  read_state_pieces(reader, layout, StateRuns{{{0, r.params.size(), r.params.data()}}, {}, {}}, true);
  return r;
}

bool layout_has(const ModelConfig& c, const std::string& name) {
  const ParamLayout layout(c);
  for (const ParamView& v : layout.views())
    if (v.name == name) return true;
  return false;
}

// Every family: two shards of BF16, F16 and F32 tensors in, the stored values out, weights only;
// export (sharded) then import is bitwise, tokenizer files byte for byte all the way.
void import_export_round_trip(const nlohmann::json& cfg, uint32_t seed) {
  const std::string hf = temp_dir("hf_in"), run = temp_dir("hf_run"), back = temp_dir("hf_back"),
                    again = temp_dir("hf_again");
  const bool tied = cfg.value("tie_word_embeddings", false);
  // A tied model's file may carry lm_head.weight too: transformers ties it away, so does import.
  const std::vector<HfTensor> tensors = family_tensors(cfg, {"BF16", "F16", "F32"}, seed, /*with_head=*/tied);
  write_hf_folder(hf, cfg, tensors, 2);
  write_tokenizer_files(hf);
  const HfModel want = model_config_from_hf(cfg, "cfg");
  if (want.model.qkv_bias && !layout_has(want.model, "model.layers.0.self_attn.q_proj.bias"))
    GTEST_SKIP() << "this build's ParamLayout has no q/k/v bias tensors (the model side of qkv_bias is not merged)";

  const ImportResult r = import_hugging_face(hf, run);
  EXPECT_EQ(r.tokenizer_file, "tokenizer.json");
  const ReadBack a = read_checkpoint(run);
  EXPECT_TRUE(a.meta.state.weights_only);
  EXPECT_EQ(a.meta.state.step, 0);
  EXPECT_TRUE(describe_model_difference(a.meta.state.model, want.model).empty());
  EXPECT_EQ(a.meta.state.tokenizer_checksum, open_tokenizer(hf + "/tokenizer.json")->checksum());
  for (const ShardFileRecord& f : read_manifest(a.meta.dir).files)
    for (const PieceRecord& p : f.pieces) EXPECT_EQ(p.tensor.rfind("params/", 0), 0u) << p.tensor;
  const ParamLayout layout(want.model);
  size_t checked = 0;
  for (const HfTensor& t : tensors) {
    if (tied && t.name == "lm_head.weight") continue;
    const ParamView& v = layout.find(t.name);
    ASSERT_EQ(v.numel, t.expected.size()) << t.name;
    EXPECT_EQ(std::memcmp(a.params.data() + v.offset, t.expected.data(), v.numel * 4), 0) << t.name << " " << t.dtype;
    checked += v.numel;
  }
  EXPECT_EQ(checked, layout.total());
  EXPECT_EQ(r.params, layout.total());
  for (const char* f : {"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"})
    EXPECT_EQ(read_file(run + "/" + f), read_file(hf + "/" + f)) << f;
  EXPECT_FALSE(fs::exists(run + "/tokenizer.model"));

  // Export in shards of at most ~1/3 of the model, then import again: bitwise.
  const uint64_t shard = layout.total() * 4 / 3;
  export_hugging_face(back, a.meta.state.model, layout, a.params.data(), run + "/tokenizer.json", 1, 2, DType::f32,
                      shard);
  const nlohmann::json index = nlohmann::json::parse(read_file(back + "/model.safetensors.index.json"));
  EXPECT_EQ(index["metadata"]["total_size"], layout.total() * 4);
  std::set<std::string> files;
  for (const auto& e : index["weight_map"].items()) files.insert(e.value().get<std::string>());
  EXPECT_GE(files.size(), 3u);
  for (const std::string& f : files) EXPECT_LE(fs::file_size(back + "/" + f), shard + 4096) << f;
  EXPECT_FALSE(fs::exists(back + "/model.safetensors"));
  EXPECT_EQ(index["weight_map"].size(), layout.views().size());
  for (const char* f : {"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"})
    EXPECT_EQ(read_file(back + "/" + f), read_file(hf + "/" + f)) << f;
  const nlohmann::json exported = nlohmann::json::parse(read_file(back + "/config.json"));
  EXPECT_EQ(exported["model_type"], cfg["model_type"] == "qwen2" ? "qwen2" : "llama");
  import_hugging_face(back, again);
  const ReadBack b = read_checkpoint(again);
  EXPECT_TRUE(describe_model_difference(a.meta.state.model, b.meta.state.model).empty());
  EXPECT_EQ(std::memcmp(a.params.data(), b.params.data(), a.params.size() * 4), 0);
}

TEST(HfImport, Llama32RoundTrips) { import_export_round_trip(llama32(), 1); }
TEST(HfImport, SmolLM2RoundTrips) { import_export_round_trip(smollm2(), 2); }
TEST(HfImport, TinyLlamaRoundTrips) { import_export_round_trip(tinyllama(), 3); }
TEST(HfImport, MistralRoundTrips) { import_export_round_trip(mistral(), 4); }
TEST(HfImport, OwnHeadDimRoundTrips) { import_export_round_trip(own_head_dim(), 5); }
TEST(HfImport, Qwen25WithQkvBiasRoundTrips) { import_export_round_trip(qwen25(), 6); }

TEST(HfImport, SingleFileAndTokenizerModelBesideTokenizerJson) {
  // One model.safetensors; the folder has both tokenizer files (TinyLlama, Llama 2): tokenizer.json wins.
  const std::string hf = temp_dir("hf_single"), run = temp_dir("hf_single_run");
  const std::vector<HfTensor> tensors = family_tensors(tinyllama(), {"F32"}, 9);
  write_hf_folder(hf, tinyllama(), tensors, 1);
  write_tokenizer_files(hf);
  fs::copy_file(tiny_data_dir() + "/tokenizer.model", hf + "/tokenizer.model");
  import_hugging_face(hf, run);
  EXPECT_EQ(read_file(run + "/tokenizer.json"), read_file(hf + "/tokenizer.json"));
  EXPECT_FALSE(fs::exists(run + "/tokenizer.model"));
  const ReadBack a = read_checkpoint(run);
  EXPECT_EQ(std::memcmp(a.params.data(), tensors[0].expected.data(), tensors[0].expected.size() * 4), 0);
  // Only tokenizer.model: it is used.
  const std::string sp = temp_dir("hf_sp"), sp_run = temp_dir("hf_sp_run");
  nlohmann::json cfg = tinyllama();
  cfg["vocab_size"] = 320;  // the tiny corpus's SentencePiece vocabulary
  write_hf_folder(sp, cfg, family_tensors(cfg, {"BF16"}, 10), 1);
  fs::copy_file(tiny_data_dir() + "/tokenizer.model", sp + "/tokenizer.model");
  EXPECT_EQ(import_hugging_face(sp, sp_run).tokenizer_file, "tokenizer.model");
  EXPECT_EQ(read_file(sp_run + "/tokenizer.model"), read_file(sp + "/tokenizer.model"));
}

// A tensor missing, unknown, of another shape or dtype: refused naming the file and the tensor,
// before the run folder gets a checkpoint.
TEST(HfImport, BadTensorsAreRefusedByFileAndName) {
  struct Case {
    const char* name;
    std::function<void(std::vector<HfTensor>&)> edit;
    std::vector<std::string> words;
  };
  const std::vector<Case> cases = {
      {"missing", [](auto& t) { t.erase(t.begin() + 3); }, {"model.safetensors.index.json' lacks the tensor model.layers.0.self_attn.k_proj.weight"}},
      {"extra", [](auto& t) { t.push_back(t[1]), t.back().name = "model.layers.0.self_attn.o_proj.bias"; },
       {"model-0000", "model.layers.0.self_attn.o_proj.bias", "bias"}},
      {"unknown", [](auto& t) { t.push_back(t[1]), t.back().name = "model.vision_tower.weight"; },
       {"model-0000", "model.vision_tower.weight"}},
      {"shape", [](auto& t) { t[2].shape = {16, 64}; },
       {"model-00001-of-00002.safetensors", "model.layers.0.self_attn.q_proj.weight", "[16,64]", "[32,32]"}},
      {"dtype", [](auto& t) { t[1].dtype = "I32"; },
       {"model-00001-of-00002.safetensors", "model.layers.0.input_layernorm.weight", "I32", "F32, BF16 and F16"}},
  };
  for (const Case& k : cases) {
    SCOPED_TRACE(k.name);
    std::vector<HfTensor> tensors = family_tensors(tinyllama(), {"F32"}, 11);
    k.edit(tensors);
    const std::string hf = temp_dir("hf_bad"), run = temp_dir("hf_bad_run");
    write_hf_folder(hf, tinyllama(), tensors, 2);
    write_tokenizer_files(hf);
    try {
      import_hugging_face(hf, run);
      ADD_FAILURE() << "imported";
    } catch (const std::exception& e) {
      for (const std::string& w : k.words) EXPECT_NE(std::string(e.what()).find(w), std::string::npos) << w << " in: " << e.what();
    }
    EXPECT_FALSE(fs::exists(run + "/step_0"));
  }
}

// Streamed: the ledger's peak over an import stays at about one tensor (f32 plus its 16-bit
// source), though the model is many tensors; with a small chunk, at the chunk.
TEST(HfImport, PeakMemoryIsOneTensorNotTheModel) {
  nlohmann::json cfg = tinyllama();
  cfg["num_hidden_layers"] = 6;
  const std::vector<HfTensor> tensors = family_tensors(cfg, {"BF16"}, 12);
  const std::string hf = temp_dir("hf_peak");
  write_hf_folder(hf, cfg, tensors, 2);
  write_tokenizer_files(hf);
  size_t largest = 0, total = 0;
  for (const HfTensor& t : tensors) largest = std::max(largest, t.expected.size()), total += t.expected.size();
  ASSERT_GE(total, 10 * largest);
  auto peak_of = [&](const ImportOptions& opt) {
    MemoryLedger& ledger = MemoryLedger::instance();
    const int64_t before = ledger.snapshot().total_current;
    ledger.reset_peaks();
    import_hugging_face(hf, temp_dir("hf_peak_run"), opt);
    EXPECT_EQ(ledger.snapshot().total_current, before);
    return size_t(ledger.snapshot().total_peak - before);
  };
  const size_t whole = peak_of({});
  EXPECT_LE(whole, largest * 6 + 4096) << "f32 and bf16 copies of the largest tensor";
  EXPECT_GE(whole, largest * 4);
  EXPECT_LE(peak_of({1000}), size_t(6000 + 4096));
  const std::string chunked = temp_dir("hf_peak_chunked");
  import_hugging_face(hf, chunked, {1000});
  const ReadBack a = read_checkpoint(chunked);
  const ParamLayout layout(a.meta.state.model);
  for (const HfTensor& t : tensors)
    EXPECT_EQ(std::memcmp(a.params.data() + layout.find(t.name).offset, t.expected.data(), t.expected.size() * 4), 0)
        << t.name << " chunked";
}

// RNE to bf16 by integer arithmetic: add 0x7fff plus the lowest kept bit, drop 16 bits.
float rne_bf16_value(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  u = ((u + 0x7fffu + ((u >> 16) & 1u)) >> 16) << 16;
  std::memcpy(&x, &u, 4);
  return x;
}

// A bf16 export in shards holds one shard's rounded copy at a time (the ledger's peak), and
// imports back as the parameters rounded to nearest even.
TEST(HfExport, Bf16ShardsHoldOneShardAtATime) {
  nlohmann::json cfg = tinyllama();
  cfg["num_hidden_layers"] = 4;
  const ModelConfig c = model_config_from_hf(cfg, "cfg").model;
  const ParamLayout layout(c);
  std::vector<float> params(layout.total());
  std::mt19937 rng(21);
  std::normal_distribution<float> normal(0.0f, 0.3f);
  for (float& x : params) x = normal(rng);
  const std::string run = temp_dir("hf_bf16_src"), out = temp_dir("hf_bf16_out"), back = temp_dir("hf_bf16_back");
  write_tokenizer_files(run);
  const uint64_t shard = layout.total() * 2 / 4;  // about four shards of bf16
  MemoryLedger& ledger = MemoryLedger::instance();
  const int64_t before = ledger.snapshot().total_current;
  ledger.reset_peaks();
  export_hugging_face(out, c, layout, params.data(), run + "/tokenizer.json", -1, -1, DType::bf16, shard);
  const int64_t peak = ledger.snapshot().total_peak - before;
  EXPECT_LE(uint64_t(peak), shard + 4096) << "one shard's bf16 copy";
  EXPECT_GT(uint64_t(peak), 0u);
  const nlohmann::json index = nlohmann::json::parse(read_file(out + "/model.safetensors.index.json"));
  EXPECT_EQ(index["metadata"]["total_size"], layout.total() * 2);
  const nlohmann::json config = nlohmann::json::parse(read_file(out + "/config.json"));
  EXPECT_EQ(config["torch_dtype"], "bfloat16");
  EXPECT_TRUE(config["bos_token_id"].is_null());
  import_hugging_face(out, back);
  const ReadBack b = read_checkpoint(back);
  size_t bad = 0;
  for (size_t i = 0; i < params.size(); ++i) bad += b.params[i] != rne_bf16_value(params[i]);
  EXPECT_EQ(bad, 0u);
}

// A vocabulary padded past the tokenizer's (Qwen2.5) serves sample, eval and export; the padding
// rows' logits, made the largest here, are never sampled. A tokenizer larger than the model is
// refused by import and by sample.
TEST(HfImport, PaddedVocabularyServesAndALargerTokenizerIsRefused) {
  const std::string hf = temp_dir("hf_pad"), run = temp_dir("hf_pad_run");
  nlohmann::json cfg = tinyllama();  // vocab 40 > the tokenizer's 31
  cfg["max_position_embeddings"] = 16;  // eval's windows: seq_len 16
  std::vector<HfTensor> tensors = family_tensors(cfg, {"F32"}, 13);
  // lm_head rows 31..39 point along the final norm's output: their logits dominate every position.
  HfTensor& head = tensors.back();
  ASSERT_EQ(head.name, "lm_head.weight");
  HfTensor& norm = tensors[tensors.size() - 2];
  ASSERT_EQ(norm.name, "model.norm.weight");
  for (float& x : norm.expected) x = 1.0f;
  for (size_t i = 0; i < norm.expected.size(); ++i) std::memcpy(norm.bytes.data() + 4 * i, &norm.expected[i], 4);
  for (int row = kTokenizerVocab; row < 40; ++row)
    for (int c = 0; c < 32; ++c) {
      float x = 50.0f;
      std::memcpy(head.bytes.data() + 4 * (row * 32 + c), &x, 4);
    }
  write_hf_folder(hf, cfg, tensors, 1);
  write_tokenizer_files(hf);
  CliResult r = run_fivefold("import --hf " + hf + " --out " + run);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("weights only"), std::string::npos) << r.output;
  r = run_fivefold("sample --ckpt " + run + " --prompt hello --temperature 0 --max-tokens 6");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.rfind("hello", 0), 0u) << r.output;
  r = run_fivefold("sample --ckpt " + run + " --prompt hello --temperature 1 --top-k 0 --max-tokens 6 --seed 5");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto tok = open_tokenizer(run + "/tokenizer.json");
  std::vector<int32_t> ids;
  for (int i = 0; i < 200; ++i) ids.push_back(int32_t(i % kTokenizerVocab));
  write_token_shard(run + "/val.bin", ids, tok->vocab_size(), tok->checksum());
  r = run_fivefold("eval --ckpt " + run + " --data " + run + "/val.bin --batch 2");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("loss"), std::string::npos);
  r = run_fivefold("export --ckpt " + run + " --out " + temp_dir("hf_pad_out"));
  ASSERT_EQ(r.exit_code, 0) << r.output;

  // A long-context model (Llama 3.2: 131072) trains on a 2048 window unless told otherwise; said so.
  const std::string longer = temp_dir("hf_long");
  write_hf_folder(longer, llama32(), family_tensors(llama32(), {"BF16"}, 15), 1);
  write_tokenizer_files(longer);
  r = run_fivefold("import --hf " + longer + " --out " + temp_dir("hf_long_run"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("seq_len 2048 of the model's context 131072"), std::string::npos) << r.output;

  // The model's vocabulary smaller than the tokenizer's: import refuses naming both numbers.
  const std::string small = temp_dir("hf_small");
  cfg["vocab_size"] = 20;
  write_hf_folder(small, cfg, family_tensors(cfg, {"F32"}, 14), 1);
  write_tokenizer_files(small);
  r = run_fivefold("import --hf " + small + " --out " + temp_dir("hf_small_run"));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("31 tokens"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("vocab_size is 20"), std::string::npos) << r.output;
  // ... and so do sample, eval and export given such a run folder.
  fs::copy_file(hf + "/tokenizer.json", run + "/tokenizer.json", fs::copy_options::overwrite_existing);
  const std::string big = temp_dir("hf_big_tok");
  nlohmann::json many = tiny_byte_level_tokenizer_json();
  for (int i = 0; i < 20; ++i)
    many["added_tokens"].push_back({{"id", 31 + i}, {"content", "<extra_" + std::to_string(i) + ">"}, {"single_word", false},
                                    {"lstrip", false}, {"rstrip", false}, {"normalized", false}, {"special", true}});
  write_text(run + "/tokenizer.json", many.dump());
  r = run_fivefold("sample --ckpt " + run + " --prompt hello --max-tokens 2");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("vocabulary mismatch"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("has 51"), std::string::npos) << r.output;
}

}  // namespace
