// Corpus inputs (io/corpus): every format case a user brings, each either read into the
// documents written here or refused naming file:line and the fix.
#include <gtest/gtest.h>
#include <zlib.h>
#include <zstd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "io/corpus/byte_source.h"
#include "io/corpus/document_reader.h"
#include "io/corpus/input_paths.h"
#include "io/utf8.h"
#include "io_test_util.h"

using namespace ff;
using ff::testing::expect_error;
using ff::testing::read_all;
using ff::testing::TempDir;
using ff::testing::write_all;

namespace {

std::string gzip_bytes(const std::string& plain) {
  z_stream z{};
  EXPECT_EQ(deflateInit2(&z, 6, Z_DEFLATED, 16 + 15, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out(deflateBound(&z, uLong(plain.size())) + 64, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(plain.data()));
  z.avail_in = uInt(plain.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = uInt(out.size());
  EXPECT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

std::string zstd_bytes(const std::string& plain) {
  std::string out(ZSTD_compressBound(plain.size()), '\0');
  const size_t n = ZSTD_compress(out.data(), out.size(), plain.data(), plain.size(), 3);
  EXPECT_FALSE(ZSTD_isError(n));
  out.resize(n);
  return out;
}

std::vector<std::string> texts(const std::vector<std::string>& files, CorpusOptions o = {},
                               CorpusCounts* counts = nullptr) {
  DocumentReader reader(files, o);
  std::vector<std::string> out;
  for (Document d; reader.next(d);) out.push_back(d.text);
  if (counts) *counts = reader.counts();
  return out;
}

using Docs = std::vector<std::string>;

}  // namespace

TEST(CorpusUtf8, AcceptsWellFormedAndFindsTheFirstBadByte) {
  EXPECT_EQ(first_invalid_utf8("plain ascii"), std::string::npos);
  EXPECT_EQ(first_invalid_utf8("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"), std::string::npos);
  EXPECT_EQ(first_invalid_utf8("ab\xFF"), 2u);           // never in UTF-8
  EXPECT_EQ(first_invalid_utf8("a\xC0\x80"), 1u);        // overlong NUL
  EXPECT_EQ(first_invalid_utf8("a\xE0\x80\x80"), 1u);    // overlong 3-byte
  EXPECT_EQ(first_invalid_utf8("\xED\xA0\x80"), 0u);     // UTF-16 surrogate
  EXPECT_EQ(first_invalid_utf8("\xF4\x90\x80\x80"), 0u); // past U+10FFFF
  EXPECT_EQ(first_invalid_utf8("xy\xE2\x82"), 2u);       // cut short
  EXPECT_EQ(first_invalid_utf8("caf\xE9"), 3u);          // Latin-1
}

TEST(CorpusText, BlankLinesSeparatorsAndLinesEndDocuments) {
  TempDir dir;
  write_all(dir.file("a.txt"), "\nfirst para\nline two\n\n\n  \nsecond\n\nthird no newline");
  CorpusCounts c;
  EXPECT_EQ(texts({dir.file("a.txt")}, {}, &c), (Docs{"first para\nline two", "second", "third no newline"}));
  EXPECT_EQ(c.empty_documents, 0u);
  EXPECT_EQ(c.documents, 3u);

  write_all(dir.file("s.txt"), "one\n\nstill one\n<|end|>\ntwo\n<|end|>\n<|end|>\n");
  CorpusOptions sep;
  sep.split = TextSplit::separator;
  sep.separator = "<|end|>";
  EXPECT_EQ(texts({dir.file("s.txt")}, sep, &c), (Docs{"one\n\nstill one", "two"}));
  EXPECT_EQ(c.empty_documents, 1u);  // between the two separators

  CorpusOptions per_line;
  per_line.split = TextSplit::line;
  EXPECT_EQ(texts({dir.file("s.txt")}, per_line, &c),
            (Docs{"one", "still one", "<|end|>", "two", "<|end|>", "<|end|>"}));
  EXPECT_EQ(c.empty_documents, 1u);  // the empty line
  expect_error([&] { CorpusOptions o; o.split = TextSplit::separator; texts({dir.file("s.txt")}, o); },
               {"--doc-separator", "empty"});
}

TEST(CorpusText, CrlfAndByteOrderMarkReadAsPlainLf) {
  TempDir dir;
  write_all(dir.file("lf.txt"), "alpha\nbeta\n\ngamma\n");
  write_all(dir.file("crlf.txt"), "\xEF\xBB\xBF" "alpha\r\nbeta\r\n\r\ngamma\r\n");
  const Docs expect{"alpha\nbeta", "gamma"};
  EXPECT_EQ(texts({dir.file("lf.txt")}), expect);
  EXPECT_EQ(texts({dir.file("crlf.txt")}), expect);
  // A BOM only counts at the start of the file.
  write_all(dir.file("mid.txt"), "a\n\n\xEF\xBB\xBF" "b\n");
  EXPECT_EQ(texts({dir.file("mid.txt")}), (Docs{"a", "\xEF\xBB\xBF" "b"}));
}

TEST(CorpusJsonl, TextFieldEmptyDocumentsAndBlankLines) {
  TempDir dir;
  write_all(dir.file("d.jsonl"),
            "{\"text\": \"hello\\nworld\", \"id\": 1}\n\n{\"text\": \"\"}\n{\"text\": \"caf\\u00e9 \xF0\x9F\x98\x80\"}\r\n");
  CorpusCounts c;
  EXPECT_EQ(texts({dir.file("d.jsonl")}, {}, &c), (Docs{"hello\nworld", "caf\xC3\xA9 \xF0\x9F\x98\x80"}));
  EXPECT_EQ(c.empty_documents, 1u);
  EXPECT_EQ(c.bad_records, 0u);
  // Another field name; format by flag for a file whose name says nothing.
  write_all(dir.file("data.txt"), "{\"content\": \"x\"}\n");
  CorpusOptions o;
  o.format = CorpusFormat::jsonl;
  o.text_field = "content";
  EXPECT_EQ(texts({dir.file("data.txt")}, o), (Docs{"x"}));
}

TEST(CorpusJsonl, FormatFollowsTheNameWithoutItsCompression) {
  CorpusOptions o;
  EXPECT_EQ(format_of("a/b.jsonl", o), CorpusFormat::jsonl);
  EXPECT_EQ(format_of("b.json.gz", o), CorpusFormat::jsonl);
  EXPECT_EQ(format_of("b.jsonl.zst", o), CorpusFormat::jsonl);
  EXPECT_EQ(format_of("b.txt.zst", o), CorpusFormat::text);
  EXPECT_EQ(format_of("jsonl", o), CorpusFormat::text);
  o.format = CorpusFormat::text;
  EXPECT_EQ(format_of("b.jsonl", o), CorpusFormat::text);
}

TEST(CorpusJsonl, PromptCompletionPairs) {
  TempDir dir;
  write_all(dir.file("ft.jsonl"),
            "{\"q\": \"2+2?\", \"a\": \" 4\"}\n{\"q\": \"no answer\", \"a\": \"\"}\n{\"q\": \"\", \"a\": \"free\"}\n");
  CorpusOptions o;
  o.prompt_completion = true;
  o.prompt_field = "q";
  o.completion_field = "a";
  DocumentReader r({dir.file("ft.jsonl")}, o);
  Document d;
  ASSERT_TRUE(r.next(d));
  EXPECT_EQ(d.prompt, "2+2?");
  EXPECT_EQ(d.completion, " 4");
  EXPECT_EQ(d.where, dir.file("ft.jsonl") + ":1");
  ASSERT_TRUE(r.next(d));
  EXPECT_EQ(d.prompt, "");
  EXPECT_EQ(d.completion, "free");
  EXPECT_EQ(d.where, dir.file("ft.jsonl") + ":3");
  EXPECT_FALSE(r.next(d));
  EXPECT_EQ(r.counts().empty_documents, 1u);
  expect_error([&] { CorpusOptions p; p.prompt_completion = true; texts({dir.file("ft.jsonl")}, p); },
               {"ft.jsonl:1", "no field \"prompt\"", "a, q", "--prompt-field"});
}

TEST(CorpusInputs, FoldersRecurseSortedGlobsMatchAndMissingInputsAreRefused) {
  TempDir dir;
  namespace fs = std::filesystem;
  fs::create_directories(dir.path() / "c/b/z");
  fs::create_directories(dir.path() / "c/a");
  fs::create_directories(dir.path() / "c/.git");
  write_all(dir.file("c/b/z/3.txt"), "three\n");
  write_all(dir.file("c/b/1.txt"), "one\n");
  write_all(dir.file("c/a/2.jsonl"), "{\"text\": \"two\"}\n");
  write_all(dir.file("c/.git/x.txt"), "hidden\n");
  write_all(dir.file("c/.hidden.txt"), "hidden\n");
  const auto files = expand_inputs({dir.file("c")});
  EXPECT_EQ(files, (std::vector<std::string>{dir.file("c/a/2.jsonl"), dir.file("c/b/1.txt"),
                                             dir.file("c/b/z/3.txt")}));
  EXPECT_EQ(texts(files), (Docs{"two", "one", "three"}));
  // Specs keep their order; a glob's matches are sorted.
  EXPECT_EQ(expand_inputs({dir.file("c/b/z/3.txt"), dir.file("c/*/*.txt")}),
            (std::vector<std::string>{dir.file("c/b/z/3.txt"), dir.file("c/b/1.txt")}));
  expect_error([&] { expand_inputs({dir.file("nope.txt")}); }, {"nope.txt", "not found"});
  expect_error([&] { expand_inputs({dir.file("c/*.zst")}); }, {"*.zst", "matches no file"});
  fs::create_directories(dir.path() / "empty");
  expect_error([&] { expand_inputs({dir.file("empty")}); }, {"empty", "holds no file"});
}

TEST(CorpusCompression, GzipAndZstdAreDetectedByContentAndReadAsThePlainFile) {
  TempDir dir;
  std::string plain;
  for (int i = 0; i < 20000; ++i) plain += "{\"text\": \"doc " + std::to_string(i) + "\"}\n";
  write_all(dir.file("plain.jsonl"), plain);
  // Misleading names: the content decides. Two gzip members, as `cat a.gz b.gz` makes.
  write_all(dir.file("a.jsonl"), gzip_bytes(plain.substr(0, 1000)) + gzip_bytes(plain.substr(1000)));
  write_all(dir.file("b.jsonl.gz"), zstd_bytes(plain));
  EXPECT_EQ(detect_compression(dir.file("a.jsonl")), Compression::gzip);
  EXPECT_EQ(detect_compression(dir.file("b.jsonl.gz")), Compression::zstd);
  EXPECT_EQ(detect_compression(dir.file("plain.jsonl")), Compression::none);
  const Docs expect = texts({dir.file("plain.jsonl")});
  ASSERT_EQ(expect.size(), 20000u);
  EXPECT_EQ(expect[123], "doc 123");
  EXPECT_EQ(texts({dir.file("a.jsonl")}), expect);
  EXPECT_EQ(texts({dir.file("b.jsonl.gz")}), expect);
  // The progress counts compressed bytes, ending at the file sizes.
  DocumentReader r({dir.file("b.jsonl.gz")}, {});
  for (Document d; r.next(d);) {}
  EXPECT_EQ(r.file_bytes_read(), r.total_file_bytes());
}

TEST(CorpusCompression, TruncatedOrDamagedStreamsNameTheFileAndLine) {
  TempDir dir;
  std::string plain;
  for (int i = 0; i < 50000; ++i) plain += "line " + std::to_string(i) + " of the corpus\n\n";
  const std::string z = zstd_bytes(plain), g = gzip_bytes(plain);
  write_all(dir.file("cut.txt.zst"), z.substr(0, z.size() / 2));
  expect_error([&] { texts({dir.file("cut.txt.zst")}); },
               {"cut.txt.zst:", "zstd", "truncated", "re-create"});
  write_all(dir.file("cut.txt.gz"), g.substr(0, g.size() / 2));
  expect_error([&] { texts({dir.file("cut.txt.gz")}); }, {"cut.txt.gz:", "gzip", "truncated"});
  // Only the last byte missing still shows.
  write_all(dir.file("short.zst"), z.substr(0, z.size() - 1));
  expect_error([&] { texts({dir.file("short.zst")}); }, {"short.zst:", "truncated"});
  std::string damaged = g;
  for (size_t i = 100; i < 140; ++i) damaged[i] = char(damaged[i] ^ 0x55);
  write_all(dir.file("bad.gz"), damaged);
  expect_error([&] { texts({dir.file("bad.gz")}); }, {"bad.gz:", "gzip", "damaged"});
  // The line named is the one the reader had reached: past the first, for a cut in the middle.
  try {
    texts({dir.file("cut.txt.zst")});
  } catch (const std::runtime_error& e) {
    const std::string m = e.what();
    const size_t at = m.find("cut.txt.zst:") + std::string("cut.txt.zst:").size();
    EXPECT_GT(std::stoul(m.substr(at)), 1000u) << m;
  }
}

TEST(CorpusLines, TenMegabyteSingleLineAndTheRecordLimit) {
  TempDir dir;
  std::string big(10 << 20, 'x');
  for (size_t i = 0; i < big.size(); i += 97) big[i] = ' ';
  write_all(dir.file("big.txt"), "small\n\n" + big + "\n\nafter\n");
  EXPECT_EQ(texts({dir.file("big.txt")}), (Docs{"small", big, "after"}));
  write_all(dir.file("big.jsonl.zst"), zstd_bytes("{\"text\": \"" + big + "\"}\n"));
  EXPECT_EQ(texts({dir.file("big.jsonl.zst")}), (Docs{big}));
  CorpusOptions small;
  small.max_record_bytes = size_t(4) << 20;
  expect_error([&] { texts({dir.file("big.txt")}, small); },
               {"big.txt:3", "longer than 4 MiB", "--max-record-mb"});
  // A document of many short lines is bounded too.
  std::string many;
  for (int i = 0; i < 600000; ++i) many += "0123456789\n";
  write_all(dir.file("many.txt"), many);
  expect_error([&] { texts({dir.file("many.txt")}, small); },
               {"many.txt:", "document longer than 4 MiB", "--doc-separator"});
}

TEST(CorpusBadRecords, FatalByDefaultNamingFileLineProblemAndFix) {
  TempDir dir;
  const std::string f = dir.file("d.jsonl");
  write_all(f, "{\"text\": \"ok\"}\n{\"text\": \"ok\", oops}\n");
  expect_error([&] { texts({f}); }, {"d.jsonl:2", "bad JSON", "--on-bad-record skip"});
  write_all(f, "{\"text\": \"ok\"}\n{\"body\": \"x\", \"title\": \"y\"}\n");
  expect_error([&] { texts({f}); }, {"d.jsonl:2", "no field \"text\"", "body, title", "--text-field"});
  write_all(f, "{\"text\": 42}\n");
  expect_error([&] { texts({f}); }, {"d.jsonl:1", "\"text\" is a number", "not a string"});
  write_all(f, "[\"text\"]\n");
  expect_error([&] { texts({f}); }, {"d.jsonl:1", "array, not an object"});
  write_all(f, "{\"text\": \"ok\"}\n\n{\"text\": \"caf\xE9\"}\n");
  expect_error([&] { texts({f}); }, {"d.jsonl:3", "not valid UTF-8", "byte 14"});
  write_all(dir.file("t.txt"), "fine\n\nstill fine\nLatin-1 caf\xE9\n");
  expect_error([&] { texts({dir.file("t.txt")}); },
               {"t.txt:4", "not valid UTF-8", "iconv", "--on-bad-record skip"});
}

TEST(CorpusBadRecords, SkipCountsAndNamesTheFirstFew) {
  TempDir dir;
  const std::string f = dir.file("d.jsonl");
  std::string body;
  for (int i = 1; i <= 30; ++i) {
    body += i % 2 ? "{\"text\": \"doc " + std::to_string(i) + "\"}\n" : std::string("not json\n");
  }
  body += "{\"text\": \"\xC0\x80\"}\n{\"other\": 1}\n{\"text\": null}\n";
  write_all(f, body);
  CorpusOptions o;
  o.on_bad_record = BadRecordPolicy::skip;
  CorpusCounts c;
  const Docs docs = texts({f}, o, &c);
  ASSERT_EQ(docs.size(), 15u);
  EXPECT_EQ(docs.front(), "doc 1");
  EXPECT_EQ(docs.back(), "doc 29");
  EXPECT_EQ(c.bad_records, 18u);
  ASSERT_EQ(c.first_bad.size(), CorpusCounts::kFirstBadKept);
  EXPECT_EQ(c.first_bad[0].rfind(f + ":2: bad JSON", 0), 0u) << c.first_bad[0];
  EXPECT_EQ(c.first_bad[9].rfind(f + ":20: ", 0), 0u) << c.first_bad[9];
  // A text document with a bad line is skipped whole; the documents around it are kept.
  write_all(dir.file("t.txt"), "a\n\nb1\nb2 \xFF\nb3\n\nc\n");
  EXPECT_EQ(texts({dir.file("t.txt")}, o, &c), (Docs{"a", "c"}));
  EXPECT_EQ(c.bad_records, 1u);
  EXPECT_EQ(c.first_bad.at(0).rfind(dir.file("t.txt") + ":4: ", 0), 0u);
}
