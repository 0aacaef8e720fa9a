#include "kernel/template.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "wgml/error.h"

namespace wgml::kernel {

struct Template::Node {
  enum class Kind { Text, Output, If, For, Set, Include };
  Kind kind = Kind::Text;
  std::string text;                                              // Text: the text; For: the loop variable; Set: the name
  std::vector<Expr> expressions;                                 // If: one condition per branch; Output, For, Set: one
  std::vector<std::vector<std::shared_ptr<const Node>>> bodies;  // If: per branch, then else
  std::shared_ptr<const Template> included;
};

namespace {

using NodeList = std::vector<std::shared_ptr<const Template::Node>>;
using Kind = Template::Node::Kind;

bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

// Line and column (1-based) of byte offsets in one source text.
class Positions {
 public:
  explicit Positions(const std::string& text) {
    for (size_t i = 0; i < text.size(); ++i)
      if (text[i] == '\n') line_starts_.push_back(i + 1);
  }
  int line(size_t offset) const {
    return static_cast<int>(std::upper_bound(line_starts_.begin(), line_starts_.end(), offset) - line_starts_.begin());
  }
  int column(size_t offset) const { return static_cast<int>(offset - line_starts_[static_cast<size_t>(line(offset) - 1)]) + 1; }
  size_t line_start(size_t offset) const { return line_starts_[static_cast<size_t>(line(offset) - 1)]; }

 private:
  std::vector<size_t> line_starts_{0};
};

// One piece of template source: literal text, an {{ output }} or a {% statement %}.
struct Piece {
  enum class Type { Text, Output, Statement } type;
  std::string text;
  size_t offset;  // of `text` in the source
};

class Compiler {
 public:
  Compiler(const std::string& name, const std::string& source, TemplateLibrary* library)
      : name_(name), source_(source), positions_(source), library_(library) {}

  NodeList run() {
    split();
    size_t next = 0;
    return block(next, {});
  }

 private:
  [[noreturn]] void fail(size_t offset, const std::string& what) const {
    throw Error(ErrorCode::InvalidFormat, name_ + ":" + std::to_string(positions_.line(offset)) + ":" +
                                              std::to_string(positions_.column(offset)) + ": " + what);
  }

  static std::string first_word(const std::string& text) {
    const size_t end = text.find_first_of(" \t\r\n");
    return text.substr(0, end);
  }

  // Cuts the source into pieces, applying `-` whitespace control, lstrip_blocks and trim_blocks.
  void split() {
    size_t pos = 0;
    bool strip_leading = false, trim_newline = false;
    while (true) {
      size_t open = source_.find('{', pos);
      while (open != std::string::npos && open + 1 < source_.size() &&
             std::string_view("{%#").find(source_[open + 1]) == std::string_view::npos)
        open = source_.find('{', open + 1);
      if (open + 1 >= source_.size()) open = std::string::npos;
      const size_t text_end = open == std::string::npos ? source_.size() : open;
      const char type = open == std::string::npos ? 0 : source_[open + 1];
      const bool left_dash = type && open + 2 < source_.size() && source_[open + 2] == '-';
      size_t keep_end = text_end;
      if (left_dash) {
        while (keep_end > pos && is_blank(source_[keep_end - 1])) --keep_end;
      } else if (type == '%' || type == '#') {
        keep_end = lstrip_block(pos, text_end);
      }
      size_t keep_start = pos;
      if (strip_leading) {
        while (keep_start < keep_end && is_blank(source_[keep_start])) ++keep_start;
      } else if (trim_newline) {
        if (source_.compare(keep_start, 2, "\r\n") == 0)
          keep_start += 2;
        else if (keep_start < keep_end && source_[keep_start] == '\n')
          ++keep_start;
      }
      if (keep_start < keep_end)
        pieces_.push_back({Piece::Type::Text, source_.substr(keep_start, keep_end - keep_start), keep_start});
      if (open == std::string::npos) return;
      const std::string close = type == '{' ? "}}" : type == '%' ? "%}" : "#}";
      const size_t end = source_.find(close, open + 2);
      if (end == std::string::npos) fail(open, "'{" + std::string(1, type) + "' is never closed by '" + close + "'");
      size_t content_start = open + 2 + (left_dash ? 1 : 0);
      size_t content_end = end;
      const bool right_dash = content_end > content_start && source_[content_end - 1] == '-';
      if (right_dash) --content_end;
      while (content_start < content_end && is_blank(source_[content_start])) ++content_start;
      while (content_end > content_start && is_blank(source_[content_end - 1])) --content_end;
      if (type != '#') {
        if (content_start == content_end) fail(open, "empty '{" + std::string(1, type) + "' tag");
        pieces_.push_back({type == '{' ? Piece::Type::Output : Piece::Type::Statement,
                           source_.substr(content_start, content_end - content_start), content_start});
      }
      strip_leading = right_dash;
      trim_newline = type != '{';
      pos = end + 2;
    }
  }

