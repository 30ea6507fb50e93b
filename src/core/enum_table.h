#pragma once
// The names of an enum's values, in one table per enum. The same rows parse every text input that
// names a value (config keys, command-line options, the planner's layout strings, checkpoint
// metadata), print it back (the resolved config, run reports), list the allowed values in help
// lines and say them in the error for a name that is not one of them. A new value is one new row.
#include <initializer_list>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace ff {

template <typename T>
struct EnumName {
  T value;
  const char* name;      // how configs, options and reports spell the value
  const char* help = "";  // a few words shown after the name in help lines: "ring (K/V passed around)"
};

template <typename T>
class EnumTable {
 public:
  // aliases: further spellings parse() takes but nothing prints (an older or alternative name).
  EnumTable(std::initializer_list<EnumName<T>> names, std::initializer_list<EnumName<T>> aliases = {})
      : names_(names), aliases_(aliases) {}

  // The value's name; a value without a row is a programming error.
  const char* name(T value) const {
    for (const EnumName<T>& n : names_)
      if (n.value == value) return n.name;
    throw std::logic_error("EnumTable: a value without a name (a row is missing from its table)");
  }

  std::optional<T> find(std::string_view text) const {
    for (const auto* rows : {&names_, &aliases_})
      for (const EnumName<T>& n : *rows)
        if (text == n.name) return n.value;
    return std::nullopt;
  }

  // Throws std::runtime_error "unknown WHAT 'TEXT'; use CHOICES" for a name the table lacks.
  T parse(std::string_view text, std::string_view what) const {
    if (std::optional<T> v = find(text)) return *v;
    throw std::runtime_error("unknown " + std::string(what) + " '" + std::string(text) + "'; use " + choices());
  }

  // "fp32 | bf16 | fp16": the names, in table order.
  std::string names() const { return joined(false); }
  // The names with their help, for a key's help line: "ring (K/V passed around) | allgather | a2a".
  std::string described() const { return joined(true); }
  // The allowed names as an error says them: "softmax or sigmoid", "one of gpipe | 1f1b | interleaved".
  std::string choices() const {
    if (names_.size() == 2) return std::string(names_[0].name) + " or " + names_[1].name;
    return "one of " + names();
  }

  // The rows (and aliases) of these values only, in this table's order: the dtypes a key allows.
  EnumTable subset(std::initializer_list<T> values) const {
    EnumTable out;
    auto wanted = [&](const EnumName<T>& n) {
      for (T v : values)
        if (v == n.value) return true;
      return false;
    };
    for (const EnumName<T>& n : names_)
      if (wanted(n)) out.names_.push_back(n);
    for (const EnumName<T>& n : aliases_)
      if (wanted(n)) out.aliases_.push_back(n);
    return out;
  }

 private:
  EnumTable() = default;
  std::string joined(bool with_help) const {
    std::string out;
    for (const EnumName<T>& n : names_) {
      if (!out.empty()) out += " | ";
      out += n.name;
      if (with_help && *n.help) out += std::string(" (") + n.help + ")";
    }
    return out;
  }

  std::vector<EnumName<T>> names_, aliases_;
};

}  // namespace ff
