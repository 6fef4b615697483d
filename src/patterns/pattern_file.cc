// Pattern files: `#@` directives and ONNX-text functions (format in pattern.h).
//
// A file is cut into chunks at lines beginning with '<' (a function header);
// each chunk goes to onnx::OnnxParser, whose positions (relative to the chunk)
// are translated to the file's lines. Directive lines are ONNX comments, so the
// parser skips them; they are read here and belong to the next function.
#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <onnx/defs/parser.h>
#include <onnx/defs/schema.h>

#include "onnxfuse/error.h"
#include "patterns/pattern.h"
#include "patterns/pattern_predicates.h"

#ifndef ONNXFUSE_PATTERNS_DIR
#define ONNXFUSE_PATTERNS_DIR "patterns"
#endif
#ifndef ONNXFUSE_PATTERNS_INSTALL_SUBDIR
#define ONNXFUSE_PATTERNS_INSTALL_SUBDIR "share/onnx-fuse/patterns"
#endif
#ifndef ONNXFUSE_PATTERNS_INSTALL_DIR
#define ONNXFUSE_PATTERNS_INSTALL_DIR "/usr/local/" ONNXFUSE_PATTERNS_INSTALL_SUBDIR
#endif

namespace onnxfuse {

namespace {

namespace fs = std::filesystem;

struct Where {
  const std::string& file;
  [[noreturn]] void Fail(int line, int col, const std::string& message) const {
    throw Error(ErrorKind::kInvalidModel,
                file + ":" + std::to_string(line) + ":" + std::to_string(col) + ": " + message);
  }
};

// Exposes the parser's position, to find where a function ends.
class ChunkParser : public onnx::OnnxParser {
 public:
  explicit ChunkParser(const char* text) : OnnxParser(text) {}
  std::size_t Offset() const { return static_cast<std::size_t>(next_ - start_); }
};

bool IsIdentChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

std::size_t SkipSpace(const std::string& s, std::size_t i) {
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  return i;
}

std::string Identifier(const std::string& s, std::size_t& i) {
  std::size_t from = i;
  if (i < s.size() && (std::isalpha(static_cast<unsigned char>(s[i])) || s[i] == '_'))
    while (i < s.size() && IsIdentChar(s[i])) ++i;
  return s.substr(from, i - from);
}

// Directives read before one function, with columns for messages.
struct Directives {
  std::optional<int> benefit;
  std::vector<PatternRequirement> requirements;
  std::vector<int> name_cols;               // per requirement
  std::vector<std::vector<int>> arg_cols;   // per requirement, per argument
  int first_line = 0;
};

// Parses one `#@ key: value` line (`at` is the index of '#').
void ParseDirective(const std::string& s, std::size_t at, int line, Directives& out, const Where& where) {
  if (!out.first_line) out.first_line = line;
  std::size_t i = SkipSpace(s, at + 2);
  int key_col = static_cast<int>(i) + 1;
  std::string key = Identifier(s, i);
  i = SkipSpace(s, i);
  if (key.empty() || i >= s.size() || s[i] != ':')
    where.Fail(line, key_col, "expected '#@ benefit: N' or '#@ require: predicate(arg, ...)'");
  i = SkipSpace(s, i + 1);
  int value_col = static_cast<int>(i) + 1;
  std::size_t end = s.find_last_not_of(" \t\r");
  if (key == "benefit") {
    if (out.benefit) where.Fail(line, key_col, "benefit is given twice");
    int value = 0;
    const char* first = s.data() + i;
    const char* last = s.data() + end + 1;
    auto [ptr, ec] = std::from_chars(first, last, value);
    if (i > end || ec != std::errc() || ptr != last)
      where.Fail(line, value_col, "benefit must be an integer, got '" + s.substr(i, end + 1 - i) + "'");
    out.benefit = value;
    return;
  }
  if (key != "require") where.Fail(line, key_col, "unknown directive '" + key + "' (known: benefit, require)");
  PatternRequirement req;
  req.line = line;
  req.predicate = Identifier(s, i);
  if (req.predicate.empty()) where.Fail(line, value_col, "expected a predicate name, e.g. constant(W)");
  std::vector<int> cols;
  i = SkipSpace(s, i);
  if (i >= s.size() || s[i] != '(') where.Fail(line, static_cast<int>(i) + 1, "expected '(' after " + req.predicate);
  i = SkipSpace(s, i + 1);
  while (i < s.size() && s[i] != ')') {
    int col = static_cast<int>(i) + 1;
    std::string arg = Identifier(s, i);
    if (arg.empty()) where.Fail(line, col, "expected an argument name");
    req.args.push_back(arg);
    cols.push_back(col);
    i = SkipSpace(s, i);
    if (i < s.size() && s[i] == ',') i = SkipSpace(s, i + 1);
    else if (i >= s.size() || s[i] != ')') where.Fail(line, static_cast<int>(i) + 1, "expected ',' or ')'");
  }
  if (i >= s.size()) where.Fail(line, static_cast<int>(i) + 1, "expected ')'");
  if (SkipSpace(s, i + 1) < s.size())
    where.Fail(line, static_cast<int>(SkipSpace(s, i + 1)) + 1, "unexpected text after ')'");
  out.requirements.push_back(std::move(req));
  out.name_cols.push_back(value_col);
  out.arg_cols.push_back(std::move(cols));
}

// Finds nodes of a parsed body in its text, for messages: the k-th node is the next
// whole-word occurrence of its op type after the (k-1)-th, skipping comments.
class NodeLocator {
 public:
  NodeLocator(const std::vector<std::string>& lines, int first, int last) : lines_(lines), line_(first), last_(last) {
    for (; line_ <= last_; ++line_)  // the body starts after the first '{'
      if (auto p = Code(line_).find('{'); p != std::string::npos) {
        col_ = p + 1;
        return;
      }
  }
  std::pair<int, int> Next(const std::string& op, int fallback_line) {
    for (int l = line_; l <= last_; ++l, col_ = 0) {
      std::string code = Code(l);
      for (auto p = code.find(op, col_); p != std::string::npos; p = code.find(op, p + 1)) {
        bool whole = (p == 0 || !IsIdentChar(code[p - 1])) &&
                     (p + op.size() >= code.size() || !IsIdentChar(code[p + op.size()]));
        if (!whole) continue;
        line_ = l;
        col_ = p + op.size();
        return {l, static_cast<int>(p) + 1};
      }
    }
    return {fallback_line, 1};
  }