  // lstrip_blocks: a block tag that only blanks precede on its line takes those blanks away.
  size_t lstrip_block(size_t text_start, size_t tag) const {
    const size_t line_start = positions_.line_start(tag);
    if (line_start < text_start) return tag;
    for (size_t i = line_start; i < tag; ++i)
      if (source_[i] != ' ' && source_[i] != '\t') return tag;
    return line_start;
  }

  Expr expression(const std::string& text, size_t offset) const {
    return Expr::parse(text, Origin{name_, "line " + std::to_string(positions_.line(offset)), positions_.column(offset) - 1});
  }

  // Parses pieces into nodes until one of `terminators` (a statement keyword) or the end.
  NodeList block(size_t& next, const std::vector<std::string>& terminators) {
    NodeList nodes;
    while (next < pieces_.size()) {
      const Piece& piece = pieces_[next];
      if (piece.type == Piece::Type::Statement) {
        const std::string word = first_word(piece.text);
        if (std::find(terminators.begin(), terminators.end(), word) != terminators.end()) return nodes;
        if (word == "elif" || word == "else" || word == "endif" || word == "endfor")
          fail(piece.offset, "'" + word + "' without an open block");
      }
      ++next;
      nodes.push_back(node(piece, next));
    }
    return nodes;
  }

  std::shared_ptr<const Template::Node> node(const Piece& piece, size_t& next) {
    auto n = std::make_shared<Template::Node>();
    if (piece.type == Piece::Type::Text) {
      n->text = piece.text;
      return n;
    }
    if (piece.type == Piece::Type::Output) {
      n->kind = Kind::Output;
      n->expressions.push_back(expression(piece.text, piece.offset));
      return n;
    }
    const std::string keyword = first_word(piece.text);
    const size_t rest_at = std::min(piece.text.size(), keyword.size() + 1);
    const std::string rest = piece.text.substr(rest_at);
    const size_t rest_offset = piece.offset + rest_at;
    if (keyword == "if") return if_block(std::move(n), piece, rest, rest_offset, next);
    if (keyword == "for") return for_block(std::move(n), piece, rest, rest_offset, next);
    if (keyword == "set") return set_statement(std::move(n), piece, rest, rest_offset);
    if (keyword == "include") return include(std::move(n), piece, rest);
    fail(piece.offset, "unknown statement '" + keyword + "' (expected if, elif, else, endif, for, endfor, set, include)");
  }

  const Piece& expect_end(size_t& next, const Piece& opener, const std::string& what) {
    if (next >= pieces_.size()) fail(opener.offset, "'" + first_word(opener.text) + "' is never closed by " + what);
    return pieces_[next++];
  }

  std::shared_ptr<const Template::Node> if_block(std::shared_ptr<Template::Node> n, const Piece& piece, const std::string& rest,
                                                 size_t rest_offset, size_t& next) {
    n->kind = Kind::If;
    std::string condition = rest;
    size_t condition_offset = rest_offset;
    while (true) {
      if (condition.empty()) fail(piece.offset, "'if'/'elif' needs a condition");
      n->expressions.push_back(expression(condition, condition_offset));
      n->bodies.push_back(block(next, {"elif", "else", "endif"}));
      const Piece& end = expect_end(next, piece, "'endif'");
      const std::string word = first_word(end.text);
      if (word == "endif") return n;
      if (word == "else") {
        n->bodies.push_back(block(next, {"endif"}));
        expect_end(next, piece, "'endif'");
        return n;
      }
      condition = end.text.substr(std::min(end.text.size(), word.size() + 1));
      condition_offset = end.offset + word.size() + 1;
    }
  }

  std::shared_ptr<const Template::Node> for_block(std::shared_ptr<Template::Node> n, const Piece& piece, const std::string& rest,
                                                  size_t rest_offset, size_t& next) {
    n->kind = Kind::For;
    const size_t in = rest.find(" in ");
    n->text = rest.substr(0, std::min(in, rest.size()));
    if (in == std::string::npos || n->text.empty() || !std::all_of(n->text.begin(), n->text.end(), [](char c) {
          return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
        }))
      fail(piece.offset, "expected 'for NAME in EXPRESSION'");
    n->expressions.push_back(expression(rest.substr(in + 4), rest_offset + in + 4));
    n->bodies.push_back(block(next, {"endfor"}));
    expect_end(next, piece, "'endfor'");
    return n;
  }

  std::shared_ptr<const Template::Node> set_statement(std::shared_ptr<Template::Node> n, const Piece& piece,
                                                      const std::string& rest, size_t rest_offset) {
    n->kind = Kind::Set;
    const size_t eq = rest.find('=');
    if (eq == std::string::npos) fail(piece.offset, "expected 'set NAME = EXPRESSION'");
    n->text = rest.substr(0, eq);
    while (!n->text.empty() && is_blank(n->text.back())) n->text.pop_back();
    if (n->text.empty()) fail(piece.offset, "expected 'set NAME = EXPRESSION'");
    n->expressions.push_back(expression(rest.substr(eq + 1), rest_offset + eq + 1));
    return n;
  }

