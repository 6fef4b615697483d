// Graphviz pictures of a FusionPlan (see src/report/dot_writer.h).
#include "report/dot_writer.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include <onnx/defs/schema.h>

#include "write/function_builder.h"
#include "common/atomic_file.h"
#include "onnxfuse/error.h"

extern char** environ;

namespace onnxfuse {

namespace {

// Pastel fills for clusters (ColorBrewer Pastel1 and Pastel2, greys left out:
// grey marks opaque nodes).
constexpr const char* kPalette[] = {"#fbb4ae", "#b3cde3", "#ccebc5", "#decbe4", "#fed9a6", "#ffffcc", "#e5d8bd",
                                    "#fddaec", "#b3e2cd", "#fdcdac", "#cbd5e8", "#f4cae4", "#e6f5c9", "#fff2ae"};
constexpr const char* kOpaqueFill = "#d0d0d0";
constexpr std::size_t kMaxNameChars = 32;

// Text for inside a DOT double-quoted string: escapes \ and ", writes newlines
// as \n (a line break in a label), and replaces other control bytes and
// invalid UTF-8 by '?'.
std::string Escape(const std::string& text) {
  std::string out;
  out.reserve(text.size() + 8);
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      if (c == '\\' || c == '"') out += '\\', out += static_cast<char>(c);
      else if (c == '\n') out += "\\n";
      else if (c < 0x20 || c == 0x7f) out += '?';
      else out += static_cast<char>(c);
      ++i;
      continue;
    }
    // A UTF-8 sequence: lead byte, then continuation bytes 10xxxxxx.
    const std::size_t length = c >= 0xf0 && c < 0xf5 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 && c < 0xe0 ? 2 : 0;
    bool valid = length > 0 && i + length <= text.size();
    for (std::size_t k = 1; valid && k < length; ++k) valid = (static_cast<unsigned char>(text[i + k]) & 0xc0) == 0x80;
    if (valid) {
      out.append(text, i, length);
      i += length;
    } else {
      out += '?';
      ++i;
    }
  }
  return out;
}

std::uint32_t Fnv1a(const std::string& text) {
  std::uint32_t hash = 2166136261u;
  for (char c : text) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 16777619u;
  }
  return hash;
}

// Fill colour of a group's cluster: by its function name without a "_<digits>"
// clash suffix (the writer's "_2", "_3", ...), so a kind of group keeps its colour.
std::string ClusterColor(const std::string& function) {
  std::string key = function;
  const std::size_t underscore = key.find_last_of('_');
  if (underscore != std::string::npos && underscore + 1 < key.size() &&
      key.find_first_not_of("0123456789", underscore + 1) == std::string::npos)
    key.resize(underscore);
  // FNV-1a alone spreads names that differ near their end poorly over a few
  // buckets; MurmurHash3's finalizer mixes all bits into the low ones.
  std::uint32_t hash = Fnv1a(key);
  hash ^= hash >> 16;
  hash *= 0x85ebca6bu;
  hash ^= hash >> 13;
  hash *= 0xc2b2ae35u;
  hash ^= hash >> 16;
  return kPalette[hash % (sizeof(kPalette) / sizeof(kPalette[0]))];
}

// A darker shade of "#rrggbb" for the cluster's border.
std::string Darker(const std::string& color) {
  char out[32];
  unsigned r = 0, g = 0, b = 0;
  std::sscanf(color.c_str(), "#%2x%2x%2x", &r, &g, &b);
  std::snprintf(out, sizeof(out), "#%02x%02x%02x", r * 3 / 5, g * 3 / 5, b * 3 / 5);
  return out;
}

