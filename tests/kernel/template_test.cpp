// The Jinja subset of WGSL templates: output, if/elif/else, for with loop, set, include,
// comments, whitespace control, and errors with template, line and column.
#include "kernel/template.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>
#include <filesystem>
#include <fstream>

#include "wgml/error.h"

namespace wgml::kernel {
namespace {

using ::testing::HasSubstr;

std::string render(const std::string& text, Object names = {}) {
  ObjectScope scope(std::move(names));
  return Template::compile("t.wgsl.jinja", text, nullptr)->render(scope);
}

std::string compile_error(const std::string& text) {
  try {
    Template::compile("t.wgsl.jinja", text, nullptr);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidFormat);
    return e.what();
  }
  ADD_FAILURE() << "no error for " << text;
  return "";
}

TEST(SpecTemplate, OutputsValuesAsWgslText) {
  EXPECT_EQ(render("const N: u32 = {{ n }}u;", {{"n", Value(12)}}), "const N: u32 = 12u;");
  EXPECT_EQ(render("{{ 0.5 }} {{ 2.0 }} {{ true }} {{ \"vec4<\" ~ t ~ \">\" }}", {{"t", Value("f32")}}),
            "0.5 2.0 true vec4<f32>");
  EXPECT_EQ(render("{{ shape | join(\", \") }}", {{"shape", Value::int_list({2, 3})}}), "2, 3");
  EXPECT_EQ(render("a{# a comment #}b"), "ab");
  EXPECT_EQ(render("no tags { at all }"), "no tags { at all }");
}

TEST(SpecTemplate, IfElifElse) {
  const std::string t = "{% if x > 2 %}big{% elif x > 0 %}small{% else %}none{% endif %}";
  EXPECT_EQ(render(t, {{"x", Value(3)}}), "big");
  EXPECT_EQ(render(t, {{"x", Value(1)}}), "small");
  EXPECT_EQ(render(t, {{"x", Value(0)}}), "none");
  EXPECT_EQ(render("{% if x %}yes{% endif %}", {{"x", Value(false)}}), "");
}

TEST(SpecTemplate, ForWithLoopVariables) {
  EXPECT_EQ(render("{% for d in dims %}{{ loop.index0 }}:{{ d }}{% if not loop.last %}, {% endif %}{% endfor %}",
                   {{"dims", Value::int_list({4, 8, 16})}}),
            "0:4, 1:8, 2:16");
  EXPECT_EQ(render("{% for i in range(3) %}{{ loop.index }}/{{ loop.length }}{{ ' first' if loop.first else '' }};{% endfor %}"),
            "1/3 first;2/3;3/3;");
  EXPECT_EQ(render("{% for i in [] %}x{% endfor %}"), "");
}

TEST(SpecTemplate, SetIsScopedToItsLoop) {
  EXPECT_EQ(render("{% set a = 2 %}{% set b = a * 3 %}{{ b }}"), "6");
  EXPECT_EQ(render("{% set x = 1 %}{% for i in [5] %}{% set x = i %}{{ x }}{% endfor %}{{ x }}"), "51");
  EXPECT_EQ(render("{% if true %}{% set y = 7 %}{% endif %}{{ y }}"), "7");
}

TEST(SpecTemplate, BlocksTrimTheirLineLikeJinjaTrimAndLstripBlocks) {
  const std::string t =
      "fn f() {\n"
      "  {% if a %}\n"
      "  let x = 1;\n"
      "  {% else %}\n"
      "  let x = 2;\n"
      "  {% endif %}\n"
      "}\n";
  EXPECT_EQ(render(t, {{"a", Value(true)}}), "fn f() {\n  let x = 1;\n}\n");
  EXPECT_EQ(render(t, {{"a", Value(false)}}), "fn f() {\n  let x = 2;\n}\n");
  // An output tag does not eat its newline; a block after text on the same line keeps the text.
  EXPECT_EQ(render("{{ 1 }}\nx {% if true %}y{% endif %}\n"), "1\nx y");
}

TEST(SpecTemplate, DashesStripWhitespace) {
  EXPECT_EQ(render("a   \n  {{- 1 -}}  \n  b"), "a1b");
  EXPECT_EQ(render("[ {%- for i in range(2) -%} {{ i }} {%- endfor -%} ]"), "[01]");
  EXPECT_EQ(render("x\n{#- comment -#}\ny"), "xy");
}

TEST(SpecTemplate, FreeNamesExcludeWhatTheTemplateBinds) {
  const auto t = Template::compile(
      "t", "{% set k = a %}{% for i in b %}{{ i + k + loop.index + c.d }}{% endfor %}{{ ceilDiv(e, 2) }}", nullptr);
  std::vector<std::string> names;
  for (const auto& f : t->free_names()) names.push_back(f.use.name + (f.use.member.empty() ? "" : "." + f.use.member));
  EXPECT_EQ(names, (std::vector<std::string>{"a", "b", "c.d", "e"}));
}

TEST(SpecTemplate, SyntaxErrorsNameTemplateLineAndColumn) {
  EXPECT_THAT(compile_error("ok\n{% if x %}\nno end"), HasSubstr("t.wgsl.jinja:2:4: 'if' is never closed by 'endif'"));
  EXPECT_THAT(compile_error("{% endfor %}"), HasSubstr("t.wgsl.jinja:1:4: 'endfor' without an open block"));
  EXPECT_THAT(compile_error("a\n  {{ 1 + }}"), HasSubstr("t.wgsl.jinja: line 2: column 9: expected a value at the end"));
  EXPECT_THAT(compile_error("{{ x"), HasSubstr("t.wgsl.jinja:1:1: '{{' is never closed by '}}'"));
  EXPECT_THAT(compile_error("{% while x %}{% endwhile %}"), HasSubstr("unknown statement 'while'"));
  EXPECT_THAT(compile_error("{% for x of y %}{% endfor %}"), HasSubstr("expected 'for NAME in EXPRESSION'"));
  EXPECT_THAT(compile_error("{% set = 1 %}"), HasSubstr("expected 'set NAME = EXPRESSION'"));
  EXPECT_THAT(compile_error("{% include \"x\" %}"), HasSubstr("includes need a template directory"));
  EXPECT_THAT(compile_error("{{ }}"), HasSubstr("empty '{{' tag"));
}

TEST(SpecTemplate, RenderErrorsNameTemplateLineAndColumn) {
  try {
    render("line one\n  x = {{ 1 + missing }};");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::Runtime);
    EXPECT_THAT(e.what(), HasSubstr("t.wgsl.jinja: line 2: column 14: 'missing' is not defined"));
  }
  try {
    render("{% for x in 3 %}{% endfor %}");
    FAIL();
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("'for' needs a list, not a int"));
  }
}

