#pragma once
// kernel::Value: what kernel-spec expressions and WGSL templates compute with. Kinds follow the
// expression language: bool, int (int64), float (double), string, list, and object (string keys;
// the namespaces `shapes`, `dtypes`, ... and the binding descriptions templates iterate over).
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace wgml::kernel {

class Value;
using List = std::vector<Value>;
using Object = std::map<std::string, Value, std::less<>>;

class Value {
 public:
  enum class Kind { Bool, Int, Float, String, List, Object };

  Value() : data_(false) {}
  Value(bool b) : data_(b) {}
  Value(int v) : data_(int64_t{v}) {}
  Value(int64_t v) : data_(v) {}
  Value(uint32_t v) : data_(int64_t{v}) {}
  Value(double v) : data_(v) {}
  Value(const char* s) : data_(std::string(s)) {}
  Value(std::string s) : data_(std::move(s)) {}
  Value(List l) : data_(std::make_shared<const List>(std::move(l))) {}
  Value(Object o) : data_(std::make_shared<const Object>(std::move(o))) {}
  static Value int_list(const std::vector<int64_t>& ints);

  Kind kind() const { return static_cast<Kind>(data_.index()); }
  bool is_bool() const { return kind() == Kind::Bool; }
  bool is_int() const { return kind() == Kind::Int; }
  bool is_float() const { return kind() == Kind::Float; }
  bool is_number() const { return is_int() || is_float(); }
  bool is_string() const { return kind() == Kind::String; }
  bool is_list() const { return kind() == Kind::List; }
  bool is_object() const { return kind() == Kind::Object; }

  // Accessors for a kind the caller checked.
  bool as_bool() const { return std::get<bool>(data_); }
  int64_t as_int() const { return std::get<int64_t>(data_); }
  double as_number() const { return is_int() ? static_cast<double>(as_int()) : std::get<double>(data_); }
  const std::string& as_string() const { return std::get<std::string>(data_); }
  const List& as_list() const { return *std::get<std::shared_ptr<const List>>(data_); }
  const Object& as_object() const { return *std::get<std::shared_ptr<const Object>>(data_); }
  // Member of an object, or nullptr.
  const Value* member(std::string_view name) const;

  // Python truthiness: false, 0, 0.0, "", [] and {} are false.
  bool truthy() const;
  // Text as `~` and `{{ }}` produce it: ints in decimal, floats as the shortest round-trip form
  // with a '.', bools as WGSL's true/false, lists as [a, b].
  std::string to_text() const;
  // Like to_text, but strings quoted: for error messages and `wgml spec render`.
  std::string repr() const;
  // Appends an encoding of the value that tells any two values apart (kind, raw bits, lengths): for
  // cache keys on the hot path, where repr's number formatting costs more than the lookup.
  void append_key(std::string& key) const;

  friend bool operator==(const Value& a, const Value& b);

 private:
  std::variant<bool, int64_t, double, std::string, std::shared_ptr<const List>, std::shared_ptr<const Object>> data_;
};

const char* kind_name(Value::Kind kind);
// The shortest decimal that reads back as `v`, always with a '.' or an exponent.
std::string format_float(double v);
// The same for the float nearest `v`: the shortest decimal that reads back as that float.
std::string format_float32(float v);

}  // namespace wgml::kernel
