// Kernel families, lists of tensors, output dtypes from attributes and expressions, and the render
// cache keyed by what templates read, on small hand-written specs.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <nlohmann/json.hpp>

#include "kernel/engine.h"
#include "spec_test_support.h"

namespace wgml::kernel {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Json = nlohmann::ordered_json;
using testing::error_of;

// out = op(x) for two ops of one family; the template reads the op's expression, the rank and the
// dtype, and takes the count from params.
Json unary_family() {
  return Json::parse(R"json({
    "domain": "test", "family": "unary",
    "typeSets": { "floats": ["float32", "float16"], "ints": ["int32"] },
    "inputs": { "x": { "dtype": "T" } },
    "outputs": { "y": { "dtype": "T", "shape": "shapes.x" } },
    "typeConstraints": { "T": "floats" },
    "when": ["f16Ok(dtypes.T)"],
    "derive": { "expr": null, "rank": "ranks.x" },
    "bindings": { "params": { "struct": [
      { "name": "count", "type": "u32", "value": "numel(shapes.x)" },
      { "name": "shape", "type": "array<vec4<u32>, 2>", "value": "[shapes.x[d] if d < ranks.x else 1 for d in range(8)]" } ] } },
    "variants": [ { "id": "main", "passes": [ {
      "id": "map", "shader": "map.wgsl.jinja", "bindings": ["x", "y", "params"],
      "dispatch": { "workgroups": "ceilDiv(numel(shapes.x), 64)" } } ] } ],
    "ops": {
      "Exp": { "expr": "exp(v)" },
      "Neg": { "typeConstraints": { "T": "ints" }, "when": ["ranks.x >= 1"], "expr": "-v" }
    }
  })json");
}

const char* kMapTemplate = R"({% include "common/prelude.wgsl.jinja" %}
// rank {{ rank }}
@compute @workgroup_size(64)
fn {{ entryPoint }}(@builtin(global_invocation_id) id: vec3<u32>) {
  if (id.x < params.count) {
    let v = x[id.x];
    y[id.x] = {{ expr }};
  }
}
)";

class Families : public ::testing::Test {
 protected:
  Families() : templates_("family_test"), engine_(templates_.dir()) { templates_.write("map.wgsl.jinja", kMapTemplate); }

  std::vector<std::shared_ptr<const KernelSpec>> add_all(const Json& family) {
    std::vector<std::shared_ptr<const KernelSpec>> out;
    for (KernelSpec& s : parse_specs(family.dump(2), "unary.json")) out.push_back(engine_.add(std::move(s)));
    return out;
  }

  static KernelRequest request(DType dtype, Shape shape) {
    KernelRequest r;
    r.inputs["x"] = {dtype, std::move(shape)};
    return r;
  }

  testing::ScratchTemplates templates_;
  Engine engine_;
};

TEST_F(Families, EachOpIsASpecMergedFromTheFamilyAndItsEntry) {
  const auto specs = add_all(unary_family());
  ASSERT_EQ(specs.size(), 2u);
  EXPECT_EQ(specs[0]->name, "Exp");
  EXPECT_EQ(specs[0]->file, "unary.json#Exp");
  EXPECT_THAT(specs[0]->type_constraints.at("T"), ElementsAre(DType::Float32, DType::Float16));
  EXPECT_THAT(specs[1]->type_constraints.at("T"), ElementsAre(DType::Int32));  // a typeSet by name
  EXPECT_EQ(specs[1]->when.size(), 2u);                                        // the family's, then the op's
  const KernelPlan exp = engine_.plan(*specs[0], request(DType::Float32, {5}), {});
  EXPECT_THAT(*exp.passes[0].wgsl, HasSubstr("y[id.x] = exp(v);"));
  EXPECT_EQ(exp.passes[0].name, "Exp");  // a variant's only pass is named by its op
  const KernelPlan neg = engine_.plan(*specs[1], request(DType::Int32, {5}), {});
  EXPECT_THAT(*neg.passes[0].wgsl, HasSubstr("y[id.x] = -v;"));
  EXPECT_THAT(error_of([&] { engine_.plan(*specs[1], request(DType::Int32, {}), {}); }, ErrorCode::Unsupported),
              HasSubstr("when[1] `ranks.x >= 1` is false"));
}

TEST_F(Families, MalformedFamiliesNameTheFileTheOpAndTheKey) {
  Json typo = unary_family();
  typo["ops"]["Exp"]["atributes"] = Json::object();
  EXPECT_THAT(
      error_of([&] { parse_specs(typo.dump(), "unary.json"); }, ErrorCode::InvalidFormat),
      HasSubstr("unary.json: ops.Exp.atributes: 'atributes' is neither a spec key nor a derived value the family declares"));
  Json missing = unary_family();
  missing["ops"]["Exp"].erase("expr");
  EXPECT_THAT(error_of([&] { parse_specs(missing.dump(), "unary.json"); }, ErrorCode::InvalidFormat),
              HasSubstr("ops.Exp: the family leaves 'expr' to each op, and this op does not set it"));
  Json bad_set = unary_family();
  bad_set["ops"]["Exp"]["typeConstraints"] = Json::parse(R"({"T": "doubles"})");
  EXPECT_THAT(error_of([&] { parse_specs(bad_set.dump(), "unary.json"); }, ErrorCode::InvalidFormat),
              HasSubstr("ops.Exp.typeConstraints.T: 'doubles' is not one of the family's typeSets"));
  Json bad_expr = unary_family();
  bad_expr["ops"]["Neg"]["when"] = Json::array({"ranks.z >= 1"});
  EXPECT_THAT(error_of([&] { parse_specs(bad_expr.dump(), "unary.json"); }, ErrorCode::InvalidFormat),
              HasSubstr("unary.json#Neg"));
  EXPECT_THAT(error_of([&] { parse_spec(unary_family().dump(), "unary.json"); }, ErrorCode::InvalidFormat),
              HasSubstr("expected a single spec, found a family of 2 ops"));
}

