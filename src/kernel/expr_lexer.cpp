// The expression lexer: text to tokens (numbers, string literals, names, operators).
#include <cctype>
#include <cerrno>
#include <cstdlib>

#include "kernel/expr_internal.h"

namespace wgml::kernel::expr_internal {
namespace {

bool is_name_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool is_name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

class Lexer {
 public:
  Lexer(std::string_view text, const SyntaxError& fail) : text_(text), fail_(fail) {}

  std::vector<Token> run() {
    std::vector<Token> tokens;
    while (true) {
      while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
      if (pos_ >= text_.size()) break;
      tokens.push_back(next());
    }
    Token end;
    end.column = static_cast<int>(text_.size()) + 1;
    tokens.push_back(end);
    return tokens;
  }

 private:
  Token next() {
    Token t;
    t.column = static_cast<int>(pos_) + 1;
    const char c = text_[pos_];
    if (is_digit(c)) return number(t);
    if (c == '"' || c == '\'') return string(t);
    if (is_name_start(c)) return name(t);
    return op(t);
  }

  Token name(Token t) {
    const size_t start = pos_;
    while (pos_ < text_.size() && is_name_char(text_[pos_])) ++pos_;
    t.kind = Tok::Name;
    t.text = std::string(text_.substr(start, pos_ - start));
    return t;
  }

  Token op(Token t) {
    t.kind = Tok::Op;
    static const char* const kTwoChar[] = {"//", "==", "!=", "<=", ">="};
    for (const char* two_char : kTwoChar) {
      if (text_.substr(pos_, 2) == two_char) {
        pos_ += 2;
        t.text = two_char;
        return t;
      }
    }
    const char c = text_[pos_];
    if (std::string_view("+-*/%~<>()[],.|:").find(c) == std::string_view::npos)
      fail_(t.column, std::string("unexpected character '") + c + "'");
    ++pos_;
    t.text = std::string(1, c);
    return t;
  }

  Token number(Token t) {
    const size_t start = pos_;
    const bool is_float = skip_number(t);
    if (pos_ < text_.size() && is_name_char(text_[pos_]))
      fail_(t.column, "malformed number '" + std::string(text_.substr(start, pos_ + 1 - start)) + "'");
    const std::string literal(text_.substr(start, pos_ - start));
    if (is_float) {
      t.kind = Tok::Float;
      t.float_value = std::strtod(literal.c_str(), nullptr);
    } else {
      t.kind = Tok::Int;
      errno = 0;
      t.int_value = std::strtoll(literal.c_str(), nullptr, 10);
      if (errno == ERANGE) fail_(t.column, "integer literal " + literal + " does not fit in 64 bits");
    }
    t.text = literal;
    return t;
  }

  // Moves past the digits, a fraction and an exponent of the number `t`; true if it had either.
  bool skip_number(const Token& t) {
    skip_digits();
    bool is_float = false;
    if (pos_ + 1 < text_.size() && text_[pos_] == '.' && is_digit(text_[pos_ + 1])) {
      is_float = true;
      ++pos_;
      skip_digits();
    }
    if (pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
      is_float = true;
      ++pos_;
      if (pos_ < text_.size() && (text_[pos_] == '+' || text_[pos_] == '-')) ++pos_;
      if (pos_ >= text_.size() || !is_digit(text_[pos_])) fail_(t.column, "malformed exponent");
      skip_digits();
    }
    return is_float;
  }

  Token string(Token t) {
    const char quote = text_[pos_++];
    t.kind = Tok::String;
    while (pos_ < text_.size() && text_[pos_] != quote) {
      char c = text_[pos_++];
      if (c == '\\') {
        if (pos_ >= text_.size()) break;
        const char e = text_[pos_++];
        c = e == 'n' ? '\n' : e == 't' ? '\t' : e;
      }
      t.text += c;
    }
    if (pos_ >= text_.size()) fail_(t.column, "unterminated string literal");
    ++pos_;
    return t;
  }

  void skip_digits() {
    while (pos_ < text_.size() && is_digit(text_[pos_])) ++pos_;
  }

  std::string_view text_;
  size_t pos_ = 0;
  const SyntaxError& fail_;
};

}  // namespace

std::vector<Token> tokenize(std::string_view text, const SyntaxError& fail) { return Lexer(text, fail).run(); }

}  // namespace wgml::kernel::expr_internal