// "/layer1/layer1.0/conv1/Conv" -> "layer1.0/conv1": path components without
// the trailing op type and without a component the next one extends
// ("layer1" before "layer1.0"), the last two kept when they fit in
// kMaxNameChars, else the last one (its tail when even that is too long).
std::string ShortName(const Node& node) {
  if (node.name.find('/') == std::string::npos) {
    if (node.name.size() <= kMaxNameChars) return node.name;
    return "…" + node.name.substr(node.name.size() - kMaxNameChars + 1);
  }
  std::vector<std::string> parts;
  std::stringstream stream(node.name);
  for (std::string part; std::getline(stream, part, '/');)
    if (!part.empty()) parts.push_back(part);
  if (parts.size() > 1 && parts.back() == node.op_type) parts.pop_back();
  std::vector<std::string> kept;
  for (std::size_t i = 0; i < parts.size(); ++i)
    if (i + 1 == parts.size() || parts[i + 1].rfind(parts[i] + ".", 0) != 0) kept.push_back(parts[i]);
  if (kept.empty()) return node.name;
  std::string name = kept.back();
  if (kept.size() > 1 && kept[kept.size() - 2].size() + 1 + name.size() <= kMaxNameChars)
    name = kept[kept.size() - 2] + "/" + name;
  if (name.size() > kMaxNameChars) name = "…" + name.substr(name.size() - kMaxNameChars + 1);
  return name;
}

// "(W,B)": the schema names of the constant inputs a node reads, or "(N const)"
// when the names are long or unknown; "" without constant inputs.
std::string ConstantInputs(const Graph& graph, const Node& node) {
  const onnx::OpSchema* schema =
      onnx::OpSchemaRegistry::Schema(node.op_type, static_cast<int>(graph.opset()), node.domain);
  std::vector<std::string> names;
  bool named = schema != nullptr;
  for (std::size_t i = 0; i < node.num_explicit_inputs; ++i) {
    const ValueId v = node.inputs[i];
    if (v == kNoValue || !graph.IsConstant(v)) continue;
    if (named && i < schema->inputs().size() &&
        schema->inputs()[i].GetOption() != onnx::OpSchema::FormalParameterOption::Variadic)
      names.push_back(schema->inputs()[i].GetName());
    else
      named = false;
  }
  if (names.empty() && named) return "";
  std::string joined;
  for (const auto& name : names) joined += (joined.empty() ? "" : ",") + name;
  const std::size_t count = named ? names.size() : 0;
  if (named && count <= 2 && joined.size() <= 10) return "(" + joined + ")";
  std::size_t constants = 0;
  for (std::size_t i = 0; i < node.num_explicit_inputs; ++i)
    constants += node.inputs[i] != kNoValue && graph.IsConstant(node.inputs[i]);
  return "(" + std::to_string(constants) + " const)";
}

bool IsConstantNode(const Node& node) { return node.op_type == "Constant" && node.domain.empty(); }

std::string TypeLabel(const TensorType& type) { return type.has_shape ? type.ShapeString() : ""; }

std::string GroupFunction(const Graph& graph, const FusedGroup& group,
                          const std::vector<std::string>& function_of_group) {
  const auto g = static_cast<std::size_t>(group.id);
  if (g < function_of_group.size() && !function_of_group[g].empty()) return function_of_group[g];
  if (group.call) return group.call->function;
  return detail::FusedOpName(graph, group);
}

void WriteNode(std::ostream& out, const Graph& graph, NodeId id, const char* indent) {
  const Node& node = graph.node(id);
  const std::string constants = ConstantInputs(graph, node);
  const std::string name = ShortName(node);
  out << indent << 'n' << id << " [label=\""
      << Escape((node.domain.empty() ? "" : node.domain + ".") + node.op_type +
                (constants.empty() ? "" : " " + constants) + (name == node.op_type ? "" : "\n" + name))
      << '"';
  if (name != node.name) out << ", tooltip=\"" << Escape(node.name) << '"';
  if (ClassifyNode(graph, id) == OpPatternKind::kOpaque) out << ", fillcolor=\"" << kOpaqueFill << '"';
  out << "];\n";
}

}  // namespace

