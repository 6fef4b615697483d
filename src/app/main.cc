// onnx-fuse: fuse an ONNX model's operators and write the fused model and a report.
// Exit codes (docs/cli.md "Exit codes"): 0 ok, 2 usage, 3 invalid model, 4 unsupported
// construct, 5 I/O failure, 70 internal error.
#include <iostream>
#include <map>

#include <CLI/CLI.hpp>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "onnxfuse/error.h"
#include "app/quantize_job.h"
#include "app/run_job.h"
#include "backend/lower/core/lowered_ops.h"
#include "load/loader.h"
#include "fuse/pattern_fuser.h"
#include "pipeline/pipeline.h"
#include "backend/plan/plan_file.h"
#include "onnxfuse/strategy.h"

namespace {

// Messages go to stderr so `--report -` can own stdout.
void SetUpLogging(bool verbose, bool quiet) {
  auto logger = spdlog::stderr_color_mt("onnx-fuse");
  logger->set_pattern("%^%l%$: %v");
  logger->set_level(verbose ? spdlog::level::debug : quiet ? spdlog::level::err : spdlog::level::info);
  spdlog::set_default_logger(logger);
}

std::map<std::string, std::vector<std::int64_t>> ParseInputShapes(const std::vector<std::string>& specs) {
  std::map<std::string, std::vector<std::int64_t>> shapes;
  for (const auto& spec : specs) {
    auto eq = spec.rfind('=');
    if (eq == std::string::npos || eq == 0)
      throw onnxfuse::Error(onnxfuse::ErrorKind::kUsage, "--input-shape '" + spec + "' is not NAME=1x3x224x224");
    try {
      shapes[spec.substr(0, eq)] = onnxfuse::ParseShape(spec.substr(eq + 1));
    } catch (const onnxfuse::Error& e) {
      throw onnxfuse::Error(onnxfuse::ErrorKind::kUsage, "--input-shape '" + spec + "': " + e.what());
    }
  }
  return shapes;
}

// `onnx-fuse patterns`: one line per pattern, in the order they are tried.
void ListPatterns(const std::vector<std::string>& dirs) {
  auto patterns = onnxfuse::LoadPatterns(dirs);
  for (std::size_t index : onnxfuse::PatternPriorityOrder(patterns)) {
    const auto& p = patterns[index];
    std::string body, requires;
    for (const auto& node : p.function.node()) body += (body.empty() ? "" : " -> ") + node.op_type();
    for (const auto& r : p.requirements) {
      std::string args;
      for (const auto& a : r.args) args += (args.empty() ? "" : ", ") + a;
      requires += "  " + r.predicate + "(" + args + ")";
    }
    std::cout << p.function.name() << "  benefit " << p.benefit << "  " << body << requires << "  [" << p.file << ":"
              << p.line << "]\n";
  }
  std::cout << patterns.size() << " patterns\n";
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"onnx-fuse: fuse the operators of an ONNX model for faster CPU inference", "onnx-fuse"};
  onnxfuse::FuseJob job;
  // Strategy names are parsed by onnxfuse::ParseStrategy (one place, one message), after parsing.
  std::string strategy = onnxfuse::StrategyName(onnxfuse::kDefaultStrategy);
  std::vector<std::string> input_shapes;
  bool verbose = false, quiet = false, no_check = false, no_verify = false;
  app.add_option("input", job.input_path, "ONNX model to fuse");
  app.add_option("-o,--output", job.output_path, "write the fused model here (never the input path)");
  app.add_option("--report", job.report_path, "write the fusion report (JSON) here; '-' for stdout");
  app.add_option("--strategy", strategy,
                 "fuser: pattern (patterns/ by priority, then postdom), postdom (TVM post-dominator), "
                 "greedy (residual-aware chains)")
      ->capture_default_str();
  app.add_option("--input-shape", input_shapes, "pin a graph input's shape, e.g. input=1x3x224x224 (repeatable)");
  app.add_option("--max-group-size", job.fuser.max_group_size, "most ops in one fused group")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  app.add_option("--max-group-args", job.fuser.max_group_args, "most inputs of one fused group (0: no limit)")
      ->check(CLI::Range(0, 1 << 20))
      ->capture_default_str();
  app.add_flag("--no-check", no_check, "skip onnx::checker on the written model");
  app.add_flag("--no-verify", no_verify,
               "plan files: skip running the fused plan next to the unfused one before writing it "
               "(costs about one unfused compilation and inference)");
  app.add_option("--patterns", job.pattern_dirs, "add a directory of pattern files (*.onnxtxt; repeatable)");
  app.add_flag("--fold-bn", job.fold_bn, "fold inference BatchNormalization into the preceding Conv/ConvTranspose");
  app.add_option("--emit", job.emit,
                 "functions: fused ops as model-local functions; plain: standard ONNX only (BN folded); "
                 "plan: executable plan for `onnx-fuse run` (also chosen by -o NAME.plan)")
      ->check(CLI::IsMember({"functions", "plain", "plan"}))
      ->capture_default_str();
  app.add_option("--explain", job.explain_node, "print why this node ended where it did");
  app.add_option("--dot", job.dot_path, "write the fused graph for Graphviz (groups as coloured clusters)");
  app.add_option("--svg", job.svg_path, "render the fused graph to SVG (needs Graphviz 'dot')");

