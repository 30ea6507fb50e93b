#include <unistd.h>

#include <cstdio>
#include <stdexcept>

#include "cli/commands.h"
#include "io/output_dir.h"
#include "io/corpus/prepare.h"

namespace ff::cli {

namespace {

const char* const kUsage =
    "fivefold prepare --input PATH [--input PATH ...] --out DIR [--overwrite]\n"
    "  --overwrite: replace the data DIR already holds; without it such a DIR is refused\n"
    "  inputs: files, folders (recursed) or globs; gzip/zstd detected by content; --text FILE = --input FILE\n"
    "  --format auto|text|jsonl|prompt-completion   (auto: .jsonl/.json is jsonl, else text)\n"
    "  text:  a blank line ends a document, or --doc-separator LINE, or --one-doc-per-line\n"
    "  jsonl: --text-field text; prompt-completion: --prompt-field prompt --completion-field completion\n"
    "  --on-bad-record fatal|skip   --max-record-mb 64\n"
    "  --tokenizer FILE (a .model or tokenizer.json, reused) | --vocab 4096 --tokenizer-sample-mb 256 (train one)\n"
    "  --val-fraction 0.05 | --val-docs N   --threads 0 (every core)   --shard-tokens 268435456";

CorpusOptions corpus_options(const Args& a) {
  CorpusOptions c;
  const std::string format = a.get("format", "auto");
  if (format == "text") {
    c.format = CorpusFormat::text;
  } else if (format == "jsonl") {
    c.format = CorpusFormat::jsonl;
  } else if (format == "prompt-completion") {
    c.format = CorpusFormat::jsonl;
    c.prompt_completion = true;
  } else if (format != "auto") {
    throw std::runtime_error("prepare: --format " + format + " is unknown; use auto, text, jsonl or prompt-completion");
  }
  if (a.has("one-doc-per-line") && a.get("one-doc-per-line") != "false") c.split = TextSplit::line;
  if (a.has("doc-separator")) {
    if (c.split == TextSplit::line) {
      throw std::runtime_error("prepare: --doc-separator and --one-doc-per-line exclude each other; pass one");
    }
    c.split = TextSplit::separator;
    c.separator = a.get("doc-separator");
  }
  c.text_field = a.get("text-field", c.text_field);
  if (a.has("prompt-field") || a.has("completion-field")) c.prompt_completion = true;
  c.prompt_field = a.get("prompt-field", c.prompt_field);
  c.completion_field = a.get("completion-field", c.completion_field);
  const std::string bad = a.get("on-bad-record", "fatal");
  if (bad != "fatal" && bad != "skip") {
    throw std::runtime_error("prepare: --on-bad-record " + bad + " is unknown; use fatal or skip");
  }
  c.on_bad_record = bad == "skip" ? BadRecordPolicy::skip : BadRecordPolicy::fatal;
  c.max_record_bytes = size_t(a.get_int("max-record-mb", 64, 1, 4096, "the longest line or document, in MiB")) << 20;
  return c;
}

}  // namespace

int cmd_prepare(const Args& a) {
  if (a.help) return std::puts(kUsage), 0;
  a.only({"input", "text", "out", "vocab", "tokenizer", "tokenizer-sample-mb", "format", "doc-separator",
          "one-doc-per-line", "text-field", "prompt-field", "completion-field", "on-bad-record",
          "max-record-mb", "val-fraction", "val-docs", "threads", "shard-tokens", "overwrite"},
         kUsage);
  PrepareOptions o;
  for (const auto& [key, value] : a.options) {
    if (key == "input" || key == "text") o.inputs.push_back(value);
  }
  if (o.inputs.empty()) throw std::runtime_error(std::string("missing --input (or --text)\nusage: ") + kUsage);
  o.out_dir = a.require("out", kUsage);
  o.corpus = corpus_options(a);
  o.tokenizer = a.get("tokenizer");
  if (!o.tokenizer.empty() && a.has("vocab")) {
    throw std::runtime_error("prepare: --vocab sizes a tokenizer to train, but --tokenizer reuses one; pass one of them");
  }
  o.vocab_size = a.get_int("vocab", 4096);
  o.tokenizer_sample_bytes =
      uint64_t(a.get_int("tokenizer-sample-mb", 256, 1, 1 << 20, "text the tokenizer trains on, in MB")) << 20;
  if (a.has("val-docs") && a.has("val-fraction")) {
    throw std::runtime_error("prepare: --val-docs and --val-fraction both choose the validation split; pass one");
  }
  o.val_fraction = a.get_double("val-fraction", 0.05);
  o.val_docs = uint64_t(a.get_int("val-docs", 0, 0, 1 << 30, "documents held out for validation"));
  o.threads = a.get_int("threads", 0, 0, 4096, "encoder threads; 0 takes every core");
  o.shard_tokens = uint64_t(a.get_int("shard-tokens", 1 << 28, 1, 1 << 30, "tokens per shard before the next begins"));
  o.progress = ::isatty(STDERR_FILENO);
  const OutputFolder folder =
      claim_output_dir(o.out_dir, "--out", {FolderKind::data, "prepare", false, a.get_flag("overwrite")});

  const PrepareResult r = prepare_corpus(o);
  for (const std::string& where : r.first_bad_records) std::fprintf(stderr, "skipped bad record %s\n", where.c_str());
  const double s = r.tokenizer_seconds + r.encode_seconds;
  std::printf(
      "prepared %s: vocab %d, %llu train documents (%llu tokens, %zu shards), %llu val documents "
      "(%llu tokens); %llu empty documents and %llu bad records skipped; %.1f MB in %.1f s "
      "(encoding %.1f MB/s, %.0f tokens/s)\n",
      o.out_dir.c_str(), r.vocab_size, (unsigned long long)r.train_documents, (unsigned long long)r.train_tokens,
      r.train_paths.size(), (unsigned long long)r.val_documents, (unsigned long long)r.val_tokens,
      (unsigned long long)r.empty_documents, (unsigned long long)r.bad_records, double(r.input_bytes) / 1e6, s,
      r.encode_seconds > 0 ? double(r.input_bytes) / 1e6 / r.encode_seconds : 0.0,
      r.encode_seconds > 0 ? double(r.train_tokens + r.val_tokens) / r.encode_seconds : 0.0);
  return 0;
}

}  // namespace ff::cli
