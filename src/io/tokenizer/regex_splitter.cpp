#include "io/tokenizer/regex_splitter.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <stdexcept>

#include "io/utf8.h"

namespace ff {

struct RegexSplitter::Compiled {
  pcre2_code* code = nullptr;
  std::string what;
  ~Compiled() { pcre2_code_free(code); }
};

namespace {

std::string pcre2_message(int code) {
  PCRE2_UCHAR buf[256];
  pcre2_get_error_message(code, buf, sizeof buf);
  return reinterpret_cast<const char*>(buf);
}

struct MatchData {
  pcre2_match_data* md;
  explicit MatchData(const pcre2_code* code) : md(pcre2_match_data_create_from_pattern(code, nullptr)) {
    if (!md) throw std::bad_alloc();
  }
  ~MatchData() { pcre2_match_data_free(md); }
};

}  // namespace

RegexSplitter::RegexSplitter(const std::string& pattern, bool literal, bool jit, const std::string& what)
    : re_(std::make_unique<Compiled>()) {
  re_->what = what;
  int err = 0;
  PCRE2_SIZE at = 0;
  // PCRE2 refuses UCP beside LITERAL; a literal has no classes for it to change anyway.
  const uint32_t options = PCRE2_UTF | (literal ? PCRE2_LITERAL : PCRE2_UCP);
  re_->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), options, &err, &at,
                            nullptr);
  if (!re_->code)
    throw std::runtime_error(what + ": the pattern \"" + pattern + "\" does not compile as a PCRE2 regex (" +
                             pcre2_message(err) + " at offset " + std::to_string(at) +
                             "); fix the pattern or use a tokenizer.json whose pattern is a valid regex");
  // Without JIT support in the library the interpreter still gives the same matches.
  if (jit) pcre2_jit_compile(re_->code, PCRE2_JIT_COMPLETE);
}

RegexSplitter::~RegexSplitter() = default;
RegexSplitter::RegexSplitter(RegexSplitter&&) noexcept = default;
RegexSplitter& RegexSplitter::operator=(RegexSplitter&&) noexcept = default;

void RegexSplitter::split_isolated(std::string_view text, std::vector<std::string>& out) const {
  MatchData m(re_->code);
  const auto subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t gap_start = 0, from = 0;
  while (from <= text.size()) {
    // The text was checked to be valid UTF-8 before it got here.
    const int rc = pcre2_match(re_->code, subject, text.size(), from, PCRE2_NO_UTF_CHECK, m.md, nullptr);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0)
      throw std::runtime_error(re_->what + ": the split pattern failed on the text (" + pcre2_message(rc) +
                               "); the pattern backtracks too much for this input, use a simpler pattern");
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(m.md);
    const size_t begin = ov[0], end = ov[1];
    if (end == begin) {
      // An empty match splits nothing; step one character on so the scan ends.
      if (begin >= text.size()) break;
      from = begin + utf8_char_length(static_cast<unsigned char>(text[begin]));
      continue;
    }
    if (begin > gap_start) out.emplace_back(text.substr(gap_start, begin - gap_start));
    out.emplace_back(text.substr(begin, end - begin));
    gap_start = from = end;
  }
  if (gap_start < text.size()) out.emplace_back(text.substr(gap_start));
}

}  // namespace ff
