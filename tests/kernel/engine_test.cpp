// The spec engine on small hand-written specs: validation errors, matching, variant choice,
// params packing, dispatch folding, tunables, f16 availability.
#include "kernel/engine.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <nlohmann/json.hpp>

#include "core/half.h"
#include "kernel/decomposition.h"
#include "spec_test_support.h"

namespace wgml::kernel {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using Json = nlohmann::ordered_json;
using testing::error_of;

// y = x * factor: one variant, one pass.
Json scale_spec() {
  return Json::parse(R"json({
    "domain": "test", "name": "Scale",
    "inputs": { "x": { "dtype": "T" } },
    "outputs": { "y": { "dtype": "T", "shape": "shapes.x" } },
    "attributes": { "factor": { "default": 2.0 } },
    "typeConstraints": { "T": ["float32", "float16", "int32"] },
    "tunables": { "WG": { "default": 64, "min": 1, "max": 256 } },
    "when": ["f16Ok(dtypes.T)"],
    "bindings": { "params": { "struct": [
      { "name": "count", "type": "u32", "value": "numel(shapes.x)" },
      { "name": "factor", "type": "f32", "value": "attrs.factor" } ] } },
    "variants": [ { "id": "main", "passes": [ {
      "id": "run", "shader": "scale.wgsl.jinja", "bindings": ["x", "y", "params"],
      "dispatch": { "workgroups": "ceilDiv(numel(shapes.x), tunables.WG)" } } ] } ]
  })json");
}

const char* kScaleTemplate = R"({% include "common/prelude.wgsl.jinja" %}

@compute @workgroup_size({{ tunables.WG }})
fn {{ entryPoint }}(@builtin(global_invocation_id) id: vec3<u32>) {
  if (id.x < params.count) {
    y[id.x] = x[id.x] * {{ dtypes.T }}(params.factor);
  }
}
)";

std::string spec_error(const Json& j) {
  return error_of([&] { parse_spec(j.dump(2), "test.json"); }, ErrorCode::InvalidFormat);
}

class SpecEngine : public ::testing::Test {
 protected:
  SpecEngine() : templates_("engine_test"), engine_(templates_.dir()) { templates_.write("scale.wgsl.jinja", kScaleTemplate); }

  std::shared_ptr<const KernelSpec> add(const Json& j) { return engine_.add(parse_spec(j.dump(2), "test.json")); }

  KernelPlan plan(const Json& j, const KernelRequest& request, DeviceCaps device = {}, const TunableOverrides& tunables = {}) {
    return engine_.plan(*add(j), request, device, tunables);
  }

  static KernelRequest scale_request(DType dtype, Shape shape) {
    KernelRequest r;
    r.inputs["x"] = {dtype, std::move(shape)};
    return r;
  }

  testing::ScratchTemplates templates_;
  Engine engine_;
};

// ---- validation ------------------------------------------------------------------------------

TEST(SpecValidation, TheTestSpecIsValid) { EXPECT_NO_THROW(parse_spec(scale_spec().dump(), "test.json")); }

TEST(SpecValidation, UnknownKeysAndWrongTypes) {
  Json j = scale_spec();
  j["colour"] = "red";
  EXPECT_THAT(spec_error(j), HasSubstr("test.json: colour: unknown key 'colour' (allowed: domain, name, sinceVersion"));
  j = scale_spec();
  j["inputs"]["x"]["optional"] = "yes";
  EXPECT_THAT(spec_error(j), HasSubstr("test.json: inputs.x.optional: expected a bool, found a string"));
  j = scale_spec();
  j["variants"][0]["passes"][0]["bindings"] = "x";
  EXPECT_THAT(spec_error(j),
              HasSubstr("test.json: variants[0].passes[0].bindings: expected a non-empty list of bindings, found a string"));
  j = scale_spec();
  j["variants"][0]["passes"][0].erase("shader");
  EXPECT_THAT(spec_error(j), HasSubstr("test.json: variants[0].passes[0]: missing required key 'shader'"));
  j = scale_spec();
  j["typeConstraints"]["T"][1] = "float8";
  EXPECT_THAT(spec_error(j), HasSubstr("test.json: typeConstraints.T[1]: unknown dtype 'float8'"));
  j = scale_spec();
  j["variants"].push_back(j["variants"][0]);
  EXPECT_THAT(spec_error(j), HasSubstr("variants[1].id: variant id 'main' is used twice"));
  EXPECT_THAT(error_of([] { parse_spec("{\"domain\": ", "bad.json"); }, ErrorCode::InvalidFormat),
              HasSubstr("bad.json: not valid JSON"));
  // nlohmann reports a number beyond double as out_of_range, not parse_error (found by fuzz_spec).
  EXPECT_THAT(error_of([] { parse_spec("[1E330]", "big.json"); }, ErrorCode::InvalidFormat),
              HasSubstr("big.json: not valid JSON: [json.exception.out_of_range.406] number overflow"));
}

