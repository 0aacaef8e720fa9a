#include "kernel/value.h"

#include <charconv>
#include <cmath>

namespace wgml::kernel {

Value Value::int_list(const std::vector<int64_t>& ints) {
  List list;
  list.reserve(ints.size());
  for (int64_t v : ints) list.emplace_back(v);
  return Value(std::move(list));
}

const Value* Value::member(std::string_view name) const {
  if (!is_object()) return nullptr;
  const auto& object = as_object();
  const auto it = object.find(name);
  return it == object.end() ? nullptr : &it->second;
}

bool Value::truthy() const {
  switch (kind()) {
    case Kind::Bool:
      return as_bool();
    case Kind::Int:
      return as_int() != 0;
    case Kind::Float:
      return as_number() != 0.0;
    case Kind::String:
      return !as_string().empty();
    case Kind::List:
      return !as_list().empty();
    case Kind::Object:
      return !as_object().empty();
  }
  return false;
}

namespace {

template <class F>
std::string shortest_text(F v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  char buf[64];
  const auto result = std::to_chars(buf, buf + sizeof buf, v);
  std::string text(buf, result.ptr);
  if (text.find_first_of(".e") == std::string::npos) text += ".0";
  return text;
}

}  // namespace

std::string format_float(double v) { return shortest_text(v); }
std::string format_float32(float v) { return shortest_text(v); }

namespace {

std::string join_items(const List& list, bool quoted) {
  std::string text = "[";
  for (size_t i = 0; i < list.size(); ++i) {
    if (i) text += ", ";
    text += quoted ? list[i].repr() : list[i].to_text();
  }
  return text + "]";
}

std::string object_text(const Object& object) {
  std::string text = "{";
  bool first = true;
  for (const auto& [key, value] : object) {
    if (!first) text += ", ";
    first = false;
    text += key + ": " + value.repr();
  }
  return text + "}";
}

}  // namespace

std::string Value::to_text() const {
  switch (kind()) {
    case Kind::Bool:
      return as_bool() ? "true" : "false";
    case Kind::Int:
      return std::to_string(as_int());
    case Kind::Float:
      return format_float(as_number());
    case Kind::String:
      return as_string();
    case Kind::List:
      return join_items(as_list(), false);
    case Kind::Object:
      return object_text(as_object());
  }
  return {};
}

std::string Value::repr() const {
  if (is_string()) return "\"" + as_string() + "\"";
  if (is_list()) return join_items(as_list(), true);
  return to_text();
}

namespace {

template <class T>
void append_raw(std::string& key, T v) {
  key.append(reinterpret_cast<const char*>(&v), sizeof v);
}

void append_text(std::string& key, std::string_view text) {
  append_raw(key, static_cast<uint64_t>(text.size()));
  key.append(text);
}

}  // namespace

void Value::append_key(std::string& key) const {
  key += static_cast<char>(kind());
  switch (kind()) {
    case Kind::Bool:
      key += as_bool() ? '1' : '0';
      return;
    case Kind::Int:
      return append_raw(key, as_int());
    case Kind::Float:
      return append_raw(key, as_number());
    case Kind::String:
      return append_text(key, as_string());
    case Kind::List:
      append_raw(key, static_cast<uint64_t>(as_list().size()));
      for (const Value& item : as_list()) item.append_key(key);
      return;
    case Kind::Object:
      append_raw(key, static_cast<uint64_t>(as_object().size()));
      for (const auto& [name, item] : as_object()) {
        append_text(key, name);
        item.append_key(key);
      }
      return;
  }
}

bool operator==(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_int() && b.is_int()) return a.as_int() == b.as_int();
    return a.as_number() == b.as_number();
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Value::Kind::Bool:
      return a.as_bool() == b.as_bool();
    case Value::Kind::String:
      return a.as_string() == b.as_string();
    case Value::Kind::List:
      return a.as_list() == b.as_list();
    case Value::Kind::Object:
      return a.as_object() == b.as_object();
    default:
      return false;
  }
}

const char* kind_name(Value::Kind kind) {
  switch (kind) {
    case Value::Kind::Bool:
      return "bool";
    case Value::Kind::Int:
      return "int";
    case Value::Kind::Float:
      return "float";
    case Value::Kind::String:
      return "string";
    case Value::Kind::List:
      return "list";
    case Value::Kind::Object:
      return "object";
  }
  return "?";
}

}  // namespace wgml::kernel