std::string ToDot(const Graph& graph, const FusionPlan& plan, const std::vector<std::string>& function_of_group) {
  Check(plan.group_of.size() == graph.num_nodes(), "the plan has a group for every node");
  std::ostringstream out;
  std::size_t kernels = 0, fused = 0;
  for (const auto& group : plan.groups) {
    bool all_constant = true;
    for (NodeId id : group.nodes) all_constant = all_constant && IsConstantNode(graph.node(id));
    kernels += !all_constant;
    fused += group.nodes.size() > 1;
  }
  const std::string title = graph.model().graph().name() + " · " + plan.strategy + ": " +
                            std::to_string(graph.num_nodes()) + " nodes run as " + std::to_string(kernels) +
                            " kernels (" + std::to_string(fused) +
                            " fused groups)\ncoloured boxes: fused groups; dashed edges: tensors a fused kernel "
                            "never stores; [shape]: tensors written to memory";
  out << "digraph onnxfuse {\n"
         "  graph [rankdir=TB, fontname=\"Helvetica\", fontsize=11, labelloc=t, nodesep=0.25, ranksep=0.3, "
         "label=\""
      << Escape(title)
      << "\"];\n"
         "  node [shape=box, style=\"rounded,filled\", fillcolor=white, fontname=\"Helvetica\", fontsize=10, "
         "height=0.3, margin=\"0.1,0.03\"];\n"
         "  edge [fontname=\"Helvetica\", fontsize=8, color=\"#333333\", arrowsize=0.6];\n";

  for (ValueId v : graph.inputs()) {
    const Value& value = graph.value(v);
    out << "  in" << v << " [shape=ellipse, fillcolor=\"#f2f2f2\", label=\""
        << Escape(value.name + (value.type.has_shape ? "\n" + value.type.ShapeString() : "")) << "\"];\n";
  }
  for (const auto& group : plan.groups) {
    std::vector<NodeId> drawn;
    for (NodeId id : group.nodes)
      if (!IsConstantNode(graph.node(id))) drawn.push_back(id);
    if (drawn.empty()) continue;
    if (group.nodes.size() < 2) {
      WriteNode(out, graph, drawn[0], "  ");
      continue;
    }
    const std::string function = GroupFunction(graph, group, function_of_group);
    const std::string fill = ClusterColor(function);
    out << "  subgraph cluster_g" << group.id << " {\n"
        << "    label=\"" << Escape(function + (group.rule.empty() ? "" : "\n" + group.rule)) << "\";\n"
        << "    style=\"rounded,filled\"; fillcolor=\"" << fill << "\"; color=\"" << Darker(fill)
        << "\"; fontname=\"Helvetica-Bold\"; fontsize=10;\n";
    for (NodeId id : drawn) WriteNode(out, graph, id, "    ");
    out << "  }\n";
  }
  for (ValueId v : graph.outputs()) {
    const Value& value = graph.value(v);
    out << "  out" << v << " [shape=ellipse, fillcolor=\"#f2f2f2\", label=\""
        << Escape(value.name + (value.type.has_shape ? "\n" + value.type.ShapeString() : "")) << "\"];\n";
  }

  // One edge per (value, distinct consumer), plus one per graph output.
  for (ValueId v = 0; v < graph.values().size(); ++v) {
    const Value& value = graph.value(v);
    std::string from;
    int group = -1;
    if (value.producer != kNoNode) {
      if (IsConstantNode(graph.node(value.producer))) continue;
      from = "n" + std::to_string(value.producer);
      group = plan.group_of[value.producer];
    } else if (value.is_graph_input && !graph.IsConstant(v)) {
      from = "in" + std::to_string(v);
    } else {
      continue;  // initializers are not drawn
    }
    bool internal = !value.is_graph_output && group >= 0;  // read only inside its group
    for (NodeId c : value.consumers) internal = internal && plan.group_of[c] == group;
    const std::string shape = Escape(TypeLabel(value.type));
    const bool group_of_many = group >= 0 && plan.groups[static_cast<std::size_t>(group)].nodes.size() > 1;
    NodeId previous = kNoNode;
    for (NodeId c : value.consumers) {
      if (c == previous) continue;  // one edge for a value read twice by one node
      previous = c;
      out << "  " << from << " -> n" << c;
      if (internal) out << " [style=dashed, color=\"#888888\"]";
      else if (plan.group_of[c] == group && group_of_many) out << " [color=\"#888888\"]";
      else if (!shape.empty()) out << " [label=\"" << shape << "\"]";
      out << ";\n";
    }
    if (value.is_graph_output)
      out << "  " << from << " -> out" << v << (shape.empty() ? "" : " [label=\"" + shape + "\"]") << ";\n";
  }
  out << "}\n";
  return out.str();
}