TEST(SpecValidation, BadExpressionsNamePathAndColumn) {
  Json j = scale_spec();
  j["variants"][0]["passes"][0]["dispatch"]["workgroups"] = "ceilDiv(numel(shapes.x), ";
  EXPECT_THAT(spec_error(j),
              HasSubstr("test.json: variants[0].passes[0].dispatch.workgroups: column 26: expected a value at the end"));
  j = scale_spec();
  j["when"][0] = "f16Ok(dtypes.T) and";
  EXPECT_THAT(spec_error(j), HasSubstr("test.json: when[0]: column 20: expected a value at the end"));
}

TEST(SpecValidation, UndefinedNamesAndMembers) {
  Json j = scale_spec();
  j["variants"][0]["passes"][0]["dispatch"]["workgroups"] = "numel(shapes.x) // wg";
  EXPECT_THAT(spec_error(j), HasSubstr("dispatch.workgroups: column 20: 'wg' is not defined here"));
  j["variants"][0]["passes"][0]["dispatch"]["workgroups"] = "numel(shapes.z)";
  EXPECT_THAT(spec_error(j), HasSubstr("column 7: 'shapes' has no member 'z' (members: x, y)"));
  j = scale_spec();
  j["bindings"]["params"]["struct"][1]["value"] = "attrs.factr";
  EXPECT_THAT(spec_error(j),
              HasSubstr("bindings.params.struct[1].value: column 1: 'attrs' has no member 'factr' (members: factor)"));
  j = scale_spec();
  j["when"][0] = "dtypes.U == \"f32\"";
  EXPECT_THAT(spec_error(j), HasSubstr("'dtypes' has no member 'U' (members: x, y, T)"));
  // A pass's derived values are not visible to its variant.
  j = scale_spec();
  j["variants"][0]["passes"][0]["derive"] = {{"perPass", "1"}};
  j["variants"][0]["when"] = {"perPass > 0"};
  EXPECT_THAT(spec_error(j), HasSubstr("variants[0].when[0]: column 1: 'perPass' is not defined here"));
}

TEST(SpecValidation, PromoteNamesInputsOfATypeVariable) {
  Json j = scale_spec();
  j["inputs"]["w"] = {{"dtype", "T"}};
  j["promote"] = {"x", "w"};
  EXPECT_EQ(parse_spec(j.dump(), "test.json").promote, (std::vector<std::string>{"x", "w"}));
  j["promote"] = {"x", "y"};
  EXPECT_THAT(spec_error(j), HasSubstr("promote[1]: 'y' is not an input whose dtype is a type variable"));
  j["promote"] = {"x"};
  EXPECT_THAT(spec_error(j), HasSubstr("promote: expected a list of at least two inputs"));
}

TEST(SpecValidation, WidenNamesInputsAndTheDtypesTheyWiden) {
  Json j = scale_spec();
  j["widen"] = Json::array({"x"});
  EXPECT_EQ(parse_spec(j.dump(), "test.json").widen, (std::map<std::string, std::vector<DType>>{{"x", {}}}));
  j["widen"] = {{"x", Json::array({"bool"})}};
  EXPECT_EQ(parse_spec(j.dump(), "test.json").widen, (std::map<std::string, std::vector<DType>>{{"x", {DType::Bool}}}));
  j["widen"] = {{"x", Json::array({"float32"})}};
  EXPECT_THAT(spec_error(j), HasSubstr("widen.x[0]: only bool, int8, int16 and uint8 widen"));
  j["widen"] = {{"y", Json::array({"bool"})}};
  EXPECT_THAT(spec_error(j), HasSubstr("widen.y: 'y' is not an input whose dtype is a type variable"));
}

