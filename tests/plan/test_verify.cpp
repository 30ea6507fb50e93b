// `fivefold verify`: zero on a correct layout, non-zero on one with an injected gradient-scale
// error (the norms catch it while the losses barely move), naming the first step.
#include <gtest/gtest.h>

#include <cstdlib>

#include "test_data.h"

using namespace ff::testkit;

namespace {
struct VerifyRun {
  int exit_code;
  std::string output;
};
VerifyRun verify(const std::string& layout, const char* inject) {
  ::setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
  ::setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
  if (inject) ::setenv("FIVEFOLD_VERIFY_INJECT", inject, 1);
  else ::unsetenv("FIVEFOLD_VERIFY_INJECT");
  const std::string cmd = std::string(MPIEXEC) + " --oversubscribe -np 2 " + FIVEFOLD_BIN + " verify --config " +
                          config_path("tiny.toml") + " --data " + tiny_data_dir() + " --layout \"" + layout +
                          "\" --steps 3 --threads 1 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  const int status = pclose(p);
  ::unsetenv("FIVEFOLD_VERIFY_INJECT");
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}
}  // namespace

TEST(Verify, CorrectLayoutPassesInjectedGradientScaleFails) {
  const VerifyRun ok = verify("tp=2,sp", nullptr);
  EXPECT_EQ(ok.exit_code, 0) << ok.output;
  EXPECT_NE(ok.output.find("every step within 1e-05"), std::string::npos) << ok.output;
  const VerifyRun bad = verify("dp=2,zero=1", "2");
  EXPECT_NE(bad.exit_code, 0) << bad.output;
  EXPECT_NE(bad.output.find("step 1 is past the tolerance"), std::string::npos) << bad.output;
  EXPECT_NE(bad.output.find("<- first step past tolerance"), std::string::npos) << bad.output;
}
