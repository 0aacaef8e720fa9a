#include "runtime/exec_context.h"

#include <limits>

namespace wgml::runtime {

void fail(const std::string& message) { throw Error(ErrorCode::Runtime, message); }

int32_t clamp_to_int32(int64_t v) {
  constexpr int64_t lo = std::numeric_limits<int32_t>::min();
  constexpr int64_t hi = std::numeric_limits<int32_t>::max();
  return static_cast<int32_t>(v < lo ? lo : (v > hi ? hi : v));
}

int32_t checked_int32(int64_t v, const std::string& what) {
  if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max())
    fail(what + ": " + std::to_string(v) + " cannot be represented as int32");
  return static_cast<int32_t>(v);
}

ExecContext::ExecContext(const ir::Program& program)
    : program_(program), tensors_(static_cast<size_t>(program.num_tensors())), values_(program.num_values) {}

const Tensor& ExecContext::tensor(ir::Tid t) const {
  const Tensor& v = tensors_[t.idx];
  if (!v.defined())
    fail("tensor slot " + std::to_string(t.idx) + " (" + ir::tensor_class_name(program_.tensor_class(t)) +
         ") is read before it is written");
  return v;
}

const ScalarValue& ExecContext::value(ir::Vid v) const {
  const ScalarValue& s = values_[v.idx];
  if (std::holds_alternative<std::monostate>(s)) fail("value slot " + std::to_string(v.idx) + " is read before it is written");
  return s;
}

int64_t ExecContext::int_value(ir::Vid v) const {
  const ScalarValue& s = value(v);
  if (const auto* i = std::get_if<int64_t>(&s)) return *i;
  if (const auto* b = std::get_if<bool>(&s)) return *b ? 1 : 0;
  fail("value slot " + std::to_string(v.idx) + " holds a float where an int is expected");
}

float ExecContext::float_value(ir::Vid v) const {
  const ScalarValue& s = value(v);
  if (const auto* f = std::get_if<float>(&s)) return *f;
  if (const auto* i = std::get_if<int64_t>(&s)) return static_cast<float>(*i);
  return std::get<bool>(s) ? 1.0f : 0.0f;
}

void ExecContext::clear_values() {
  for (ScalarValue& v : values_) v = std::monostate{};
}

int64_t ExecContext::resolve(const ir::IntOrVid& v) const {
  if (v.is_vid) return int_value(v.vid);
  return program_.int64_values ? v.literal : clamp_to_int32(v.literal);
}

int64_t ExecContext::resolve_int(const ir::IntOrVidOrTid& v) const {
  if (v.kind == ir::IntOrVidOrTid::Tensor) fail("internal: a tensor index read as an int");
  return resolve(v.kind == ir::IntOrVidOrTid::Value ? ir::IntOrVid{.vid = v.vid, .is_vid = true}
                                                    : ir::IntOrVid{.literal = v.literal});
}

int32_t ExecContext::resolve_int32(const ir::IntOrVid& v, const std::string& what) const {
  return checked_int32(resolve(v), what);
}

Shape ExecContext::resolve(const std::vector<ir::IntOrVid>& v) const {
  Shape out;
  out.reserve(v.size());
  for (const auto& item : v) out.push_back(resolve(item));
  return out;
}

float ExecContext::resolve(const ir::FloatOrVid& v) const {
  return v.is_vid ? float_value(v.vid) : static_cast<float>(v.literal);
}

const Tensor* ExecContext::optional_tensor(const std::optional<ir::Tid>& t) const { return t ? &tensor(*t) : nullptr; }

}  // namespace wgml::runtime