namespace {

// Full path of `program` in PATH, or "" when it is not there.
std::string FindInPath(const std::string& program) {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    const std::string candidate = (dir.empty() ? "." : dir) + "/" + program;
    struct stat st {};
    if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(candidate.c_str(), X_OK) == 0)
      return candidate;
  }
  return "";
}

// Runs `dot -Tsvg` reading `input_fd` and writing `output_fd`. Returns 0, or an
// errno value with `message` saying what went wrong.
int RunDot(const std::string& dot, int input_fd, int output_fd, std::string& message) {
  int err_pipe[2];
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
    message = std::string("cannot create a pipe: ") + std::strerror(errno);
    return errno;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, input_fd, 0);
  posix_spawn_file_actions_adddup2(&actions, output_fd, 1);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], 2);
  std::vector<std::string> args = {dot, "-Tsvg"};
  std::vector<char*> argv;
  for (auto& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int spawned = ::posix_spawn(&pid, dot.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(err_pipe[1]);
  if (spawned != 0) {
    ::close(err_pipe[0]);
    message = "cannot run " + dot + ": " + std::strerror(spawned);
    return spawned;
  }
  std::string errors;  // dot's stderr, read until it exits (bounded)
  char buffer[4096];
  for (;;) {
    const ssize_t n = ::read(err_pipe[0], buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    if (errors.size() < 16384) errors.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(err_pipe[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return 0;
  message = WIFEXITED(status) ? "dot -Tsvg exited with status " + std::to_string(WEXITSTATUS(status))
                              : "dot -Tsvg was killed by signal " + std::to_string(WTERMSIG(status));
  const std::string first_line = errors.substr(0, errors.find('\n'));
  if (!first_line.empty()) message += ": " + first_line;
  return EIO;
}

}  // namespace

void RenderSvg(const std::string& dot_text, const std::string& path) {
  const std::string dot = FindInPath("dot");
  if (dot.empty()) throw Error(ErrorKind::kUnsupported, path + ": Graphviz 'dot' is not installed");

  // dot reads the text from an unlinked temporary file: no pipe to feed (and no
  // SIGPIPE should dot stop early), nothing left behind.
  const char* tmpdir = std::getenv("TMPDIR");
  std::string temp = std::string(tmpdir && *tmpdir ? tmpdir : "/tmp") + "/onnxfuse-dot.XXXXXX";
  const int input_fd = ::mkostemp(temp.data(), O_CLOEXEC);
  if (input_fd < 0)
    throw Error(ErrorKind::kIo, path + ": cannot create a temporary file for dot: " + std::strerror(errno));
  ::unlink(temp.c_str());
  std::size_t done = 0;
  while (done < dot_text.size()) {
    const ssize_t n = ::write(input_fd, dot_text.data() + done, dot_text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int error = errno;
      ::close(input_fd);
      throw Error(ErrorKind::kIo, path + ": cannot write the temporary dot file: " + std::strerror(error));
    }
    done += static_cast<std::size_t>(n);
  }
  ::lseek(input_fd, 0, SEEK_SET);

  std::string message;
  try {
    WriteFileAtomically(path, [&](int fd) { return RunDot(dot, input_fd, fd, message); });
  } catch (const Error&) {
    ::close(input_fd);
    if (!message.empty()) throw Error(ErrorKind::kIo, path + ": " + message);
    throw;
  }
  ::close(input_fd);
}

}  // namespace onnxfuse
