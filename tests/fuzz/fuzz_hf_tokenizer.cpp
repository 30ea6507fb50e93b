// tokenizer.json: damaged bytes and, more to the point, well-formed JSON with a value changed
// anywhere (a key removed, a type swapped, an id out of range, a string from the set the reader
// switches on) must either load and then encode and decode without crashing, or be refused with a
// sentence naming the file.
#include <string>
#include <vector>

#include "fuzz_util.h"
#include "io/tokenizer/tokenizer.h"
#include "tiny_hf_tokenizers.h"

using namespace ff;
using namespace ff::fuzz;

namespace {

const char* const kTexts[] = {"hello  world<|endoftext|> HE'S 12345\n", "hi 😀</s> hé€ hi", "", " \t\r\n", "<s><s>"};

// Every JSON pointer in j (objects' keys and arrays' elements), the root included.
void collect_pointers(const nlohmann::json& j, const nlohmann::json::json_pointer& at,
                      std::vector<nlohmann::json::json_pointer>& out) {
  out.push_back(at);
  if (j.is_object())
    for (const auto& [k, v] : j.items()) collect_pointers(v, at / k, out);
  else if (j.is_array())
    for (size_t i = 0; i < j.size(); ++i) collect_pointers(j[i], at / i, out);
}

nlohmann::json replacement_value(RngState& rng) {
  static const char* strings[] = {"", "BPE", "WordPiece", "Sequence", "Split", "ByteLevel", "Metaspace",
                                  "Isolated", "Removed", "first", "never", "(", "\\p{L}+", "▁", " ",
                                  "<0xZZ>", "<s>", "A", "B", "ab cd", "a b c"};
  switch (rng.next_below(9)) {
    case 0: return nullptr;
    case 1: return true;
    case 2: return false;
    case 3: return int64_t(rng.next_below(300)) - 10;
    case 4: return int64_t(1) << (20 + rng.next_below(40));
    case 5: return 0.5;
    case 6: return nlohmann::json::array();
    case 7: return nlohmann::json::object();
    default: return strings[rng.next_below(std::size(strings))];
  }
}

// One structural change: a value replaced, a key or element removed, or a subtree copied over
// another (so valid pieces land where they do not belong).
nlohmann::json mutate_json(nlohmann::json j, RngState& rng) {
  std::vector<nlohmann::json::json_pointer> at;
  collect_pointers(j, nlohmann::json::json_pointer(), at);
  const auto& target = at[1 + rng.next_below(at.size() - 1)];
  switch (rng.next_below(3)) {
    case 0: j[target] = replacement_value(rng); break;
    case 1: {
      nlohmann::json& parent = j[target.parent_pointer()];
      if (parent.is_object()) parent.erase(target.back());
      else if (parent.is_array()) parent.erase(size_t(std::stoul(target.back())));
      break;
    }
    default: j[target] = nlohmann::json(j[at[rng.next_below(at.size())]]); break;
  }
  return j;
}

void open_and_use(const std::string& path) {
  const auto tok = open_tokenizer(path);
  for (const char* text : kTexts) {
    const std::vector<int32_t> ids = tok->encode(text);
    (void)tok->decode(ids);
  }
  (void)tok->document_prefix();
}

int mutate_and_open(const nlohmann::json& good, uint64_t seed, const std::string& dir) {
  const std::string path = dir + "/case.json";
  RngState rng{seed, 0};
  int accepted = 0;
  for (int i = 0; i < 600; ++i) {
    nlohmann::json j = mutate_json(good, rng);
    if (rng.next_below(3) == 0) j = mutate_json(j, rng);
    write_bytes(path, j.dump());
    if (run_case(path, [&] { open_and_use(path); }) == Outcome::accepted) ++accepted;
  }
  const std::string bytes = good.dump();
  for (int i = 0; i < 200; ++i) {
    write_bytes(path, mutate(bytes, rng));
    if (run_case(path, [&] { open_and_use(path); }) == Outcome::accepted) ++accepted;
  }
  return accepted;
}

}  // namespace

TEST(FuzzHfTokenizer, MutatedByteLevelJsonIsRefusedOrWorks) {
  const Scratch scratch;
  RecordProperty("accepted", mutate_and_open(ff::testing::tiny_byte_level_tokenizer_json(), 29001, scratch.path()));
}

TEST(FuzzHfTokenizer, MutatedSentencePieceJsonIsRefusedOrWorks) {
  const Scratch scratch;
  RecordProperty("accepted", mutate_and_open(ff::testing::tiny_sentencepiece_tokenizer_json(), 29002, scratch.path()));
}