TEST_F(Families, TheRenderCacheKeysByWhatTheTemplateReadsNotByShapes) {
  const auto specs = add_all(unary_family());
  RenderCache renders;
  const auto wgsl = [&](Shape shape) {
    return engine_.plan(*specs[0], request(DType::Float32, std::move(shape)), {}, {}, &renders).passes[0].wgsl;
  };
  const auto first = wgsl({3, 5});
  EXPECT_EQ(wgsl({7, 2}), first);  // the same rank: the same WGSL object, rendered once
  EXPECT_EQ(wgsl({1, 1}), first);
  EXPECT_EQ(renders.renders(), 1u);
  const auto rank3 = wgsl({2, 3, 4});  // the template reads the rank: another class
  EXPECT_NE(rank3, first);
  EXPECT_THAT(*rank3, HasSubstr("// rank 3"));
  EXPECT_EQ(renders.renders(), 2u);
  // The shape travels in params: 7 x 2 as the first two u32s of `shape`.
  const KernelPlan p = engine_.plan(*specs[0], request(DType::Float32, {7, 2}), {}, {}, &renders);
  uint32_t dims[2];
  std::memcpy(dims, p.passes[0].params.data() + 16, sizeof dims);
  EXPECT_EQ(dims[0], 7u);
  EXPECT_EQ(dims[1], 2u);
}

TEST_F(Families, ListsBindAsNumberedTensorsThatKnowTheirIndex) {
  Json j = Json::parse(R"json({
    "domain": "test", "name": "Parts",
    "inputs": { "x": { "dtype": "T" } },
    "outputs": { "outs": { "dtype": "T", "list": 3, "optional": true, "shape": "[shapes.x[0] + listIndex]" } },
    "typeConstraints": { "T": ["float32"] },
    "variants": [ { "id": "main", "passes": [ {
      "id": "map", "shader": "map.wgsl.jinja", "bindings": ["x", "outs0", "params"],
      "dispatch": { "workgroups": "1" } } ] } ],
    "derive": { "expr": "\"v\"", "rank": "1" },
    "bindings": { "params": { "struct": [
      { "name": "count", "type": "u32", "value": "1" },
      { "name": "shape", "type": "array<vec4<u32>, 2>", "value": "[1, 1, 1, 1, 1, 1, 1, 1]" } ] } }
  })json");
  const auto spec = engine_.add(parse_spec(j.dump(), "parts.json"));
  ASSERT_EQ(spec->outputs.size(), 3u);
  EXPECT_EQ(spec->outputs[2].name, "outs2");
  EXPECT_EQ(spec->outputs[2].list, "outs");
  KernelRequest r = request(DType::Float32, {4});
  r.wanted_outputs = {"outs0", "outs2"};
  const KernelPlan p = engine_.plan(*spec, r, {});
  EXPECT_EQ(p.tensor("outs0")->shape, (Shape{4}));
  EXPECT_EQ(p.tensor("outs2")->shape, (Shape{6}));
  EXPECT_EQ(p.tensor("outs1"), nullptr);
}

TEST_F(Families, AnOutputMayTakeItsDtypeFromAScalarTypeAttribute) {
  Json j = unary_family();
  j["ops"] = Json::parse(R"json({ "Cast": {
    "typeConstraints": { "U": ["float32", "int32"] },
    "outputs": { "y": { "dtype": "U", "dtypeAttribute": "scalar_type" } },
    "attributes": { "scalar_type": {} }, "expr": "U(v)" } })json");
  const auto spec = add_all(j).front();
  KernelRequest r = request(DType::Float32, {4});
  r.attributes["scalar_type"] = Value(int64_t{3});  // ExecuTorch's Int
  EXPECT_EQ(engine_.plan(*spec, r, {}).tensor("y")->dtype, DType::Int32);
  r.attributes["scalar_type"] = Value(int64_t{1000});
  EXPECT_THAT(error_of([&] { engine_.plan(*spec, r, {}); }, ErrorCode::InvalidArgument), HasSubstr("is no ScalarType code"));
}

// Dequantize's rule: the output's dtype named by an expression of the inputs and attributes (the
// attribute when given, else one that depends on the input).
TEST_F(Families, AnOutputMayNameItsDtypeByAnExpression) {
  Json j = unary_family();
  j["ops"] = Json::parse(R"json({ "Convert": {
    "typeConstraints": { "U": ["float32", "int32"] },
    "outputs": { "y": { "dtype": "U", "dtypeExpr": "scalarTypeName(attrs.to) if attrs.to >= 0 else \"int32\" if ranks.x > 1 else \"float32\"" } },
    "attributes": { "to": { "default": -1 } }, "expr": "U(v)" } })json");
  const auto spec = add_all(j).front();
  EXPECT_EQ(engine_.plan(*spec, request(DType::Float32, {4}), {}).tensor("y")->dtype, DType::Float32);
  EXPECT_EQ(engine_.plan(*spec, request(DType::Float32, {2, 2}), {}).tensor("y")->dtype, DType::Int32);
  KernelRequest r = request(DType::Float32, {4});
  r.attributes["to"] = Value(int64_t{3});  // ExecuTorch's Int
  EXPECT_EQ(engine_.plan(*spec, r, {}).tensor("y")->dtype, DType::Int32);
  r.attributes["to"] = Value(int64_t{4});  // Long: outside U
  EXPECT_THAT(error_of([&] { engine_.plan(*spec, r, {}); }, ErrorCode::InvalidArgument), HasSubstr("is not allowed"));
}

}  // namespace
}  // namespace wgml::kernel