  std::shared_ptr<const Template::Node> include(std::shared_ptr<Template::Node> n, const Piece& piece, const std::string& rest) {
    n->kind = Kind::Include;
    if (rest.size() < 2 || (rest.front() != '"' && rest.front() != '\'') || rest.back() != rest.front())
      fail(piece.offset, "expected 'include \"NAME\"'");
    if (!library_) fail(piece.offset, "includes need a template directory");
    n->included = library_->get(rest.substr(1, rest.size() - 2));
    return n;
  }

  const std::string& name_;
  const std::string& source_;
  Positions positions_;
  TemplateLibrary* library_;
  std::vector<Piece> pieces_;
};

void render_nodes(const NodeList& nodes, ObjectScope& scope, std::string& out);

void render_for(const Template::Node& n, ObjectScope& scope, std::string& out) {
  const Value items = n.expressions[0].evaluate(scope);
  if (!items.is_list())
    throw Error(ErrorCode::Runtime,
                n.expressions[0].locate(1, std::string("'for' needs a list, not a ") + kind_name(items.kind())));
  const List& list = items.as_list();
  const int64_t length = static_cast<int64_t>(list.size());
  for (int64_t i = 0; i < length; ++i) {
    ObjectScope iteration({{n.text, list[static_cast<size_t>(i)]},
                           {"loop", Value(Object{{"index0", Value(i)},
                                                 {"index", Value(i + 1)},
                                                 {"first", Value(i == 0)},
                                                 {"last", Value(i + 1 == length)},
                                                 {"length", Value(length)}})}},
                          &scope);
    render_nodes(n.bodies[0], iteration, out);
  }
}

void render_nodes(const NodeList& nodes, ObjectScope& scope, std::string& out) {
  for (const auto& node : nodes) {
    const Template::Node& n = *node;
    switch (n.kind) {
      case Kind::Text:
        out += n.text;
        break;
      case Kind::Output:
        out += n.expressions[0].evaluate(scope).to_text();
        break;
      case Kind::Set:
        scope.set(n.text, n.expressions[0].evaluate(scope));
        break;
      case Kind::For:
        render_for(n, scope, out);
        break;
      case Kind::Include:
        out += n.included->render(scope);
        break;
      case Kind::If: {
        size_t branch = 0;
        while (branch < n.expressions.size() && !n.expressions[branch].evaluate(scope).truthy()) ++branch;
        if (branch < n.bodies.size()) render_nodes(n.bodies[branch], scope, out);
        break;
      }
    }
  }
}

}  // namespace

std::shared_ptr<const Template> Template::compile(const std::string& name, const std::string& text, TemplateLibrary* library) {
  auto compiled = std::make_shared<Template>();
  compiled->name_ = name;
  compiled->body_ = Compiler(compiled->name_, text, library).run();
  return compiled;
}

std::string Template::render(const Scope& scope) const {
  ObjectScope local({}, &scope);
  std::string out;
  render_nodes(body_, local, out);
  return out;
}

void Template::collect(std::vector<FreeName>& used, std::vector<std::string>& bound) const {
  struct Walker {
    std::vector<FreeName>& used;
    std::vector<std::string>& bound;
    void expressions(const Node& n) {
      for (const Expr& e : n.expressions)
        for (const auto& use : e.names()) used.push_back({use, &e});
    }
    void nodes(const NodeList& list) {
      for (const auto& node : list) {
        expressions(*node);
        if (node->kind == Kind::Set || node->kind == Kind::For) bound.push_back(node->text);
        if (node->kind == Kind::Include) node->included->collect(used, bound);
        for (const auto& body : node->bodies) nodes(body);
      }
    }
  };
  Walker{used, bound}.nodes(body_);
}

std::vector<Template::FreeName> Template::free_names() const {
  std::vector<FreeName> used;
  std::vector<std::string> bound = {"loop"};
  collect(used, bound);
  std::vector<FreeName> free;
  for (auto& name : used)
    if (std::find(bound.begin(), bound.end(), name.use.name) == bound.end()) free.push_back(std::move(name));
  return free;
}

std::shared_ptr<const Template> TemplateLibrary::get(const std::string& name) {
  if (const auto it = compiled_.find(name); it != compiled_.end()) return it->second;
  if (name.empty() || name.front() == '/' || name.find("..") != std::string::npos)
    throw Error(ErrorCode::InvalidFormat, "template name '" + name + "' must be a path inside " + directory_);
  if (std::find(compiling_.begin(), compiling_.end(), name) != compiling_.end()) {
    std::string chain;
    for (const auto& n : compiling_) chain += n + " -> ";
    throw Error(ErrorCode::InvalidFormat, "include cycle: " + chain + name);
  }
  const std::string path = directory_ + "/" + name;
  std::ifstream file(path, std::ios::binary);
  if (!file) throw Error(ErrorCode::Io, "template '" + name + "' does not exist (looked for " + path + ")");
  std::stringstream text;
  text << file.rdbuf();
  compiling_.push_back(name);
  struct PopOnExit {
    std::vector<std::string>& chain;
    ~PopOnExit() { chain.pop_back(); }
  } pop{compiling_};
  auto compiled = Template::compile(path, text.str(), this);
  compiled_[name] = compiled;
  return compiled;
}

}  // namespace wgml::kernel