TEST(SpecValidation, CastLikeNamesTwoInputs) {
  Json j = scale_spec();
  j["inputs"]["w"] = {{"dtype", "T"}};
  j["castLike"] = {{"w", "x"}};
  EXPECT_EQ(parse_spec(j.dump(), "test.json").cast_like, (std::map<std::string, std::string>{{"w", "x"}}));
  j["castLike"] = {{"w", "w"}};
  EXPECT_THAT(spec_error(j), HasSubstr("castLike.w: expected an input cast to the dtype of another input"));
  j["castLike"] = {{"w", "nothing"}};
  EXPECT_THAT(spec_error(j), HasSubstr("castLike.w: expected an input cast to the dtype of another input"));
}

TEST(SpecValidation, AtLeastFloatMayBeEmptyToUndoAFamilys) {
  Json j = scale_spec();
  j["atLeastFloat"] = Json::array({"x"});
  EXPECT_EQ(parse_spec(j.dump(), "test.json").at_least_float, (std::vector<std::string>{"x"}));
  j["atLeastFloat"] = Json::array();
  EXPECT_TRUE(parse_spec(j.dump(), "test.json").at_least_float.empty());
}

TEST(SpecValidation, BindingsDispatchStorage) {
  Json j = scale_spec();
  j["bindings"]["x"] = {{"elementType", "float"}};
  EXPECT_THAT(spec_error(j), HasSubstr("bindings.x.elementType: expected \"$derivedName\" or a WGSL element type"));
  j = scale_spec();
  j["variants"][0]["passes"][0]["dispatch"]["x"] = 1;
  EXPECT_THAT(spec_error(j), HasSubstr("dispatch: give either x (with optional y, z) or workgroups"));
  j = scale_spec();
  j["bindings"]["params"]["struct"][0]["type"] = "array<u32, 4>";
  EXPECT_THAT(spec_error(j), HasSubstr("an array in a uniform struct needs elements of 16 bytes"));
  j = scale_spec();
  j["inputs"]["x"]["storage"] = "packed";
  j["typeConstraints"]["T"] = {"float32", "int64"};
  EXPECT_THAT(spec_error(j),
              HasSubstr("inputs.x.storage: 'x' (int64) with storage \"packed\": only 8-, 16- and 32-bit types pack"));
  j = scale_spec();
  j["variants"][0]["passes"][0]["viewAlias"] = Json::array({{{"input", "x"}, {"output", "z"}}});
  EXPECT_THAT(spec_error(j), HasSubstr("viewAlias[0].output: 'z' is not a binding of an output in this pass"));
  j = scale_spec();
  j["variants"][0]["passes"][0]["bindings"] = {"x", "unknown"};
  EXPECT_THAT(spec_error(j), HasSubstr("bindings[1]: 'unknown' is neither an input, an output, a scratch tensor nor a binding"));
  j = scale_spec();
  j["variants"][0]["passes"][0]["bindings"][0] = {{"arg", "x"}, {"elementType", "$missing"}};
  EXPECT_THAT(spec_error(j), HasSubstr("'missing' is not defined here"));
}

TEST_F(SpecEngine, LoadingChecksTemplates) {
  Json j = scale_spec();
  j["variants"][0]["passes"][0]["shader"] = "missing.wgsl.jinja";
  EXPECT_THAT(error_of([&] { add(j); }, ErrorCode::InvalidFormat),
              HasSubstr("test.json: variants[0].passes[0].shader: template 'missing.wgsl.jinja' does not exist"));
  templates_.write("reads-undefined.wgsl.jinja", "// {{ tunables.WG }}\n// {{ blockSize }}\n");
  j["variants"][0]["passes"][0]["shader"] = "reads-undefined.wgsl.jinja";
  const std::string message = error_of([&] { add(j); }, ErrorCode::InvalidFormat);
  EXPECT_THAT(message, HasSubstr("test.json: variants[0].passes[0]: its template reads a name this pass does not define"));
  EXPECT_THAT(message, HasSubstr("reads-undefined.wgsl.jinja: line 2: column 7: 'blockSize' is not defined here"));
}