 private:
  std::string Code(int line) const {  // 1-based line without its comment
    const std::string& s = lines_[static_cast<std::size_t>(line - 1)];
    return s.substr(0, s.find('#'));
  }
  const std::vector<std::string>& lines_;
  int line_;
  int last_;
  std::size_t col_ = 0;
};

template <typename List>
bool Has(const List& list, const std::string& name) {
  return std::find(list.begin(), list.end(), name) != list.end();
}

// Checks a parsed function (see ParsePatterns); fills in ref-attribute types from the schema.
void ValidateFunction(onnx::FunctionProto& fn, const Directives& directives, const std::vector<std::string>& lines,
                      int header_line, int end_line, const Where& where) {
  const std::string name = fn.name();
  if (name.empty()) where.Fail(header_line, 1, "the function has no name (write it before its inputs: Name (X) => (Y))");
  if (fn.domain() != "ai.onnxfuse")
    where.Fail(header_line, 1, "function " + name + " is in domain '" + fn.domain() +
                                   "'; patterns must be in domain \"ai.onnxfuse\"");
  int opset = 0;
  for (const auto& id : fn.opset_import())
    if (id.domain().empty() || id.domain() == "ai.onnx") opset = static_cast<int>(id.version());
  if (opset <= 0) where.Fail(header_line, 1, "function " + name + " imports no default-domain opset (\"\" : 13)");
  if (fn.node_size() == 0) where.Fail(header_line, 1, "function " + name + " has an empty body");

  std::set<std::string> defined(fn.input().begin(), fn.input().end());
  if (defined.size() != static_cast<std::size_t>(fn.input_size()))
    where.Fail(header_line, 1, "function " + name + " names an input twice");
  if (std::set<std::string>(fn.attribute().begin(), fn.attribute().end()).size() !=
      static_cast<std::size_t>(fn.attribute_size()))
    where.Fail(header_line, 1, "function " + name + " names an attribute twice");
  if (std::set<std::string>(fn.output().begin(), fn.output().end()).size() != static_cast<std::size_t>(fn.output_size()))
    where.Fail(header_line, 1, "function " + name + " names an output twice");
  std::set<std::string> used_inputs, used_attrs;
  std::map<std::string, int> attr_types;
  NodeLocator locate(lines, header_line, end_line);
  std::vector<std::pair<int, int>> positions;  // line, column of each node's op type
  for (const auto& node : fn.node()) positions.push_back(locate.Next(node.op_type(), header_line));
  for (int k = 0; k < fn.node_size(); ++k) {
    onnx::NodeProto& node = *fn.mutable_node(k);
    auto [line, col] = positions[static_cast<std::size_t>(k)];
    auto fail = [&, line = line, col = col](const std::string& message) {
      where.Fail(line, col, node.op_type() + ": " + message);
    };
    if (!node.domain().empty() && node.domain() != "ai.onnx")
      fail("pattern bodies use default-domain ops only, not domain '" + node.domain() + "'");
    const auto* schema = onnx::OpSchemaRegistry::Schema(node.op_type(), opset, "");
    if (!schema) fail("not an operator of the default domain at opset " + std::to_string(opset));
    if (node.input_size() > schema->max_input() || node.input_size() < schema->min_input())
      fail("takes " + std::to_string(schema->min_input()) + " to " + std::to_string(schema->max_input()) +
           " inputs, the body gives " + std::to_string(node.input_size()));
    if (node.output_size() > schema->max_output() || node.output_size() < schema->min_output())
      fail("has " + std::to_string(schema->min_output()) + " to " + std::to_string(schema->max_output()) +
           " outputs, the body names " + std::to_string(node.output_size()) +
           (node.output_size() > schema->max_output() ? " (empty names count: `Y, = ...` names two)" : ""));
    for (const auto& input : node.input()) {
      if (input.empty()) continue;
      if (!defined.count(input))
        fail("'" + input + "' is neither an input of " + name + " nor the output of an earlier node");
      if (Has(fn.input(), input)) used_inputs.insert(input);
    }
    for (const auto& output : node.output()) {
      if (output.empty()) continue;
      if (!defined.insert(output).second) fail("'" + output + "' is defined twice");
    }
    std::set<std::string> node_attrs;
    for (auto& attr : *node.mutable_attribute()) {
      auto it = schema->attributes().find(attr.name());
      if (it == schema->attributes().end())
        fail("has no attribute '" + attr.name() + "' at opset " + std::to_string(opset));
      if (!node_attrs.insert(attr.name()).second) fail("sets attribute '" + attr.name() + "' twice");
      if (!attr.ref_attr_name().empty()) {
        if (!Has(fn.attribute(), attr.ref_attr_name()))
          fail("@" + attr.ref_attr_name() + " is not an attribute of " + name + " (list it in the header's <...>)");
        if (attr.type() == onnx::AttributeProto::UNDEFINED) attr.set_type(it->second.type);  // `strides = @strides`
        auto [seen, fresh] = attr_types.emplace(attr.ref_attr_name(), attr.type());
        if (!fresh && seen->second != attr.type())
          fail("@" + attr.ref_attr_name() + " is used with two different types");
        used_attrs.insert(attr.ref_attr_name());
      }
      if (attr.type() != it->second.type)
        fail("attribute '" + attr.name() + "' must be of type " +
             onnx::AttributeProto::AttributeType_Name(it->second.type) + ", not " +
             onnx::AttributeProto::AttributeType_Name(attr.type()));
    }
    // The rest of what onnx::checker asks of the node in the written function
    // (allowed output counts such as BatchNormalization's 1 or 3, empty names
    // for required inputs and outputs): refused here, with the position.
    std::string refused;
    try {
      schema->Verify(node);
    } catch (const std::exception& e) {
      refused = e.what();
    }
    if (!refused.empty()) fail("the operator's schema refuses the node: " + refused);
    if (node.op_type() == "Constant") {
      bool ok = node.attribute_size() == 1 && node.attribute(0).name() == "value" &&
                node.attribute(0).ref_attr_name().empty() && detail::SingleNumber(node.attribute(0).t());
      if (!ok) fail("a Constant in a pattern body must be `Constant <value = float {1.0}> ()`: one number");
      if (k + 1 == fn.node_size()) fail("the last node (the anchor) cannot be a Constant");
    }
  }
  for (const auto& output : fn.output())
    if (Has(fn.input(), output) || !defined.count(output))
      where.Fail(header_line, 1, "output '" + output + "' of " + name + " is not produced by a body node");
  for (const auto& input : fn.input())
    if (!used_inputs.count(input)) where.Fail(header_line, 1, "input '" + input + "' of " + name + " is not used");
  for (const auto& attr : fn.attribute())
    if (!used_attrs.count(attr))
      where.Fail(header_line, 1, "attribute '" + attr + "' of " + name + " is never referenced (@" + attr + ")");

  // The matcher walks back from the last node over inputs: every node must feed it.
  std::set<std::string> needed(fn.node().rbegin()->input().begin(), fn.node().rbegin()->input().end());
  for (int k = fn.node_size() - 2; k >= 0; --k) {
    const auto& node = fn.node(k);
    bool feeds = std::any_of(node.output().begin(), node.output().end(),
                             [&](const std::string& o) { return !o.empty() && needed.count(o); });
    if (!feeds)
      where.Fail(positions[static_cast<std::size_t>(k)].first, positions[static_cast<std::size_t>(k)].second,
                 node.op_type() + ": does not feed the last node (the matcher anchors there and walks back)");
    needed.insert(node.input().begin(), node.input().end());
  }

  for (std::size_t r = 0; r < directives.requirements.size(); ++r) {
    const auto& req = directives.requirements[r];
    if (auto problem = detail::ValidateRequirement(req, fn))
      where.Fail(req.line,
                 problem->first == std::string::npos ? directives.name_cols[r] : directives.arg_cols[r][problem->first],
                 problem->second);
  }
}

// "[ParseError at position (line: L column: C)]\nError context: ...\nmessage"
void FailParse(const std::string& message, int chunk_line, const Where& where) {
  int line = 1, col = 1;
  std::string text = message;
  if (std::sscanf(message.c_str(), "[ParseError at position (line: %d column: %d)]", &line, &col) == 2) {
    std::size_t first = message.find('\n');
    std::size_t second = first == std::string::npos ? first : message.find('\n', first + 1);
    if (second != std::string::npos) text = message.substr(second + 1);
  }
  std::replace(text.begin(), text.end(), '\n', ' ');
  where.Fail(chunk_line + line - 1, col, "syntax error: " + text);
}

}  // namespace

std::vector<Pattern> ParsePatterns(const std::string& text, const std::string& file) {
  Where where{file};
  std::vector<std::string> lines;
  std::vector<std::size_t> begins;  // offset of each line
  for (std::size_t pos = 0; pos <= text.size();) {
    std::size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) nl = text.size();
    begins.push_back(pos);
    lines.push_back(text.substr(pos, nl - pos));
    pos = nl + 1;
  }
  std::vector<int> starts;  // 1-based lines beginning with '<'
  for (std::size_t l = 0; l < lines.size(); ++l)
    if (!lines[l].empty() && lines[l][0] == '<') starts.push_back(static_cast<int>(l) + 1);

