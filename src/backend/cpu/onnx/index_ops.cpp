// Kept ONNX ops that select, sort or scatter by index: TopK (ties keep the lower index), NonZero,
// Compress, Unique, GatherND, ScatterElements/Scatter/ScatterND with reductions, ReverseSequence
// and NonMaxSuppression. Output sizes depend on the data, which no mlx node expresses.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <numeric>

#include "backend/cpu/onnx/onnx_op.h"
#include "core/elements.h"
#include "core/layout.h"

namespace wgml::backend::cpu::onnx_ops {
namespace {

using runtime::fail;

size_t element_size(const Tensor& t) { return dtype_size(t.dtype()); }

void copy_element(uint8_t* dst, int64_t di, const Tensor& src, int64_t si) {
  std::memcpy(dst + di * element_size(src), src.data() + si * element_size(src), element_size(src));
}

Tensor int64_tensor(const std::vector<int64_t>& values, Shape shape) {
  return Tensor::from_bytes(DType::Int64, std::move(shape), values.data());
}

// Splits x around `axis` into outer x len x inner.
struct AxisLayout {
  int64_t outer = 1, len = 1, inner = 1;
  AxisLayout(const Shape& shape, int axis) {
    for (int d = 0; d < axis; ++d) outer *= shape[d];
    len = shape[axis];
    for (size_t d = axis + 1; d < shape.size(); ++d) inner *= shape[d];
  }
  int64_t at(int64_t o, int64_t i, int64_t j) const { return (o * len + i) * inner + j; }
};

void top_k(OpView& v) {
  const Tensor& x = v.required(0);
  const int axis = normalize_axis(static_cast<int>(v.attr_int("axis", -1)), x.rank());
  const int64_t k = v.opset() < 10 ? v.attr_int("k", 0) : ints_of(v.required(1)).at(0);
  const bool largest = v.attr_int("largest", 1) != 0;
  const AxisLayout l(x.shape(), axis);
  if (k < 0 || k > l.len) fail("TopK: k = " + std::to_string(k) + " is outside [0, " + std::to_string(l.len) + "]");
  Shape shape = x.shape();
  shape[axis] = k;
  Tensor values(x.dtype(), shape);
  std::vector<int64_t> indices(static_cast<size_t>(l.outer * k * l.inner));
  std::vector<int64_t> order(static_cast<size_t>(l.len));
  uint8_t* dst = values.mutable_data();
  const AxisLayout out(shape, axis);
  for (int64_t o = 0; o < l.outer; ++o)
    for (int64_t j = 0; j < l.inner; ++j) {
      std::iota(order.begin(), order.end(), 0);
      auto value = [&](int64_t i) { return load_as_double(x.dtype(), x.data(), l.at(o, i, j)); };
      // Equal values keep the lower index first, in both directions.
      std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
        const double va = value(a), vb = value(b);
        return largest ? va > vb : va < vb;
      });
      for (int64_t i = 0; i < k; ++i) {
        copy_element(dst, out.at(o, i, j), x, l.at(o, order[i], j));
        indices[out.at(o, i, j)] = order[i];
      }
    }
  v.output(0, std::move(values));
  v.output(1, int64_tensor(indices, shape));
}

void non_zero(OpView& v) {
  const Tensor& x = v.required(0);
  const int rank = x.rank();
  std::vector<int64_t> hits;
  for (int64_t i = 0; i < x.numel(); ++i)
    if (load_as_double(x.dtype(), x.data(), i) != 0) hits.push_back(i);
  const int64_t n = static_cast<int64_t>(hits.size());
  std::vector<int64_t> out(static_cast<size_t>(std::max(rank, 1) * n));
  const auto strides = contiguous_strides(x.shape());
  for (int64_t h = 0; h < n; ++h)
    for (int d = 0; d < rank; ++d) out[d * n + h] = (hits[h] / strides[d]) % x.dim(d);
  v.output(0, int64_tensor(out, {rank, n}));
}

void compress(OpView& v) {
  const Tensor& input = v.required(0);
  const Tensor& condition = v.required(1);
  const bool flatten = !v.has_attr("axis");
  const Tensor x = flatten ? input.reshaped({input.numel()}) : input;
  const int axis = flatten ? 0 : normalize_axis(static_cast<int>(v.attr_int("axis", 0)), x.rank());
  const AxisLayout l(x.shape(), axis);
  std::vector<int64_t> kept;
  for (int64_t i = 0; i < std::min(l.len, condition.numel()); ++i)
    if (load_as_double(condition.dtype(), condition.data(), i) != 0) kept.push_back(i);
  Shape shape = x.shape();
  shape[axis] = static_cast<int64_t>(kept.size());
  Tensor out(x.dtype(), shape);
  const AxisLayout ol(shape, axis);
  uint8_t* dst = out.mutable_data();
  for (int64_t o = 0; o < l.outer; ++o)
    for (size_t i = 0; i < kept.size(); ++i)
      for (int64_t j = 0; j < l.inner; ++j) copy_element(dst, ol.at(o, i, j), x, l.at(o, kept[i], j));
  v.output(0, std::move(out));
}