// Messages name a kernels folder's files from that folder on: an installed or copied folder's
// errors show no path of the machine it lives on.
TEST(KernelsFolder, SpecAndDecompositionErrorsNameFilesFromTheKernelsFolderOn) {
  const testing::ScratchTemplates root("kernels_folder_names");
  const std::filesystem::path kernels = std::filesystem::path(root.dir()) / "kernels";
  std::filesystem::create_directories(kernels / "specs" / "mlx");
  std::filesystem::create_directories(kernels / "decompositions");
  std::ofstream(kernels / "specs" / "mlx" / "broken.json") << "{ not json";
  std::ofstream(kernels / "decompositions" / "broken.json") << "{ not json";
  Engine engine(root.dir());
  const std::string spec_message =
      error_of([&] { engine.load_directory((kernels / "specs").string()); }, ErrorCode::InvalidFormat);
  EXPECT_THAT(spec_message, ::testing::StartsWith("kernels/specs/mlx/broken.json: "));
  EXPECT_THAT(spec_message, Not(HasSubstr(root.dir())));
  const std::string decomposition_message =
      error_of([&] { load_decomposition_directory((kernels / "decompositions").string()); }, ErrorCode::InvalidFormat);
  EXPECT_THAT(decomposition_message, ::testing::StartsWith("kernels/decompositions/broken.json: "));
}

// ---- planning --------------------------------------------------------------------------------

TEST_F(SpecEngine, PlansBindingsParamsDispatchAndWgsl) {
  KernelRequest request = scale_request(DType::Float32, {3, 5});
  request.attributes["factor"] = Value(0.5);
  const KernelPlan p = plan(scale_spec(), request);
  EXPECT_EQ(p.op, "test.Scale");
  EXPECT_EQ(p.variant, "main");
  ASSERT_EQ(p.tensors.size(), 2u);
  EXPECT_EQ(p.tensor("y")->shape, (Shape{3, 5}));
  EXPECT_TRUE(p.tensor("y")->is_output);
  EXPECT_EQ(p.tensor("y")->gpu_bytes, 60u);
  ASSERT_EQ(p.passes.size(), 1u);
  const PlanPass& pass = p.passes[0];
  EXPECT_EQ(pass.name, "Scale");
  ASSERT_EQ(pass.bindings.size(), 3u);
  EXPECT_EQ(pass.bindings[0].access, BindingAccess::Read);
  EXPECT_EQ(pass.bindings[0].element_type, "f32");
  EXPECT_EQ(pass.bindings[1].role, BindingRole::Output);
  EXPECT_EQ(pass.bindings[1].access, BindingAccess::ReadWrite);
  EXPECT_EQ(pass.bindings[2].role, BindingRole::Params);
  EXPECT_EQ(pass.bindings[2].index, 2u);
  ASSERT_EQ(pass.params.size(), 8u);
  uint32_t count = 0;
  float factor = 0;
  std::memcpy(&count, pass.params.data(), 4);
  std::memcpy(&factor, pass.params.data() + 4, 4);
  EXPECT_EQ(count, 15u);
  EXPECT_EQ(factor, 0.5f);
  EXPECT_EQ(pass.dispatch, (std::array<uint32_t, 3>{1, 1, 1}));
  EXPECT_EQ(*pass.wgsl,
            "struct Params {\n  count: u32,\n  factor: f32,\n};\n\n"
            "@group(0) @binding(0) var<storage, read> x: array<f32>;\n"
            "@group(0) @binding(1) var<storage, read_write> y: array<f32>;\n"
            "@group(0) @binding(2) var<uniform> params: Params;\n\n"
            "@compute @workgroup_size(64)\n"
            "fn main(@builtin(global_invocation_id) id: vec3<u32>) {\n"
            "  if (id.x < params.count) {\n"
            "    y[id.x] = x[id.x] * f32(params.factor);\n  }\n}\n");
}

