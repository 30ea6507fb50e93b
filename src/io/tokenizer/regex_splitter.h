#pragma once
// A pre-tokenizer's split pattern, compiled once with PCRE2 (UTF, Unicode properties for \p{L},
// \s and friends, optionally JIT). The compiled pattern is read-only and shared; each split call
// makes its own match data, so threads never share mutable state.
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace ff {

class RegexSplitter {
 public:
  // literal: the pattern is plain text, not a regex. Throws with PCRE2's message and the offset
  // in the pattern when it does not compile; what names the pattern's origin in that message.
  RegexSplitter(const std::string& pattern, bool literal, bool jit, const std::string& what);
  ~RegexSplitter();
  RegexSplitter(RegexSplitter&&) noexcept;
  RegexSplitter& operator=(RegexSplitter&&) noexcept;

  // The "Isolated" split of text (valid UTF-8): every match is a piece and so is every
  // non-empty stretch between matches, in order, appended to out.
  void split_isolated(std::string_view text, std::vector<std::string>& out) const;

 private:
  struct Compiled;
  std::unique_ptr<Compiled> re_;
};

}  // namespace ff