// Unique slices along an axis (or unique elements of the flattened input).
void unique(OpView& v) {
  const Tensor& input = v.required(0);
  const bool flatten = !v.has_attr("axis");
  const Tensor x = flatten ? input.reshaped({input.numel()}) : input;
  const int axis = flatten ? 0 : normalize_axis(static_cast<int>(v.attr_int("axis", 0)), x.rank());
  const AxisLayout l(x.shape(), axis);
  auto slice = [&](int64_t i) {
    std::vector<double> s;
    for (int64_t o = 0; o < l.outer; ++o)
      for (int64_t j = 0; j < l.inner; ++j) s.push_back(load_as_double(x.dtype(), x.data(), l.at(o, i, j)));
    return s;
  };
  std::map<std::vector<double>, int64_t> first_index;  // slice -> first occurrence
  std::vector<std::vector<double>> slices;
  for (int64_t i = 0; i < l.len; ++i) {
    slices.push_back(slice(i));
    first_index.emplace(slices.back(), i);
  }
  std::vector<int64_t> firsts;  // unique slices by first occurrence, or sorted
  if (v.attr_int("sorted", 1) != 0) {
    for (const auto& [s, i] : first_index) firsts.push_back(i);
  } else {
    for (int64_t i = 0; i < l.len; ++i)
      if (first_index.at(slices[i]) == i) firsts.push_back(i);
  }
  std::map<int64_t, int64_t> position;  // first occurrence -> output position
  for (size_t p = 0; p < firsts.size(); ++p) position[firsts[p]] = static_cast<int64_t>(p);
  std::vector<int64_t> inverse, counts(firsts.size(), 0);
  for (int64_t i = 0; i < l.len; ++i) {
    const int64_t p = position.at(first_index.at(slices[i]));
    inverse.push_back(p);
    ++counts[p];
  }
  Shape shape = x.shape();
  shape[axis] = static_cast<int64_t>(firsts.size());
  Tensor y(x.dtype(), shape);
  const AxisLayout yl(shape, axis);
  uint8_t* dst = y.mutable_data();
  for (int64_t o = 0; o < l.outer; ++o)
    for (size_t p = 0; p < firsts.size(); ++p)
      for (int64_t j = 0; j < l.inner; ++j) copy_element(dst, yl.at(o, p, j), x, l.at(o, firsts[p], j));
  const int64_t n = static_cast<int64_t>(firsts.size());
  v.output(0, std::move(y));
  v.output(1, int64_tensor(firsts, {n}));
  v.output(2, int64_tensor(inverse, {l.len}));
  v.output(3, int64_tensor(counts, {n}));
}

// GatherND: out[b..., i...] = data[b..., indices[b..., i..., :]...] (b: the batch_dims leading dims).
void gather_nd(OpView& v) {
  const Tensor& data = v.required(0);
  const Tensor& indices = v.required(1);
  const int batch = static_cast<int>(v.attr_int("batch_dims", 0));
  const int64_t k = indices.dim(indices.rank() - 1);
  if (batch + k > data.rank()) fail("GatherND: indices address more dims than data has");
  Shape shape(indices.shape().begin(), indices.shape().end() - 1);
  shape.insert(shape.end(), data.shape().begin() + batch + k, data.shape().end());
  int64_t batches = 1, slice = 1;
  for (int d = 0; d < batch; ++d) batches *= data.dim(d);
  for (int d = batch + static_cast<int>(k); d < data.rank(); ++d) slice *= data.dim(d);
  const int64_t per_batch = (indices.numel() / std::max<int64_t>(k, 1)) / std::max<int64_t>(batches, 1);
  const auto strides = contiguous_strides(data.shape());
  const std::vector<int64_t> idx = ints_of(indices);
  Tensor out(data.dtype(), shape);
  uint8_t* dst = out.mutable_data();
  for (int64_t b = 0; b < batches; ++b)
    for (int64_t q = 0; q < per_batch; ++q) {
      int64_t offset = 0;
      int64_t rem = b;
      for (int d = batch - 1; d >= 0; --d) {
        offset += (rem % data.dim(d)) * strides[d];
        rem /= data.dim(d);
      }
      for (int64_t c = 0; c < k; ++c) {
        const int d = batch + static_cast<int>(c);
        offset += normalize_index(idx[(b * per_batch + q) * k + c], data.dim(d), "GatherND index") * strides[d];
      }
      for (int64_t s = 0; s < slice; ++s) copy_element(dst, (b * per_batch + q) * slice + s, data, offset + s);
    }
  v.output(0, std::move(out));
}

