#pragma once
// The mesh layout written out as explicit coordinate formulas, independently of mesh.cpp
// (which filters ranks by coordinates): with degrees T, C, D, P and ranks r = t + T(c + C(d + D p)),
// each group is enumerated directly from the coordinates its members share. Used by the MPI-free
// layout tests and by the MPI group tests.
#include <algorithm>
#include <string>
#include <vector>

#include "comm/mesh.h"

namespace ff::test {

// Every dp x cp x tp x pp = world, with every ep dividing dp x cp.
inline std::vector<MeshDegrees> all_meshes(int world) {
  std::vector<MeshDegrees> out;
  for (int dp = 1; dp <= world; ++dp)
    for (int cp = 1; cp <= world; ++cp)
      for (int tp = 1; tp <= world; ++tp)
        for (int pp = 1; pp <= world; ++pp)
          if (dp * cp * tp * pp == world)
            for (int ep = 1; ep <= dp * cp; ++ep)
              if ((dp * cp) % ep == 0) out.push_back({.dp = dp, .cp = cp, .tp = tp, .pp = pp, .ep = ep});
  return out;
}

inline std::string mesh_name(const MeshDegrees& m) {
  return "dp" + std::to_string(m.dp) + " cp" + std::to_string(m.cp) + " tp" + std::to_string(m.tp) + " pp" +
         std::to_string(m.pp) + " ep" + std::to_string(m.ep);
}

struct ClosedForm {
  int T, C, D, P, E;
  int t, c, d, p;  // the rank's coordinates
  int j, e, x;     // dp_cp index c + C d, its ep coordinate j % E and edp coordinate j / E

  ClosedForm(const MeshDegrees& m, int r)
      : T(m.tp), C(m.cp), D(m.dp), P(m.pp), E(m.ep),
        t(r % T), c(r / T % C), d(r / (T * C) % D), p(r / (T * C * D)),
        j(c + C * d), e(j % E), x(j / E) {}

  int rank(int t_, int c_, int d_, int p_) const { return t_ + T * (c_ + C * (d_ + D * p_)); }
  int rank_of_dp_cp(int j_) const { return t + T * (j_ + C * D * p); }

  // Members of this rank's group g, ascending.
  std::vector<int> members(MeshGroup g) const {
    std::vector<int> m;
    switch (g) {
      case MeshGroup::tp: for (int i = 0; i < T; ++i) m.push_back(rank(i, c, d, p)); break;
      case MeshGroup::cp: for (int i = 0; i < C; ++i) m.push_back(rank(t, i, d, p)); break;
      case MeshGroup::dp: for (int i = 0; i < D; ++i) m.push_back(rank(t, c, i, p)); break;
      case MeshGroup::pp: for (int i = 0; i < P; ++i) m.push_back(rank(t, c, d, i)); break;
      case MeshGroup::dp_cp: for (int i = 0; i < C * D; ++i) m.push_back(rank_of_dp_cp(i)); break;
      case MeshGroup::ep: for (int i = 0; i < E; ++i) m.push_back(rank_of_dp_cp(E * x + i)); break;
      case MeshGroup::edp: for (int i = 0; i < C * D / E; ++i) m.push_back(rank_of_dp_cp(E * i + e)); break;
      case MeshGroup::world: for (int i = 0; i < T * C * D * P; ++i) m.push_back(i); break;
    }
    return m;
  }
  // This rank's place in group g: its coordinate along it.
  int coordinate(MeshGroup g) const {
    switch (g) {
      case MeshGroup::tp: return t;
      case MeshGroup::cp: return c;
      case MeshGroup::dp: return d;
      case MeshGroup::pp: return p;
      case MeshGroup::dp_cp: return j;
      case MeshGroup::ep: return e;
      case MeshGroup::edp: return x;
      case MeshGroup::world: return rank(t, c, d, p);
    }
    return -1;
  }
  // Members of the ranks differing from this one only along the axes in mask (bit = MeshAxis).
  std::vector<int> members(unsigned mask) const {
    auto range = [&](MeshAxis a, int own, int degree) {
      std::vector<int> v;
      if (mask & (1u << int(a))) for (int i = 0; i < degree; ++i) v.push_back(i);
      else v.push_back(own);
      return v;
    };
    std::vector<int> m;
    for (int p_ : range(MeshAxis::pp, p, P))
      for (int d_ : range(MeshAxis::dp, d, D))
        for (int c_ : range(MeshAxis::cp, c, C))
          for (int t_ : range(MeshAxis::tp, t, T)) m.push_back(rank(t_, c_, d_, p_));
    return m;
  }
};

inline constexpr MeshGroup kAllGroups[] = {MeshGroup::tp,    MeshGroup::cp, MeshGroup::dp,  MeshGroup::pp,
                                          MeshGroup::dp_cp, MeshGroup::ep, MeshGroup::edp, MeshGroup::world};

}  // namespace ff::test
