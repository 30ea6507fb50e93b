#include "train/fp8_training.h"

#include <fmt/format.h>

#include "comm/comm.h"
#include "train/moe_training.h"

namespace ff {
namespace {

const char* kRoles[] = {"forward", "dgrad", "wgrad"};
const char* kOperands[] = {"a", "b"};

std::string piece_name(const std::string& tensor, const Fp8Recipe::Key& k) {
  return fmt::format("fp8/{}/{}.{}", tensor, kRoles[k.role], kOperands[k.operand]);
}

// "fp8/<tensor>/<role>.<operand>" -> tensor and key (id unset); false for any other name.
bool parse_piece_name(const std::string& name, std::string* tensor, Fp8Recipe::Key* k) {
  if (name.rfind("fp8/", 0) != 0) return false;
  const size_t slash = name.rfind('/'), dot = name.rfind('.');
  if (slash <= 4 || dot == std::string::npos || dot < slash) return false;
  *tensor = name.substr(4, slash - 4);
  const std::string role = name.substr(slash + 1, dot - slash - 1), operand = name.substr(dot + 1);
  for (int r = 0; r < 3; ++r)
    for (int o = 0; o < 2; ++o)
      if (role == kRoles[r] && operand == kOperands[o]) return k->role = r, k->operand = o, true;
  return false;
}

}  // namespace

Fp8Training::Fp8Training(const TrainConfig& c, const ParamLayout& local, const ModelParts& parts,
                         const Mesh* mesh)
    : ids_(local, ParamLayout(c.model)) {
  // This stage's tensors, every expert of its MoE blocks included: amaxes of experts another ep
  // rank holds arrive through the reduction, and any ep layout may resume from them.
  stage_.assign(size_t(ids_.count()), false);
  const ModelParts everything = MoeTraining::all_experts(parts);
  const ParamLayout stage(c.model, nullptr, &everything);
  for (const ParamView& v : stage.views())
    stage_[size_t(ids_.id_of_name(v.name))] = true;
  // A tied embedding is a GEMM weight only as the LM head: its scales belong to the head's stage,
  // never to the first stage's copy (else two stages would save them once pipelines resume).
  if (const int64_t emb = ids_.id_of_name("model.embed_tokens.weight"); emb >= 0 && !parts.head)
    stage_[size_t(emb)] = false;
  if (mesh) {
    const MeshCoords& at = mesh->coords();
    saver_ = at.tp == 0 && at.cp == 0 && at.dp == 0;
    const Comm& g = c.dp_mode == DpMode::sync ? mesh->group({MeshAxis::tp, MeshAxis::cp, MeshAxis::dp})
                                        : mesh->group({MeshAxis::tp, MeshAxis::cp});
    if (g.size() > 1) group_ = &g;
  }
  recipe_.set_identity([this](int64_t at) { return ids_.id_at(at); }, ids_.count());
}

void Fp8Training::end_step() {
  if (!group_) return recipe_.end_step();
  recipe_.end_step(
      [this](std::vector<float>& amax) { group_->all_reduce(amax.data(), amax.size(), ReduceOp::max); });
}

void Fp8Training::add_save_pieces(std::vector<SavePiece>& pieces) {
  saved_.clear();
  if (!saver_) return;
  for (auto& [key, state] : recipe_.states()) {
    if (key.id < 0 || key.id >= ids_.count() || !stage_[size_t(key.id)]) continue;
    const int64_t n = int64_t(state.size());
    saved_.push_back(state);
    pieces.push_back({piece_name(ids_.name(key.id), key), {n}, Box{0, 1, 0, n}, 0, n, saved_.back().data()});
  }
}

size_t Fp8Training::load(ShardedCheckpointReader& r) {
  size_t restored = 0;
  for (const std::string& name : r.tensor_names()) {
    std::string tensor;
    Fp8Recipe::Key k;
    if (!parse_piece_name(name, &tensor, &k)) continue;
    k.id = ids_.id_of_name(tensor);
    if (k.id < 0 || !stage_[size_t(k.id)]) continue;  // another stage's, or a tensor this model lacks
    const int64_t n = r.tensor(name).shape.at(0);
    std::vector<float> state(static_cast<size_t>(n));
    r.read(flat_read_requests(name, Box{0, 1, 0, n}, 0, n, TypedPtr(state.data())));
    recipe_.restore(k, state);
    ++restored;
  }
  return restored;
}

}  // namespace ff
