#include "backend/cpu/onnx/tensor_scatter.h"

#include <cstring>

#include "core/elements.h"
#include "wgml/error.h"

namespace wgml::cpu::onnx {

namespace {

[[noreturn]] void invalid(const std::string& what) { throw Error(ErrorCode::InvalidArgument, "TensorScatter: " + what); }

std::string shape_text(const Shape& shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

int64_t product(const Shape& shape, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end; ++i) p *= shape[i];
  return p;
}

void check_shapes(const Tensor& past, const Tensor& update, const Tensor* write_indices, int64_t axis) {
  if (past.dtype() != update.dtype())
    invalid("past_cache is " + std::string(dtype_name(past.dtype())) + " but update is " +
            std::string(dtype_name(update.dtype())));
  if (past.rank() != update.rank())
    invalid("past_cache " + shape_text(past.shape()) + " and update " + shape_text(update.shape()) + " differ in rank");
  if (axis < 1 || axis >= past.rank())
    invalid("axis must name a dimension after the batch dimension, in [1, " + std::to_string(past.rank()) +
            ") after normalisation");
  for (int d = 0; d < past.rank(); ++d) {
    const bool ok = d == axis ? update.dim(d) <= past.dim(d) : update.dim(d) == past.dim(d);
    if (!ok)
      invalid("update " + shape_text(update.shape()) + " does not fit past_cache " + shape_text(past.shape()) + " (axis " +
              std::to_string(axis) + ")");
  }
  if (!write_indices) return;
  if (write_indices->dtype() != DType::Int64)
    invalid("write_indices must be int64, not " + std::string(dtype_name(write_indices->dtype())));
  if (write_indices->rank() != 1 || write_indices->dim(0) != past.dim(0))
    invalid("write_indices " + shape_text(write_indices->shape()) + " must have shape [batch_size] = [" +
            std::to_string(past.dim(0)) + "]");
}

}  // namespace

Tensor tensor_scatter(const Tensor& past, const Tensor& update, const Tensor* write_indices, int64_t axis,
                      const std::string& mode) {
  if (mode != "linear" && mode != "circular") invalid("mode must be \"linear\" or \"circular\", not \"" + mode + "\"");
  const int64_t normalized = axis < 0 ? axis + past.rank() : axis;
  check_shapes(past, update, write_indices, normalized);
  const auto axis_index = static_cast<size_t>(normalized);
  const int64_t max_sequence = past.dim(static_cast<int>(normalized));
  const int64_t sequence = update.dim(static_cast<int>(normalized));
  const int64_t rows = product(past.shape(), 0, axis_index);  // every index before the axis
  const int64_t rows_per_batch = product(past.shape(), 1, axis_index);
  const size_t row_bytes =
      static_cast<size_t>(product(past.shape(), axis_index + 1, past.shape().size())) * dtype_size(past.dtype());

  Tensor present = Tensor::from_bytes(past.dtype(), past.shape(), past.data());
  uint8_t* out = present.mutable_data();
  const uint8_t* in = update.data();
  for (int64_t row = 0; row < rows && sequence > 0; ++row) {
    const int64_t batch = row / rows_per_batch;
    const int64_t start = write_indices ? load_as_int64(DType::Int64, write_indices->data(), batch) : 0;
    if (mode == "linear" && (start < 0 || start > max_sequence - sequence))
      throw Error(ErrorCode::Runtime,
                  "TensorScatter: write_indices[" + std::to_string(batch) + "] = " + std::to_string(start) +
                      " does not fit: linear mode needs 0 <= index <= max_sequence_length - sequence_length = " +
                      std::to_string(max_sequence - sequence));
    const int64_t wrapped_start = ((start % max_sequence) + max_sequence) % max_sequence;
    for (int64_t s = 0; s < sequence; ++s) {
      const int64_t position = mode == "linear" ? start + s : (wrapped_start + s) % max_sequence;
      std::memcpy(out + static_cast<size_t>(row * max_sequence + position) * row_bytes,
                  in + static_cast<size_t>(row * sequence + s) * row_bytes, row_bytes);
    }
  }
  return present;
}

}  // namespace wgml::cpu::onnx
