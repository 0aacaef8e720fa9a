#pragma once
// The slot state one program execution works on: tensor slots, value slots, and operand
// resolution with the MLX runtime's rules. Kernels read inputs and write outputs through it.
#include <memory>
#include <string>
#include <typeindex>
#include <typeinfo>
#include <unordered_map>
#include <variant>
#include <vector>

#include "ir/program.h"
#include "wgml/error.h"
#include "wgml/tensor.h"

namespace wgml::runtime {

// Kernels report bad operands with this; the executor adds the chain, instruction and node.
[[noreturn]] void fail(const std::string& message);

// A value slot: an int, float or bool. Ints are 64-bit in programs with int64_values (ONNX); in
// the others every int a node stores fits in int32, as in the MLX runtime.
using ScalarValue = std::variant<std::monostate, int64_t, float, bool>;

class ExecContext {
 public:
  explicit ExecContext(const ir::Program& program);

  const ir::Program& program() const { return program_; }

  const Tensor& tensor(ir::Tid t) const;
  bool has_tensor(ir::Tid t) const { return tensors_[t.idx].defined(); }
  void set_tensor(ir::Tid t, Tensor value) { tensors_[t.idx] = std::move(value); }
  void clear_tensor(ir::Tid t) { tensors_[t.idx] = Tensor(); }

  const ScalarValue& value(ir::Vid v) const;
  int64_t int_value(ir::Vid v) const;
  float float_value(ir::Vid v) const;
  void set_value(ir::Vid v, ScalarValue value) { values_[v.idx] = value; }
  void clear_values();

  // IntOrVid: in programs without int64_values literals clamp to int32, as the MLX runtime reads
  // them (INT64_MAX becomes the "to the end" INT32_MAX); with it they are kept whole.
  int64_t resolve(const ir::IntOrVid& v) const;
  Shape resolve(const std::vector<ir::IntOrVid>& v) const;
  // The int of a literal or value IntOrVidOrTid (a tensor one is read by its kernel).
  int64_t resolve_int(const ir::IntOrVidOrTid& v) const;
  // resolve() for a consumer that takes int32 (an axis, a kth): a value outside int32 fails with
  // "<what>: <value> cannot be represented as int32", never clamps.
  int32_t resolve_int32(const ir::IntOrVid& v, const std::string& what) const;
  float resolve(const ir::FloatOrVid& v) const;
  // Optional Tid fields.
  const Tensor* optional_tensor(const std::optional<ir::Tid>& t) const;

  // Off-graph state a kernel keeps across run() calls of this program (an UpdateAndAttend KV
  // cache, an unseeded random key sequence): one default-constructed object per type.
  // What the backend keeps for this execution (Backend::attach), e.g. its GPU device.
  void set_backend_state(std::shared_ptr<void> state) { backend_state_ = std::move(state); }
  template <class T>
  T& backend_state() const {
    if (!backend_state_) fail("the backend was not attached to this execution");
    return *static_cast<T*>(backend_state_.get());
  }

  template <class T>
  T& persistent_state() {
    auto& slot = persistent_[std::type_index(typeid(T))];
    if (!slot) slot = std::make_shared<T>();
    return *std::static_pointer_cast<T>(slot);
  }

 private:
  const ir::Program& program_;
  std::vector<Tensor> tensors_;
  std::vector<ScalarValue> values_;
  std::unordered_map<std::type_index, std::shared_ptr<void>> persistent_;
  std::shared_ptr<void> backend_state_;
};

int32_t clamp_to_int32(int64_t v);
// v, or a failure "<what>: <v> cannot be represented as int32".
int32_t checked_int32(int64_t v, const std::string& what);

}  // namespace wgml::runtime
