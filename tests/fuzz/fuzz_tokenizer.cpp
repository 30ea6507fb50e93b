// tokenizer.model: a damaged copy is refused naming the file, or it loads with a checksum that
// differs from the original's, which is what shards and checkpoints compare (a tokenizer of the
// same size but other pieces used to pass every check).
#include <string>
#include <vector>

#include "fuzz_util.h"
#include "io/tokenizer/sentencepiece_tokenizer.h"

using namespace ff;
using namespace ff::fuzz;

TEST(FuzzTokenizer, DamagedModelsAreRefusedOrCarryAnotherChecksum) {
  const Scratch scratch;
  const std::string dir = scratch.path();
  std::string text;
  for (int i = 0; i < 300; ++i) {
    text += "And the LORD spake unto Moses, saying " + std::to_string(i % 17) + ".\n";
  }
  write_bytes(dir + "/text.txt", text);
  SentencePieceTokenizer::train(dir + "/text.txt", 300, dir + "/tok");
  const std::string good = read_bytes(dir + "/tok.model");
  const uint64_t good_sum = SentencePieceTokenizer(dir + "/tok.model").checksum();
  const std::string path = dir + "/case.model";
  RngState rng{16005, 0};
  int loaded = 0;
  for (int i = 0; i < 300; ++i) {
    const std::string bad = mutate(good, rng);
    write_bytes(path, bad);
    if (run_case(path, [&] {
          SentencePieceTokenizer t(path);
          if (bad != good) {
            ASSERT_NE(t.checksum(), good_sum) << "case " << i;
          }
          // Whatever parsed must still encode and decode without crashing.
          const std::vector<int32_t> ids = t.encode("And the LORD said");
          (void)t.decode(ids);
        }) == Outcome::accepted) {
      ++loaded;
    }
  }
  RecordProperty("loaded", loaded);
}