  auto* run_command = app.add_subcommand("run", "run a model on CPU with oneDNN, fused or not, and time it");
  onnxfuse::RunOptions run;
  std::string run_strategy = onnxfuse::StrategyName(onnxfuse::kDefaultStrategy);
  std::vector<std::string> run_shapes;
  run_command->add_option("model", run.model_path, "ONNX model or executable plan (.plan) to run")->required();
  run_command->add_option("--inputs", run.inputs_dir, "read input_N.pb (TensorProto) from this folder");
  run_command->add_option("--outputs", run.outputs_dir, "write output_N.pb (TensorProto) to this folder");
  run_command->add_option("--input-shape", run_shapes, "pin a graph input's shape, e.g. input=1x3x224x224 (a plan file: compile it at that shape)");
  run_command->add_option("--threads", run.threads, "OpenMP threads (0: all cores)")->check(CLI::Range(0, 1024));
  run_command->add_option("--iterations", run.iterations, "timed runs")->check(CLI::Range(1, 1000000))
      ->capture_default_str();
  run_command->add_option("--warmup", run.warmup, "untimed runs first")->check(CLI::Range(0, 1000000))
      ->capture_default_str();
  run_command->add_option("--strategy", run_strategy, "fuser for the fused plan: pattern, postdom or greedy")
      ->capture_default_str();
  bool run_no_fuse = false;
  run_command->add_flag("--no-fuse", run_no_fuse, "one primitive per ONNX op in plain layouts (the baseline)");
  run_command->add_flag("--check", run.check, "also run the other mode and compare outputs (fails beyond 1e-4)");
  run_command->add_flag("--json", run.json, "print one JSON line instead of the table");
  run_command->add_flag("--profile", run.profile,
                        "also time each step alone over --iterations more runs: the slowest steps, the time per kind");

  auto* quantize_command = app.add_subcommand(
      "quantize", "calibrate a float model on sample inputs and write it quantized to int8 (QDQ), with an accuracy report");
  onnxfuse::QuantizeOptions quantize;
  std::string method = "minmax";
  quantize_command->add_option("model", quantize.model_path, "float ONNX model")->required();
  quantize_command->add_option("-o,--output", quantize.output_path, "write the QDQ model here (never the input path)")
      ->required();
  quantize_command
      ->add_option("--calibration", quantize.calibration_dir,
                   "folder of input_N.pb (one sample), or of sub-folders each holding input_N.pb")
      ->required();
  quantize_command->add_option("--method", method, "activation ranges: minmax, or percentile (histogram, outliers cut)")
      ->check(CLI::IsMember({"minmax", "percentile"}))
      ->capture_default_str();
  quantize_command->add_option("--percentile", quantize.calibration.percentile,
                               "--method percentile: the share of values each range keeps, in percent")
      ->capture_default_str();
  quantize_command->add_option("--max-error", quantize.max_error,
                               "keep float every Conv/Gemm/MatMul whose own relative RMS error exceeds this");
  quantize_command->add_option("--weight-bits", quantize.weight_bits,
                               "8, or 7 for CPUs without VNNI (ONNX Runtime's reduce_range)")
      ->capture_default_str();
  quantize_command->add_option("--report", quantize.report_path, "write the accuracy report (JSON) here; '-' for stdout");
  quantize_command->add_option("--threads", quantize.threads, "OpenMP threads (0: all cores)")->check(CLI::Range(0, 1024));

  auto* patterns_command = app.add_subcommand("patterns", "list the fusion patterns, in the order they are tried");
  std::vector<std::string> list_dirs;
  patterns_command->add_option("--patterns", list_dirs, "add a directory of pattern files (repeatable)");
  auto* v = app.add_flag("-v,--verbose", verbose, "debug messages");
  app.add_flag("-q,--quiet", quiet, "errors only")->excludes(v);
  app.set_version_flag("--version", std::string("onnx-fuse ") + ONNXFUSE_VERSION);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? 0 : static_cast<int>(onnxfuse::ErrorKind::kUsage);
  }
  SetUpLogging(verbose, quiet);
  try {
    if (run_command->parsed()) {
      run.fuse = !run_no_fuse;
      run.strategy = onnxfuse::ParseStrategy(run_strategy);
      run.input_shapes = ParseInputShapes(run_shapes);
      return onnxfuse::RunJob(run, std::cout);
    }
    if (quantize_command->parsed()) {
      quantize.calibration.method =
          method == "percentile" ? onnxfuse::quantize::CalibrationMethod::kPercentile : onnxfuse::quantize::CalibrationMethod::kMinMax;
      onnxfuse::RunQuantizeJob(quantize, std::cout);
      return 0;
    }
    if (patterns_command->parsed()) {
      ListPatterns(list_dirs);
      return 0;
    }
    if (job.input_path.empty())
      throw onnxfuse::Error(onnxfuse::ErrorKind::kUsage, "no input model given (see --help)");
    job.strategy = onnxfuse::ParseStrategy(strategy);
    job.check = !no_check;
    job.verify = !no_verify;
    job.load.input_shapes = ParseInputShapes(input_shapes);
    if (job.output_path.empty() && job.report_path.empty())
      spdlog::warn("neither -o nor --report given: fusing without writing anything");
    onnxfuse::RunFuseJob(job, onnxfuse::WritePlanFileForJob, onnxfuse::backend::LowersOp);
    return 0;
  } catch (const onnxfuse::Error& e) {
    spdlog::error("{}", e.what());
    return e.exit_code();
  } catch (const std::exception& e) {
    spdlog::error("internal error: {}", e.what());
    return static_cast<int>(onnxfuse::ErrorKind::kInternal);
  }
}