  std::vector<Pattern> patterns;
  std::map<std::string, int> seen;
  Directives pending;
  std::size_t f = 0;
  for (int line = 1; line <= static_cast<int>(lines.size());) {
    const std::string& s = lines[static_cast<std::size_t>(line - 1)];
    if (f < starts.size() && line == starts[f]) {
      std::size_t from = begins[static_cast<std::size_t>(line - 1)];
      std::size_t to = f + 1 < starts.size() ? begins[static_cast<std::size_t>(starts[f + 1] - 1)] : text.size();
      std::string chunk = text.substr(from, to - from);
      Pattern pattern;
      ChunkParser parser(chunk.c_str());
      try {
        auto status = parser.Parse(pattern.function);
        if (!status.IsOK()) FailParse(status.ErrorMessage(), line, where);
      } catch (const Error&) {
        throw;
      } catch (const std::exception& e) {  // libonnx's parser throws from std::stoll and friends
        where.Fail(line, 1, std::string("syntax error: ") + e.what());
      }
      std::size_t end_offset = parser.Offset();
      int end_line = line + static_cast<int>(std::count(chunk.begin(), chunk.begin() + static_cast<long>(end_offset), '\n'));
      if (!parser.EndOfInput()) {
        std::size_t at = parser.Offset();
        std::size_t nl = chunk.rfind('\n', at == 0 ? 0 : at - 1);
        int col = static_cast<int>(nl == std::string::npos ? at : at - nl - 1) + 1;
        where.Fail(line + static_cast<int>(std::count(chunk.begin(), chunk.begin() + static_cast<long>(at), '\n')),
                   col, "unexpected text after function " + pattern.function.name() +
                            " (a function header must begin its line with '<')");
      }
      for (int l = line + 1; l <= end_line; ++l) {
        const std::string& body_line = lines[static_cast<std::size_t>(l - 1)];
        std::size_t at = SkipSpace(body_line, 0);
        if (body_line.compare(at, 2, "#@") == 0)
          where.Fail(l, static_cast<int>(at) + 1, "a '#@' directive inside a function body; put it before the header");
      }
      ValidateFunction(pattern.function, pending, lines, line, end_line, where);
      auto [prev, fresh] = seen.emplace(pattern.function.name(), line);
      if (!fresh)
        where.Fail(line, 1, "pattern " + pattern.function.name() + " is already defined at line " +
                                std::to_string(prev->second));
      pattern.benefit = pending.benefit.value_or(0);
      pattern.requirements = std::move(pending.requirements);
      pattern.file = file;
      pattern.line = line;
      patterns.push_back(std::move(pattern));
      pending = Directives{};
      line = end_line + 1;
      ++f;
      continue;
    }
    std::size_t at = SkipSpace(s, 0);
    if (s.compare(at, 2, "#@") == 0) ParseDirective(s, at, line, pending, where);
    else if (at < s.size() && s[at] != '#')
      where.Fail(line, static_cast<int>(at) + 1,
                 "expected a '#@' directive or a function header ('<domain: \"ai.onnxfuse\", ...>' at column 1)");
    ++line;
  }
  if (pending.first_line) where.Fail(pending.first_line, 1, "a '#@' directive must be followed by a function");
  return patterns;
}