class SpecTemplateLibrary : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("wgml_template_test_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_ / "common");
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  void write(const std::string& name, const std::string& text) { std::ofstream(dir_ / name) << text; }
  std::filesystem::path dir_;
};

TEST_F(SpecTemplateLibrary, IncludesShareTheIncludersNames) {
  write("common/decl.wgsl.jinja", "var<private> {{ name }}: {{ type }};\n");
  write("main.wgsl.jinja", "{% set type = \"u32\" %}\n{% include \"common/decl.wgsl.jinja\" %}\nfn main() {}\n");
  TemplateLibrary library(dir_.string());
  const auto t = library.get("main.wgsl.jinja");
  EXPECT_EQ(library.get("main.wgsl.jinja"), t);  // compiled once
  ObjectScope scope(Object{{"name", Value("counter")}});
  EXPECT_EQ(t->render(scope), "var<private> counter: u32;\nfn main() {}\n");
  ASSERT_EQ(t->free_names().size(), 1u);
  EXPECT_EQ(t->free_names()[0].use.name, "name");
}

TEST_F(SpecTemplateLibrary, MissingTemplatesAndCyclesAreErrors) {
  TemplateLibrary library(dir_.string());
  try {
    library.get("nope.wgsl.jinja");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::Io);
    EXPECT_THAT(e.what(), HasSubstr("template 'nope.wgsl.jinja' does not exist"));
  }
  write("a.wgsl.jinja", "{% include \"b.wgsl.jinja\" %}");
  write("b.wgsl.jinja", "{% include \"a.wgsl.jinja\" %}");
  try {
    library.get("a.wgsl.jinja");
    FAIL();
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("include cycle: a.wgsl.jinja -> b.wgsl.jinja -> a.wgsl.jinja"));
  }
  EXPECT_THROW(library.get("../outside.wgsl.jinja"), Error);
}

}  // namespace
}  // namespace wgml::kernel
