#pragma once
// A string from one rank to every rank of a group (a length, then the bytes): for decisions one
// rank makes and every rank must act on alike (the run folder, a refusal to start).
#include <string>

namespace ff {

class Comm;

// Collective over `group`: every rank returns root's `text` (the others' argument is ignored).
std::string broadcast_text(const Comm& group, std::string text, int root);

}  // namespace ff
