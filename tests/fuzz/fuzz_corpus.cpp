// Corpus files as prepare reads them (plain jsonl, gzip, zstd): a damaged copy yields documents
// or is refused naming the file, whatever the damage; never a crash or a hang.
#include <zlib.h>
#include <zstd.h>

#include <string>

#include "fuzz_util.h"
#include "io/corpus/document_reader.h"

using namespace ff;
using namespace ff::fuzz;

namespace {

std::string gzip_of(const std::string& plain) {
  uLongf n = compressBound(uLong(plain.size())) + 32;
  std::string out(n, '\0');
  z_stream z{};
  deflateInit2(&z, 6, Z_DEFLATED, 16 + 15, 8, Z_DEFAULT_STRATEGY);
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(plain.data()));
  z.avail_in = uInt(plain.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = uInt(out.size());
  deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

std::string zstd_of(const std::string& plain) {
  std::string out(ZSTD_compressBound(plain.size()), '\0');
  out.resize(ZSTD_compress(out.data(), out.size(), plain.data(), plain.size(), 3));
  return out;
}

}  // namespace

TEST(FuzzCorpus, DamagedCorpusFilesGiveDocumentsOrARefusalNamingTheFile) {
  const Scratch scratch;
  std::string plain;
  for (int i = 0; i < 200; ++i) {
    plain += "{\"text\": \"document " + std::to_string(i) + " caf\\u00e9\", \"n\": " + std::to_string(i) + "}\n";
  }
  const std::string goods[] = {plain, gzip_of(plain), zstd_of(plain)};
  const std::string path = scratch.path() + "/case.jsonl";
  RngState rng{29001, 0};
  int accepted = 0;
  for (int i = 0; i < 600; ++i) {
    write_bytes(path, mutate(goods[i % 3], rng));
    CorpusOptions o;
    o.on_bad_record = i % 2 ? BadRecordPolicy::skip : BadRecordPolicy::fatal;
    o.max_record_bytes = size_t(1) << 20;
    if (run_case(path, [&] {
          DocumentReader reader({path}, o);
          for (Document d; reader.next(d);) {}
        }) == Outcome::accepted) {
      ++accepted;
    }
  }
  RecordProperty("accepted", accepted);
}