std::vector<Pattern> LoadPatternDir(const std::string& dir) {
  std::error_code ec;
  std::vector<fs::path> files;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    if (it->path().extension() == ".onnxtxt" && it->is_regular_file()) files.push_back(it->path());
  if (ec) throw Error(ErrorKind::kIo, dir + ": cannot read pattern directory: " + ec.message());
  std::sort(files.begin(), files.end());

  std::vector<Pattern> patterns;
  for (const auto& path : files) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream text;
    if (in) text << in.rdbuf();
    if (!in || in.bad()) throw Error(ErrorKind::kIo, path.string() + ": cannot read pattern file");
    for (auto& pattern : ParsePatterns(text.str(), path.string())) {
      for (const auto& known : patterns)
        if (known.function.name() == pattern.function.name())
          throw Error(ErrorKind::kInvalidModel, pattern.file + ":" + std::to_string(pattern.line) + ":1: pattern " +
                                                    pattern.function.name() + " is already defined at " + known.file +
                                                    ":" + std::to_string(known.line));
      patterns.push_back(std::move(pattern));
    }
  }
  return patterns;
}

std::string BuiltinPatternDir() {
  const char* env = std::getenv("ONNXFUSE_PATTERNS_DIR");
  if (env && *env) return env;
  // An installed onnx-fuse (cmake --install, the .deb) finds the library next
  // to its prefix: <prefix>/bin/<exe> -> <prefix>/share/onnx-fuse/patterns,
  // wherever the tree was installed to; then the source tree it was built
  // from; then the prefix configured at build time.
  std::vector<std::string> candidates;
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) candidates.push_back((exe.parent_path().parent_path() / ONNXFUSE_PATTERNS_INSTALL_SUBDIR).string());
  candidates.push_back(ONNXFUSE_PATTERNS_DIR);
  candidates.push_back(ONNXFUSE_PATTERNS_INSTALL_DIR);
  for (const std::string& dir : candidates)
    if (std::filesystem::is_directory(dir, ec)) return dir;
  return ONNXFUSE_PATTERNS_DIR;
}

}  // namespace onnxfuse
