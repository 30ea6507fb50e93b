#pragma once
// What the user named as corpus inputs, turned into the files to read, in a fixed order.
#include <string>
#include <vector>

namespace ff {

// Each spec is a file (taken as is), a folder (its files, recursively, sorted by path; names
// starting with '.' are skipped, as a shell glob would) or a glob (its matches, sorted; a
// matched folder is expanded the same way). The order is the specs' order, so a prepare is a
// function of its arguments whatever the file system lists first. A spec that names nothing,
// and an empty result, throw naming the spec.
std::vector<std::string> expand_inputs(const std::vector<std::string>& specs);

}  // namespace ff
