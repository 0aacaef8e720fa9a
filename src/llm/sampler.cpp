#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/elements.h"
#include "wgml/error.h"
#include "wgml/generator.h"

namespace wgml {
namespace {

// Token ids ordered by logit, largest first, cut to top_k (0: all).
std::vector<int64_t> candidates(std::span<const float> logits, int64_t top_k) {
  std::vector<int64_t> ids(logits.size());
  std::iota(ids.begin(), ids.end(), 0);
  const int64_t keep = top_k > 0 ? std::min<int64_t>(top_k, ids.size()) : ids.size();
  std::partial_sort(ids.begin(), ids.begin() + keep, ids.end(),
                    [&](int64_t a, int64_t b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); });
  ids.resize(keep);
  return ids;
}

}  // namespace

Sampler::Sampler(const SamplingOptions& options) : options_(options), random_(options.seed) {
  if (!(options.temperature >= 0) || !(options.top_p > 0 && options.top_p <= 1) || options.top_k < 0)
    throw Error(ErrorCode::InvalidArgument, "sampling: expected temperature >= 0, 0 < top_p <= 1 and top_k >= 0");
}

int64_t Sampler::next(std::span<const float> logits) {
  if (logits.empty()) throw Error(ErrorCode::InvalidArgument, "sampling: an empty logits row");
  if (options_.temperature == 0) return greedy_index(logits);
  const std::vector<int64_t> ids = candidates(logits, options_.top_k);
  std::vector<double> weights(ids.size());
  const double largest = logits[ids[0]];
  double total = 0;
  for (size_t i = 0; i < ids.size(); ++i) total += weights[i] = std::exp((logits[ids[i]] - largest) / options_.temperature);
  size_t kept = ids.size();
  double mass = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    mass += weights[i] / total;
    if (mass >= options_.top_p) {
      kept = i + 1;
      break;
    }
  }
  const double kept_total = std::accumulate(weights.begin(), weights.begin() + kept, 0.0);
  // 53 random bits as a double in [0, 1): the same draw on every platform.
  double draw = static_cast<double>(random_() >> 11) * 0x1.0p-53 * kept_total;
  for (size_t i = 0; i < kept; ++i) {
    draw -= weights[i];
    if (draw < 0) return ids[i];
  }
  return ids[kept - 1];
}

}  // namespace wgml
