// Which ISA tier of fivefold's own kernels runs (kernels/cpu_isa.h): the pick from the CPU's
// facts and FIVEFOLD_MAX_CPU_ISA, and the process's pick against /proc/cpuinfo's flags, read
// here independently of cpuid.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>

#include "kernels/cpu_isa.h"

namespace {

using ff::KernelIsa;
using ff::pick_kernel_isa;

TEST(KernelIsa, TheCpusBestTierLoweredButNeverRaisedByTheVariable) {
  EXPECT_EQ(pick_kernel_isa(false, false, nullptr), KernelIsa::base);
  EXPECT_EQ(pick_kernel_isa(true, false, nullptr), KernelIsa::avx512);
  EXPECT_EQ(pick_kernel_isa(true, true, nullptr), KernelIsa::avx512_bf16);
  EXPECT_EQ(pick_kernel_isa(false, true, nullptr), KernelIsa::base);  // bf16 dot products need AVX-512
  EXPECT_EQ(pick_kernel_isa(true, true, ""), KernelIsa::avx512_bf16);  // set but empty: unset
  EXPECT_EQ(pick_kernel_isa(true, true, "avx512"), KernelIsa::avx512);
  EXPECT_EQ(pick_kernel_isa(true, true, "base"), KernelIsa::base);
  EXPECT_EQ(pick_kernel_isa(true, false, "avx512_bf16"), KernelIsa::avx512);
  EXPECT_EQ(pick_kernel_isa(false, false, "avx512_bf16"), KernelIsa::base);
}

TEST(KernelIsa, AnUnknownValueIsRefusedNamingTheVariableAndItsValues) {
  for (const char* bad : {"avx2", "AVX512", "x86-64-v3", "avx512 "}) {
    try {
      pick_kernel_isa(true, true, bad);
      FAIL() << bad << " accepted";
    } catch (const std::invalid_argument& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(std::string("FIVEFOLD_MAX_CPU_ISA=") + bad), std::string::npos) << what;
      EXPECT_NE(what.find("base, avx512 or avx512_bf16"), std::string::npos) << what;
    }
  }
}

TEST(KernelIsa, NamesAreTheVariablesValues) {
  for (KernelIsa t : {KernelIsa::base, KernelIsa::avx512, KernelIsa::avx512_bf16})
    EXPECT_EQ(pick_kernel_isa(true, true, ff::kernel_isa_name(t)), t);
}

// The flags the kernel reports for the first CPU (it lists only what the OS saves state for).
std::set<std::string> cpuinfo_flags() {
  std::ifstream in("/proc/cpuinfo");
  std::set<std::string> flags;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("flags", 0) != 0) continue;
    std::istringstream words(line.substr(line.find(':') + 1));
    for (std::string w; words >> w;) flags.insert(w);
    break;
  }
  return flags;
}

TEST(KernelIsa, ThisProcessPicksWhatProcCpuinfoSays) {
  const std::set<std::string> f = cpuinfo_flags();
  if (f.empty()) GTEST_SKIP() << "no /proc/cpuinfo flags line on this system";
  bool avx512 = true;
  for (const char* need : {"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"}) avx512 = avx512 && f.count(need);
  const KernelIsa cpu = !avx512 ? KernelIsa::base : f.count("avx512_bf16") ? KernelIsa::avx512_bf16 : KernelIsa::avx512;
  const char* cap = std::getenv("FIVEFOLD_MAX_CPU_ISA");
  KernelIsa want = cpu;
  if (cap && std::string(cap) == "base") want = KernelIsa::base;
  if (cap && std::string(cap) == "avx512" && cpu == KernelIsa::avx512_bf16) want = KernelIsa::avx512;
  EXPECT_EQ(ff::kernel_isa_name(ff::kernel_isa()), std::string(ff::kernel_isa_name(want)));
  // The build's own tier runs here, so it cannot be above what the CPU has.
  EXPECT_LE(int(ff::build_kernel_isa()), int(cpu));
}

}  // namespace