TEST_F(SpecEngine, RequestsThatDoNotMatchAreErrors) {
  EXPECT_THAT(
      error_of([&] { plan(scale_spec(), scale_request(DType::Int8, {4})); }, ErrorCode::InvalidArgument),
      HasSubstr("test.Scale (test.json): T = int8 (from input 'x') is not allowed; typeConstraints.T: float32, float16, int32"));
  EXPECT_THAT(error_of([&] { plan(scale_spec(), KernelRequest{}); }, ErrorCode::InvalidArgument),
              HasSubstr("input 'x' is required"));
  KernelRequest r = scale_request(DType::Float32, {4});
  r.inputs["w"] = {DType::Float32, {4}};
  EXPECT_THAT(error_of([&] { plan(scale_spec(), r); }, ErrorCode::InvalidArgument),
              HasSubstr("there is no input 'w' (inputs: x)"));
  r = scale_request(DType::Float32, {4});
  r.attributes["factor"] = Value("big");
  EXPECT_THAT(error_of([&] { plan(scale_spec(), r); }, ErrorCode::InvalidArgument),
              HasSubstr("attribute 'factor' must be a float like its default 2.0, found \"big\""));
  r.attributes = {{"scale", Value(1)}};
  EXPECT_THAT(error_of([&] { plan(scale_spec(), r); }, ErrorCode::InvalidArgument), HasSubstr("there is no attribute 'scale'"));
  r = scale_request(DType::Float32, {4});
  r.outputs["y"] = {DType::Int32, {4}};
  EXPECT_THAT(error_of([&] { plan(scale_spec(), r); }, ErrorCode::InvalidArgument),
              HasSubstr("output 'y' is int32 but T is already float32 from input 'x'"));
}

TEST_F(SpecEngine, AnIntAttributeForAFloatDefaultBecomesAFloat) {
  KernelRequest r = scale_request(DType::Float32, {4});
  r.attributes["factor"] = Value(3);
  const KernelPlan p = plan(scale_spec(), r);
  float factor = 0;
  std::memcpy(&factor, p.passes[0].params.data() + 4, 4);
  EXPECT_EQ(factor, 3.0f);
}

TEST_F(SpecEngine, AttributeConstraints) {
  Json j = scale_spec();
  j["attributeConstraints"] = {{"factor", {{"min", 0}, {"max", 10}}}};
  KernelRequest r = scale_request(DType::Float32, {4});
  r.attributes["factor"] = Value(11.0);
  EXPECT_THAT(error_of([&] { plan(j, r); }, ErrorCode::InvalidArgument),
              HasSubstr("attribute 'factor' = 11.0 lies outside [0.0, 10.0]"));
  j["attributeConstraints"] = {{"factor", {{"values", {1.0, 2.0}}}}};
  EXPECT_THAT(error_of([&] { plan(j, r); }, ErrorCode::InvalidArgument),
              HasSubstr("attribute 'factor' = 11.0 is not one of [1.0, 2.0]"));
}

TEST_F(SpecEngine, Float16NeedsShaderF16) {
  const KernelRequest r = scale_request(DType::Float16, {4});
  EXPECT_THAT(error_of([&] { plan(scale_spec(), r); }, ErrorCode::Unsupported),
              HasSubstr("float16 is not supported on this device (no shader-f16): when[0] `f16Ok(dtypes.T)` is false"));
  DeviceCaps f16;
  f16.shader_f16 = true;
  const KernelPlan p = plan(scale_spec(), r, f16);
  EXPECT_EQ(p.passes[0].wgsl->rfind("enable f16;\n\n", 0), 0u);
  EXPECT_THAT(*p.passes[0].wgsl, HasSubstr("var<storage, read> x: array<f16>;"));
  // Without the spec's guard the engine still refuses f16 bindings on such a device.
  Json unguarded = scale_spec();
  unguarded.erase("when");
  EXPECT_THAT(error_of([&] { plan(unguarded, r); }, ErrorCode::Unsupported), HasSubstr("pass 'run' needs f16 storage"));
}

TEST_F(SpecEngine, HighestPriorityApplicableVariantWins) {
  Json j = scale_spec();
  Json fast = j["variants"][0];
  fast["id"] = "fast";
  fast["priority"] = 10;
  fast["when"] = {"numel(shapes.x) % 4 == 0"};
  Json plain = j["variants"][0];
  plain["id"] = "plain";
  plain["when"] = {"true"};
  j["variants"] = {plain, fast};
  EXPECT_EQ(plan(j, scale_request(DType::Float32, {8})).variant, "fast");
  EXPECT_EQ(plan(j, scale_request(DType::Float32, {7})).variant, "plain");
  j["variants"][0]["when"] = {"ranks.x == 2"};
  const std::string message = error_of([&] { plan(j, scale_request(DType::Float32, {7})); }, ErrorCode::Unsupported);
  EXPECT_THAT(message, HasSubstr("no variant applies to shapes x=[7] y=[7]; dtypes T=float32 (f32); attrs factor=2.0"));
  EXPECT_THAT(message,
              HasSubstr("\n  fast: when[0] `numel(shapes.x) % 4 == 0` is false\n  plain: when[0] `ranks.x == 2` is false"));
}

