// Which tokens each cp rank holds (head-tail and contiguous), the rows it is handed, and every
// bad-input refusal naming its key before any work.
#include <gtest/gtest.h>

#include <functional>

#include "parallel/context/context_layout.h"
#include "test_data.h"
#include "train/train_config.h"

using namespace ff;

namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

TEST(ContextLayout, HeadTailGivesRankRChunksRAndTheirMirror) {
  // T = 16, cp = 2: chunks of 4; rank 0 holds chunks 0 and 3, rank 1 chunks 1 and 2.
  const ContextLayout r0(2, 0, 16, CpBalance::headtail), r1(2, 1, 16, CpBalance::headtail);
  EXPECT_EQ(r0.positions(), (std::vector<int>{0, 1, 2, 3, 12, 13, 14, 15}));
  EXPECT_EQ(r1.positions(), (std::vector<int>{4, 5, 6, 7, 8, 9, 10, 11}));
  const ContextLayout c1(2, 1, 16, CpBalance::contiguous);
  EXPECT_EQ(c1.positions(), (std::vector<int>{8, 9, 10, 11, 12, 13, 14, 15}));
  // Every position is held by exactly one rank, for cp = 4 too.
  std::vector<int> seen(32, 0);
  for (int r = 0; r < 4; ++r)
    for (int p : ContextLayout(4, r, 32, CpBalance::headtail).positions()) ++seen[size_t(p)];
  EXPECT_EQ(seen, std::vector<int>(32, 1));
}

TEST(ContextLayout, RowsOfEverySequence) {
  const ContextLayout r1(2, 1, 8, CpBalance::headtail);  // chunks 1 and 2 of 4: positions 2..5
  const std::vector<int32_t> full = {0, 1, 2, 3, 4, 5, 6, 7, 10, 11, 12, 13, 14, 15, 16, 17};
  std::vector<int32_t> local(8);
  r1.take_rows(full.data(), 2, local.data());
  EXPECT_EQ(local, (std::vector<int32_t>{2, 3, 4, 5, 12, 13, 14, 15}));
}

TrainConfig tiny(std::vector<std::pair<std::string, std::string>> overrides) {
  return load_train_config(testkit::config_path("tiny.toml"), overrides);
}

TEST(ContextLayout, BadInputNamesTheKeyAndTheFix) {
  // tiny: seq_len 32, 4 heads over 2 kv heads.
  std::string e = error_of([] { validate_train_config(tiny({{"cp", "3"}})); });
  EXPECT_NE(e.find("seq_len (32) must divide by 2 x cp = 6"), std::string::npos) << e;
  e = error_of([] { validate_train_config(tiny({{"cp", "4"}, {"cp_comm", "a2a"}})); });
  EXPECT_NE(e.find("cp_comm = a2a"), std::string::npos) << e;
  EXPECT_NE(e.find("n_kv_heads (2)"), std::string::npos) << e;
  EXPECT_EQ(error_of([] { validate_train_config(tiny({{"cp", "2"}, {"cp_comm", "a2a"}})); }), "");
  // Under tp = 2 a rank holds 2 heads over 1 kv head: a2a over cp = 2 no longer divides.
  e = error_of([] { validate_train_config(tiny({{"cp", "2"}, {"tp", "2"}, {"cp_comm", "a2a"}})); });
  EXPECT_NE(e.find("tp = 2"), std::string::npos) << e;
  e = error_of([] { validate_train_config(tiny({{"cp", "2"}, {"cp_comm", "ulysses"}})); });
  EXPECT_NE(e.find("'cp_comm'"), std::string::npos) << e;
  e = error_of([] { validate_train_config(tiny({{"cp", "2"}, {"cp_balance", "zigzag"}})); });
  EXPECT_NE(e.find("'cp_balance'"), std::string::npos) << e;
  e = error_of([] { validate_train_config(tiny({{"cp", "0"}})); });
  EXPECT_NE(e.find("'cp'"), std::string::npos) << e;
  // cp x the other degrees must divide the ranks started.
  e = error_of([] {
    TrainConfig c = tiny({{"cp", "2"}});
    resolve_layout(c, 3);
  });
  EXPECT_NE(e.find("cp (2)"), std::string::npos) << e;
}

}  // namespace
