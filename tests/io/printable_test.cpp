// The escaping of text from model files for printing (core/printable.h): control characters and
// bytes that are not UTF-8 become \xNN, everything else is left as it is.
#include "core/printable.h"

#include <gtest/gtest.h>

#include <string>

#include "wgml/error.h"

namespace wgml {
namespace {

using namespace std::string_literals;

TEST(Printable, PrintableTextIsLeftAsItIs) {
  EXPECT_EQ(printable("/conv1/Conv_output_0"), "/conv1/Conv_output_0");
  EXPECT_EQ(printable("caf\xc3\xa9 \xe5\x90\x8d\xe5\x89\x8d \xf0\x9f\x99\x82"),
            "caf\xc3\xa9 \xe5\x90\x8d\xe5\x89\x8d \xf0\x9f\x99\x82");
  EXPECT_EQ(printable(R"(a\x1b already escaped)"), R"(a\x1b already escaped)");
  EXPECT_EQ(printable(""), "");
}

TEST(Printable, ControlCharactersBecomeHexEscapes) {
  EXPECT_EQ(printable("red\x1b[31m!"), R"(red\x1b[31m!)");
  EXPECT_EQ(printable("a\0b"s), R"(a\x00b)");
  EXPECT_EQ(printable("tab\there\r"), R"(tab\x09here\x0d)");
  EXPECT_EQ(printable("del\x7f"), R"(del\x7f)");
  EXPECT_EQ(printable("csi\xc2\x9b"
                      "2J"),
            R"(csi\xc2\x9b2J)");                         // C1 control U+009B
  EXPECT_EQ(printable("nbsp\xc2\xa0"), "nbsp\xc2\xa0");  // U+00A0 is not a control
}

TEST(Printable, NewlinesAreEscapedInNamesAndKeptInMessages) {
  EXPECT_EQ(printable("two\nlines"), R"(two\x0alines)");
  EXPECT_EQ(printable("two\nlines\x1b", Newlines::Keep), "two\nlines\\x1b");
}

TEST(Printable, BytesThatAreNotUtf8BecomeHexEscapes) {
  EXPECT_EQ(printable("\xff"
                      "ON"),
            R"(\xffON)");
  EXPECT_EQ(printable("cut \xe5\x90"), R"(cut \xe5\x90)");          // a sequence cut short by the end
  EXPECT_EQ(printable("\xe5\x90x"), R"(\xe5\x90x)");                // ... or by an ASCII byte
  EXPECT_EQ(printable("\xc0\xaf"), R"(\xc0\xaf)");                  // overlong '/'
  EXPECT_EQ(printable("\xe0\x80\xaf"), R"(\xe0\x80\xaf)");          // overlong '/' in three bytes
  EXPECT_EQ(printable("\xed\xa0\x80"), R"(\xed\xa0\x80)");          // a UTF-16 surrogate
  EXPECT_EQ(printable("\xf4\x90\x80\x80"), R"(\xf4\x90\x80\x80)");  // past U+10FFFF
  EXPECT_EQ(printable("\x80 lone continuation"), R"(\x80 lone continuation)");
  EXPECT_EQ(printable("\xf4\x8f\xbf\xbf"), "\xf4\x8f\xbf\xbf");  // U+10FFFF itself is valid
}

TEST(Printable, EscapingTwiceIsEscapingOnce) {
  const std::string once = printable("x\x1b\xff\xc2\x9b\n", Newlines::Keep);
  EXPECT_EQ(printable(once, Newlines::Keep), once);
}

TEST(ValidUtf8, ReplacesEachInvalidByteAndKeepsTheRest) {
  EXPECT_EQ(valid_utf8("\xff"
                       "ON"),
            "\xef\xbf\xbdON");
  EXPECT_EQ(valid_utf8("a\xe5\x90"), "a\xef\xbf\xbd\xef\xbf\xbd");
  EXPECT_EQ(valid_utf8("esc\x1b caf\xc3\xa9"), "esc\x1b caf\xc3\xa9");  // JSON escapes controls itself
}

TEST(ErrorMessage, IsEscapedWithItsLinesKept) {
  const Error e(ErrorCode::InvalidProgram, "m.onnx: node '\x1b]0;pwned\x07' (Add\xff):\n  expected two inputs");
  EXPECT_STREQ(e.what(), "m.onnx: node '\\x1b]0;pwned\\x07' (Add\\xff):\n  expected two inputs");
  EXPECT_EQ(e.code(), ErrorCode::InvalidProgram);
}

}  // namespace
}  // namespace wgml