// A variant's scratch tensor: sized in the variant's scope, bound read-write like an output,
// never one of the plan's outputs; a pass may bind it only when its variant declares it.
TEST_F(SpecEngine, ScratchTensorsAreVariantTemporaries) {
  Json j = scale_spec();
  j["variants"][0]["derive"] = {{"parts", "ceilDiv(numel(shapes.x), 4)"}};
  j["variants"][0]["scratch"] = {{"partials", {{"dtype", "float32"}, {"shape", "[parts, 2]"}}}};
  j["variants"][0]["passes"][0]["bindings"] = {"x", "partials", "y", "params"};
  const KernelPlan p = plan(j, scale_request(DType::Float16, {9}), DeviceCaps{.shader_f16 = true});
  const PlanTensor* partials = p.tensor("partials");
  ASSERT_NE(partials, nullptr);
  EXPECT_TRUE(partials->is_scratch);
  EXPECT_FALSE(partials->is_output);
  EXPECT_EQ(partials->shape, (Shape{3, 2}));
  EXPECT_EQ(partials->gpu_bytes, 24u);
  EXPECT_EQ(p.passes[0].bindings[1].role, BindingRole::Scratch);
  EXPECT_EQ(p.passes[0].bindings[1].access, BindingAccess::ReadWrite);
  EXPECT_EQ(p.passes[0].bindings[1].element_type, "f32");

  j["variants"][0]["scratch"]["partials"]["shape"] = "[later]";
  EXPECT_THAT(spec_error(j), HasSubstr("variants[0].scratch.partials.shape: column 2: 'later' is not defined here"));
  j["variants"][0].erase("scratch");
  EXPECT_THAT(spec_error(j), HasSubstr("'partials' is neither an input, an output, a scratch tensor"));
}

// An input read on the host ("values": true): its elements, not its buffer, reach the planner,
// which computes the output shape and params from them; no pass may bind it.
TEST_F(SpecEngine, HostValuesInputsAreReadWhilePlanningAndNeverBound) {
  Json j = scale_spec();
  j["inputs"]["repeats"] = {{"dtype", "int64"}, {"rank", 1}, {"values", true}};
  j["outputs"]["y"]["shape"] = "[shapes.x[0] * values.repeats[0]]";
  j["bindings"]["params"]["struct"][1]["value"] = "values.repeats[0] * 0.5";
  KernelRequest r = scale_request(DType::Float32, {5});
  r.inputs["repeats"] = {DType::Int64, {1}};
  r.input_values["repeats"] = {Value(int64_t{3})};
  const KernelPlan p = plan(j, r);
  EXPECT_EQ(p.tensor("y")->shape, (Shape{15}));
  EXPECT_EQ(p.tensor("repeats"), nullptr);  // nothing to upload
  float factor = 0;
  std::memcpy(&factor, p.passes[0].params.data() + 4, 4);
  EXPECT_EQ(factor, 1.5f);

  // A condition on the values; the message names the type the host input binds (no storage scalar).
  j["inputs"]["repeats"]["dtype"] = "I";
  j["typeConstraints"]["I"] = {"int64", "int32"};
  j["when"].push_back("values.repeats[0] < 10");
  r.input_values["repeats"] = {Value(int64_t{12})};
  EXPECT_THAT(error_of([&] { plan(j, r); }, ErrorCode::Unsupported),
              HasSubstr("`values.repeats[0] < 10` is false for shapes repeats=[1] x=[5] y=[60]; dtypes I=int64 T=float32 (f32)"));

  r.input_values["repeats"] = {Value(int64_t{3}), Value(int64_t{4})};
  EXPECT_THAT(error_of([&] { plan(j, r); }, ErrorCode::InvalidArgument),
              HasSubstr("input 'repeats' has 1 elements, and the request gives 2 values"));
  r.input_values.clear();
  EXPECT_THAT(error_of([&] { plan(j, r); }, ErrorCode::InvalidArgument),
              HasSubstr("input 'repeats' is read on the host (values), and the request lacks its values"));

  j["variants"][0]["passes"][0]["bindings"] = {"x", "repeats", "y", "params"};
  EXPECT_THAT(spec_error(j), HasSubstr("bindings[1]: 'repeats' is read on the host (values): no pass binds it"));
  j["inputs"]["repeats"]["valueRange"] = {"0", "9"};
  EXPECT_THAT(spec_error(j), HasSubstr("inputs.repeats.values: an input read on the host (values) has no GPU storage"));
}