double reduce_values(const std::string& reduction, double old, double update) {
  if (reduction == "none") return update;
  if (reduction == "add") return old + update;
  if (reduction == "mul") return old * update;
  if (reduction == "max") return std::max(old, update);
  if (reduction == "min") return std::min(old, update);
  fail("unknown reduction '" + reduction + "'");
}

void store_reduced(Tensor& out, int64_t i, const Tensor& updates, int64_t u, const std::string& reduction) {
  if (reduction == "none") return copy_element(out.mutable_data(), i, updates, u);
  const double old = load_as_double(out.dtype(), out.data(), i);
  store_double(out.dtype(), out.mutable_data(), i,
               reduce_values(reduction, old, load_as_double(updates.dtype(), updates.data(), u)));
}

void scatter_elements(OpView& v) {
  Tensor out = v.required(0);
  const Tensor& indices = v.required(1);
  const Tensor& updates = v.required(2);
  if (indices.shape() != updates.shape()) fail("ScatterElements: indices and updates must have one shape");
  const int axis = normalize_axis(static_cast<int>(v.attr_int("axis", 0)), out.rank());
  const std::string reduction = v.attr_string("reduction", "none");
  const auto data_strides = contiguous_strides(out.shape());
  const auto index_strides = contiguous_strides(indices.shape());
  const std::vector<int64_t> idx = ints_of(indices);
  out.mutable_data();
  for (int64_t u = 0; u < indices.numel(); ++u) {
    int64_t offset = 0;
    for (int d = 0; d < indices.rank(); ++d) {
      const int64_t coordinate = (u / index_strides[d]) % indices.dim(d);
      offset += (d == axis ? normalize_index(idx[u], out.dim(d), "ScatterElements index") : coordinate) * data_strides[d];
    }
    store_reduced(out, offset, updates, u, reduction);
  }
  v.output(0, std::move(out));
}

void scatter_nd(OpView& v) {
  Tensor out = v.required(0);
  const Tensor& indices = v.required(1);
  const Tensor& updates = v.required(2);
  const std::string reduction = v.attr_string("reduction", "none");
  const int64_t k = indices.dim(indices.rank() - 1);
  if (k > out.rank()) fail("ScatterND: indices address more dims than data has");
  int64_t slice = 1;
  for (int d = static_cast<int>(k); d < out.rank(); ++d) slice *= out.dim(d);
  const auto strides = contiguous_strides(out.shape());
  const std::vector<int64_t> idx = ints_of(indices);
  const int64_t count = indices.numel() / std::max<int64_t>(k, 1);
  if (updates.numel() != count * slice) fail("ScatterND: updates do not match indices and data");
  out.mutable_data();
  for (int64_t q = 0; q < count; ++q) {
    int64_t offset = 0;
    for (int64_t c = 0; c < k; ++c)
      offset += normalize_index(idx[q * k + c], out.dim(static_cast<int>(c)), "ScatterND index") * strides[c];
    for (int64_t s = 0; s < slice; ++s) store_reduced(out, offset + s, updates, q * slice + s, reduction);
  }
  v.output(0, std::move(out));
}

void reverse_sequence(OpView& v) {
  const Tensor& x = v.required(0);
  const std::vector<int64_t> lengths = ints_of(v.required(1));
  const int batch_axis = static_cast<int>(v.attr_int("batch_axis", 1));
  const int time_axis = static_cast<int>(v.attr_int("time_axis", 0));
  const auto strides = contiguous_strides(x.shape());
  Tensor out(x.dtype(), x.shape());
  uint8_t* dst = out.mutable_data();
  for (int64_t i = 0; i < x.numel(); ++i) {
    const int64_t b = (i / strides[batch_axis]) % x.dim(batch_axis);
    const int64_t t = (i / strides[time_axis]) % x.dim(time_axis);
    const int64_t len = lengths.at(b);
    const int64_t source_t = t < len ? len - 1 - t : t;
    copy_element(dst, i, x, i + (source_t - t) * strides[time_axis]);
  }
  v.output(0, std::move(out));
}

struct Box {
  double x_min, y_min, x_max, y_max;
};

