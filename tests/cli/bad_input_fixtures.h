#pragma once
// What the bad-input tests share: a tiny training command, a finished run to point commands at,
// and the check that a command failed naming every given word.
#include <gtest/gtest.h>

#include <initializer_list>
#include <string>

#include "cli_runner.h"
#include "test_data.h"

namespace ff::testkit {

inline std::string tiny_train(const std::string& out, const std::string& extra = "") {
  return "train --config " + config_path("tiny.toml") + " --data " + tiny_data_dir() + " --out " + out +
         " --eval-every 0 " + extra;
}

// A finished 5-step run whose checkpoint the failing commands must leave alone.
inline std::string good_run() {
  std::string out = temp_dir("good");
  CliResult r = run_fivefold(tiny_train(out, "--steps 5"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  return out;
}

inline void expect_failure(const CliResult& r, std::initializer_list<const char*> words) {
  EXPECT_NE(r.exit_code, 0) << r.output;
  for (const char* w : words) EXPECT_NE(r.output.find(w), std::string::npos) << "missing '" << w << "' in:\n" << r.output;
}

}  // namespace ff::testkit