TEST_F(SpecEngine, DerivedValuesAreLazyAndCyclesAreErrors) {
  Json j = scale_spec();
  j["variants"][0]["derive"] = {{"later", "earlier * 2"}, {"earlier", "numel(shapes.x)"}};
  j["bindings"]["params"]["struct"][0]["value"] = "later";
  const KernelPlan p = plan(j, scale_request(DType::Float32, {5}));
  uint32_t count = 0;
  std::memcpy(&count, p.passes[0].params.data(), 4);
  EXPECT_EQ(count, 10u);
  ASSERT_EQ(p.passes[0].derived.size(), 2u);
  EXPECT_EQ(p.passes[0].derived[0], (std::pair<std::string, Value>{"later", Value(10)}));
  j["variants"][0]["derive"] = {{"a", "b + 1"}, {"b", "a"}};
  j["bindings"]["params"]["struct"][0]["value"] = "a";
  EXPECT_THAT(error_of([&] { plan(j, scale_request(DType::Float32, {5})); }, ErrorCode::InvalidFormat),
              HasSubstr("derived value 'a' depends on itself"));
}

TEST_F(SpecEngine, WorkgroupsFoldIntoXYZByTheDeviceLimit) {
  DeviceCaps small;
  small.max_workgroups_per_dimension = 4;
  Json j = scale_spec();
  j["tunables"]["WG"]["default"] = 1;  // one workgroup per element
  const auto dispatch = [&](int64_t n) { return plan(j, scale_request(DType::Float32, {n}), small).passes[0].dispatch; };
  EXPECT_EQ(dispatch(3), (std::array<uint32_t, 3>{3, 1, 1}));
  EXPECT_EQ(dispatch(4), (std::array<uint32_t, 3>{4, 1, 1}));
  // Rows of equal length, as few as possible: 9 = 3 x 3, 17 <= 3 x 3 x 2 (not 4 x 4 x 2).
  EXPECT_EQ(dispatch(9), (std::array<uint32_t, 3>{3, 3, 1}));
  EXPECT_EQ(dispatch(17), (std::array<uint32_t, 3>{3, 3, 2}));
  EXPECT_EQ(dispatch(64), (std::array<uint32_t, 3>{4, 4, 4}));
  EXPECT_EQ(dispatch(0), (std::array<uint32_t, 3>{0, 1, 1}));
  EXPECT_THAT(error_of([&] { dispatch(65); }, ErrorCode::Runtime), HasSubstr("dispatch z = 5 lies outside [0, 4]"));
  // Explicit sizes are checked against the limit too.
  j["variants"][0]["passes"][0]["dispatch"] = {{"x", "numel(shapes.x)"}};
  EXPECT_THAT(error_of([&] { plan(j, scale_request(DType::Float32, {5}), small); }, ErrorCode::Runtime),
              HasSubstr("pass 'run': dispatch x = 5 lies outside [0, 4] (maxComputeWorkgroupsPerDimension)"));
}

TEST_F(SpecEngine, TunablesComeFromTheSpecTheAdapterFileAndTheRun) {
  const KernelRequest r = scale_request(DType::Float32, {100});
  EXPECT_EQ(plan(scale_spec(), r).passes[0].dispatch[0], 2u);  // ceil(100 / 64)
  templates_.write("adapter.json", R"({ "Scale": { "WG": 32 }, "OtherOp": { "ANY": 1 } })");
  TunableOverrides tunables;
  tunables.load_adapter_file(templates_.path("adapter.json"));
  KernelPlan p = plan(scale_spec(), r, {}, tunables);
  EXPECT_EQ(p.passes[0].dispatch[0], 4u);
  EXPECT_THAT(*p.passes[0].wgsl, HasSubstr("@workgroup_size(32)"));
  tunables.add_run_override("test.Scale.WG=128");  // per run beats the adapter file
  p = plan(scale_spec(), r, {}, tunables);
  EXPECT_EQ(p.passes[0].dispatch[0], 1u);
  EXPECT_THAT(*p.passes[0].wgsl, HasSubstr("@workgroup_size(128)"));
  TunableOverrides too_big;
  too_big.add_run_override("Scale.WG=512");
  EXPECT_THAT(error_of([&] { plan(scale_spec(), r, {}, too_big); }, ErrorCode::InvalidArgument),
              HasSubstr("--tunable Scale.WG=512: Scale.WG = 512 lies outside [1, 256]"));
  TunableOverrides unknown;
  unknown.add_run_override("Scale.BLOCK=4");
  EXPECT_THAT(error_of([&] { plan(scale_spec(), r, {}, unknown); }, ErrorCode::InvalidArgument),
              HasSubstr("--tunable Scale.BLOCK=4: Scale has no tunable 'BLOCK' (it has: WG)"));
  EXPECT_THAT(error_of([&] { TunableOverrides().add_run_override("WG=4"); }, ErrorCode::InvalidArgument),
              HasSubstr("--tunable WG=4: malformed (expected Op.NAME=VALUE)"));
  EXPECT_THAT(error_of([&] { TunableOverrides().add_run_override("Scale.WG=four"); }, ErrorCode::InvalidArgument),
              HasSubstr("the value must be an integer"));
  templates_.write("bad.json", R"({ "Scale": { "WG": "big" } })");
  EXPECT_THAT(error_of([&] { TunableOverrides().load_adapter_file(templates_.path("bad.json")); }, ErrorCode::InvalidFormat),
              HasSubstr("bad.json: Scale.WG: expected an integer"));
}