Box box_at(const Tensor& boxes, int64_t b, int64_t i, bool center) {
  const int64_t base = (b * boxes.dim(1) + i) * 4;
  double c[4];
  for (int k = 0; k < 4; ++k) c[k] = load_as_double(boxes.dtype(), boxes.data(), base + k);
  if (center) return {c[0] - c[2] / 2, c[1] - c[3] / 2, c[0] + c[2] / 2, c[1] + c[3] / 2};
  return {std::min(c[1], c[3]), std::min(c[0], c[2]), std::max(c[1], c[3]), std::max(c[0], c[2])};
}

bool overlaps_too_much(const Box& a, const Box& b, double threshold) {
  const double w = std::min(a.x_max, b.x_max) - std::max(a.x_min, b.x_min);
  const double h = std::min(a.y_max, b.y_max) - std::max(a.y_min, b.y_min);
  if (w <= 0 || h <= 0) return false;
  const double inter = w * h;
  const double area_a = (a.x_max - a.x_min) * (a.y_max - a.y_min), area_b = (b.x_max - b.x_min) * (b.y_max - b.y_min);
  const double uni = area_a + area_b - inter;
  if (area_a <= 0 || area_b <= 0 || uni <= 0) return false;
  return inter / uni > threshold;
}

// Greedy per (batch, class): highest score first (ties: lower box index), dropping boxes whose
// IoU with a kept one exceeds the threshold.
void non_max_suppression(OpView& v) {
  const Tensor& boxes = v.required(0);
  const Tensor& scores = v.required(1);
  const Tensor* max_boxes = v.input(2);
  const Tensor* iou = v.input(3);
  const Tensor* score_min = v.input(4);
  const int64_t limit = max_boxes && max_boxes->numel() ? std::max<int64_t>(ints_of(*max_boxes)[0], 0) : 0;
  const double iou_threshold = iou && iou->numel() ? doubles_of(*iou)[0] : 0.0;
  const bool center = v.attr_int("center_point_box", 0) != 0;
  if (boxes.rank() != 3 || scores.rank() != 3 || boxes.dim(2) != 4 || boxes.dim(0) != scores.dim(0) ||
      boxes.dim(1) != scores.dim(2))
    fail("NonMaxSuppression: expected boxes [B, N, 4] and scores [B, C, N]");
  std::vector<int64_t> selected;
  for (int64_t b = 0; b < scores.dim(0); ++b)
    for (int64_t c = 0; c < scores.dim(1); ++c) {
      std::vector<std::pair<double, int64_t>> candidates;
      for (int64_t i = 0; i < scores.dim(2); ++i) {
        const double s = load_as_double(scores.dtype(), scores.data(), (b * scores.dim(1) + c) * scores.dim(2) + i);
        if (!score_min || s > doubles_of(*score_min)[0]) candidates.emplace_back(s, i);
      }
      std::stable_sort(candidates.begin(), candidates.end(), [](const auto& x, const auto& y) { return x.first > y.first; });
      std::vector<int64_t> kept;
      for (const auto& [s, i] : candidates) {
        if (static_cast<int64_t>(kept.size()) >= limit) break;
        const Box box = box_at(boxes, b, i, center);
        const bool suppressed = std::any_of(kept.begin(), kept.end(), [&](int64_t j) {
          return overlaps_too_much(box, box_at(boxes, b, j, center), iou_threshold);
        });
        if (suppressed) continue;
        kept.push_back(i);
        selected.insert(selected.end(), {b, c, i});
      }
    }
  v.output(0, int64_tensor(selected, {static_cast<int64_t>(selected.size() / 3), 3}));
}

}  // namespace

void register_index_ops(runtime::KernelTable& t) {
  t.add_onnx("ai.onnx", "TopK", kernel<top_k>);
  t.add_onnx("ai.onnx", "NonZero", kernel<non_zero>);
  t.add_onnx("ai.onnx", "Compress", kernel<compress>);
  t.add_onnx("ai.onnx", "Unique", kernel<unique>);
  t.add_onnx("ai.onnx", "GatherND", kernel<gather_nd>);
  t.add_onnx("ai.onnx", "ScatterElements", kernel<scatter_elements>);
  t.add_onnx("ai.onnx", "Scatter", kernel<scatter_elements>);
  t.add_onnx("ai.onnx", "ScatterND", kernel<scatter_nd>);
  t.add_onnx("ai.onnx", "ReverseSequence", kernel<reverse_sequence>);
  t.add_onnx("ai.onnx", "NonMaxSuppression", kernel<non_max_suppression>);
}

}  // namespace wgml::backend::cpu::onnx_ops
