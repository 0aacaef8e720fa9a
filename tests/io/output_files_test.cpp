// The output-file naming rule of `wgml run --output-dir` (io/output_files.h): one test per class of
// hostile output name, each checking the exact file stem and that it is a plain name.
#include "io/output_files.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace wgml::io {
namespace {

// A plain file name: portable characters only, no leading dot, no "..", within the length limit.
void expect_plain(const std::string& stem) {
  ASSERT_FALSE(stem.empty());
  EXPECT_LE(stem.size(), kMaxOutputStem + 1) << stem;  // + the '_' a Windows device name gains
  EXPECT_NE(stem.front(), '.') << stem;
  EXPECT_EQ(stem.find(".."), std::string::npos) << stem;
  EXPECT_NE(stem.back(), '.') << stem;
  for (char c : stem)
    EXPECT_TRUE(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-') << "'" << c << "' in " << stem;
}

std::string stem_of(std::string_view name) {
  const std::string stem = output_file_stem(name);
  expect_plain(stem);
  return stem;
}

TEST(OutputFileStem, PortableNamesKeepTheirName) {
  EXPECT_EQ(stem_of("logits"), "logits");
  EXPECT_EQ(stem_of("layer.0-out_1"), "layer.0-out_1");
}

TEST(OutputFileStem, ParentTraversalBecomesAPlainName) {
  EXPECT_EQ(stem_of("../../x"), "___.__x");
  EXPECT_EQ(stem_of(".."), "__");
  EXPECT_EQ(stem_of("."), "_");
  EXPECT_EQ(stem_of("a/../../b"), "a_.__.__b");
}

TEST(OutputFileStem, AbsolutePathsLoseTheirSeparators) {
  EXPECT_EQ(stem_of("/abs"), "_abs");
  EXPECT_EQ(stem_of("/etc/passwd"), "_etc_passwd");
  EXPECT_EQ(stem_of("C:\\Windows\\x"), "C__Windows_x");
}

TEST(OutputFileStem, ConvertedModelNamesWithSlashesStayReadable) { EXPECT_EQ(stem_of("gpu_0/softmax_1"), "gpu_0_softmax_1"); }

TEST(OutputFileStem, DotsThatWouldHideOrClimbBecomeUnderscores) {
  EXPECT_EQ(stem_of(".hidden"), "_hidden");
  EXPECT_EQ(stem_of("a..b"), "a._b");
  EXPECT_EQ(stem_of("trailing."), "trailing_");
}

TEST(OutputFileStem, LongNamesAreCut) {
  const std::string stem = stem_of(std::string(5000, 'y'));
  EXPECT_EQ(stem, std::string(kMaxOutputStem, 'y'));
}

TEST(OutputFileStem, ControlCharactersAreDropped) {
  EXPECT_EQ(stem_of(std::string("a\0b", 3)), "ab");
  EXPECT_EQ(stem_of("line\nbreak\ttab\x7f"), "linebreaktab");
  EXPECT_EQ(stem_of(std::string("\0\x01\x1f", 3)), "output");
  EXPECT_EQ(stem_of(""), "output");
}

TEST(OutputFileStem, WindowsReservedCharactersAndDeviceNames) {
  EXPECT_EQ(stem_of("a<b>c:d\"e|f?g*h"), "a_b_c_d_e_f_g_h");
  EXPECT_EQ(stem_of("CON"), "_CON");
  EXPECT_EQ(stem_of("nul.x"), "_nul.x");
  EXPECT_EQ(stem_of("com1"), "_com1");
  EXPECT_EQ(stem_of("console"), "console");
}

TEST(OutputFileStem, NonAsciiBytesBecomeUnderscores) {
  EXPECT_EQ(stem_of("r\xc3\xa9sultat"), "r__sultat");  // "résultat" in UTF-8
}

TEST(OutputFileStems, NamesMappingToOneFileGetNumberedSuffixesInOutputOrder) {
  EXPECT_EQ(output_file_stems({"a/b", "a:b", "a b"}), (std::vector<std::string>{"a_b", "a_b-2", "a_b-3"}));
}

TEST(OutputFileStems, APlainNameKeepsItsOwnFileWhateverComesFirst) {
  EXPECT_EQ(output_file_stems({"a/b", "a_b", "a:b", "A_B"}), (std::vector<std::string>{"a_b-3", "a_b", "a_b-4", "A_B-2"}));
}

TEST(OutputFileStems, ASuffixedNameThatIsAlsoARealNameIsNumberedAgain) {
  EXPECT_EQ(output_file_stems({"x", "x/", "x_-2", "x_"}), (std::vector<std::string>{"x", "x_-3", "x_-2", "x_"}));
}

TEST(OutputFileStems, TruncatedNamesThatCollideStayDistinct) {
  const std::string prefix(kMaxOutputStem, 'p');
  const auto stems = output_file_stems({prefix + "1", prefix + "2"});
  EXPECT_EQ(stems[0], prefix);
  EXPECT_EQ(stems[1], prefix + "-2");
}

}  // namespace
}  // namespace wgml::io