TEST_F(SpecEngine, ElementTypesMustMatchTheTensorsStorage) {
  Json j = scale_spec();
  j["variants"][0]["passes"][0]["bindings"][0] = {{"arg", "x"}, {"elementType", "u32"}};
  EXPECT_THAT(error_of([&] { plan(j, scale_request(DType::Float32, {4})); }, ErrorCode::Runtime),
              HasSubstr("binding 'x' has element type u32 but 'x' is stored as f32 (native float32)"));
}

// ---- uniform layout --------------------------------------------------------------------------

TEST(SpecUniformLayout, FollowsWgslUniformRules) {
  const char* types[] = {"u32", "vec3<f32>", "f32", "vec2<u32>", "array<vec4<u32>, 2>", "f16", "vec3<f16>"};
  std::vector<UniformField> fields;
  for (const char* t : types) {
    UniformField f;
    f.name = t;
    ASSERT_EQ(parse_uniform_type(t, f.type), "") << t;
    fields.push_back(f);
  }
  const uint32_t size = lay_out_uniform(fields);
  std::vector<uint32_t> offsets;
  for (const auto& f : fields) offsets.push_back(f.offset);
  // vec3<f32> aligns to 16; f32 packs right after its 12 bytes; the array aligns to 16 with a
  // 16-byte stride; vec3<f16> aligns to 8.
  EXPECT_EQ(offsets, (std::vector<uint32_t>{0, 16, 28, 32, 48, 80, 88}));
  EXPECT_EQ(size, 96u);

  std::vector<uint8_t> bytes(size, 0);
  EXPECT_EQ(write_uniform(fields[1], Value(List{Value(1.0), Value(2.0), Value(3.0)}), bytes), "");
  EXPECT_EQ(write_uniform(fields[4], Value(List{Value::int_list({1, 2, 3, 4}), Value::int_list({5, 6, 7, 8})}), bytes), "");
  EXPECT_EQ(write_uniform(fields[5], Value(0.5), bytes), "");
  float f = 0;
  std::memcpy(&f, bytes.data() + 16 + 8, 4);
  EXPECT_EQ(f, 3.0f);
  uint32_t u = 0;
  std::memcpy(&u, bytes.data() + 48 + 16 + 12, 4);
  EXPECT_EQ(u, 8u);
  uint16_t h = 0;
  std::memcpy(&h, bytes.data() + 80, 2);
  EXPECT_EQ(h, float_to_f16(0.5f));

  EXPECT_EQ(write_uniform(fields[0], Value(-1), bytes), "-1 does not fit in u32");
  EXPECT_EQ(write_uniform(fields[0], Value(1.5), bytes), "expected an int for u32, found 1.5");
  EXPECT_EQ(write_uniform(fields[3], Value::int_list({1}), bytes), "expected a list of 2 numbers, found [1]");
  UniformType t;
  EXPECT_THAT(parse_uniform_type("mat4x4<f32>", t), HasSubstr("expected u32, i32, f32, f16, vecN<scalar> or array<element, N>"));
}

}  // namespace
}  // namespace wgml::kernel
