#include "plan/rank_model.h"

#include "model/llama.h"

namespace ff {

RankModel rank_model(const ModelConfig& c, const LayoutSpec& L, int pp_rank) {
  RankModel r;
  if (L.tp > 1) r.slicer = std::make_unique<PlanSlicer>(c, L.tp, 0);
  r.parts = ModelParts::all(c);
  if (L.pp > 1) {
    const StageSplit split = split_model(c, L.pp, L.chunks);
    r.parts = parts_of_rank(split, pp_rank);
    r.chunks = chunks_of_rank(split, pp_rank);
  } else {
    r.chunks.push_back(ModelChunk{0, c.n_layers, true, true});
  }
  if (L.ep > 1 && c.moe.enabled()) r.parts.expert_first = 0, r.parts.expert_count = c.moe.n_experts / L.ep;
  const bool partial = L.pp > 1 || r.parts.expert_count >= 0;  // null: the whole model, as the trainer passes
  r.layout = std::make_unique<ParamLayout>(c, r.slicer.get(), partial ? &r.parts : nullptr);
  r.widths = local_widths(*r.layout, c, r.parts);
  for (const ParamView& v : r.layout->views())
    if (v.name == "model.embed_tokens.weight" || v.name == "lm_head.weight") r.vocab_rows = v.shape[0];
  return r;
}

}  // namespace ff
