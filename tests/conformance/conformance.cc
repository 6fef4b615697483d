// ONNX backend conformance of the oneDNN backend, on the node tests of Debian's
// libonnx-testdata (onnx/backend/test/data/node):
//   onnxfuse_conformance NODE_DIR [--expected FILE] [--claimed PINS | --write-claimed PINS]
//                      [--filter SUBSTR] [--jobs N] [--timeout SEC] [--show-unsupported] [--session]
// For every test folder (sorted), in a forked child (run_case.cc): load
// model.onnx; compile it fused and unfused. A test is not claimed only when
// loading it or its inputs, or compiling it in both modes, raises
// Error(kUnsupported); any other exception is a failure of a claimed test.
// A claimed test runs every test_data_set_N in both modes and compares each
// output with output_K.pb at the backend-test tolerance (numpy assert_allclose,
// rtol 1e-3, atol 1e-7: |a - e| <= atol + rtol * |e| per element, NaN where NaN
// is expected, element types and shapes equal). With --session, the data sets
// run through InferenceSession (its defaults) instead of the two plans: the
// same tests are claimed, and the session must pass each of them. A crash or a hang (--timeout)
// of the child fails that test only.
// Prints one line per claimed test, a per-op table (a test counts for every
// distinct op type of its graph), the known failures with their reasons, totals.
// Exit 1 when a claimed test fails that FILE does not list, when a listed test
// passes or is no longer claimed, or when NODE_DIR is missing. With --claimed
// PINS (tests/conformance/claimed_node.txt, one test per line), also when the set
// of claimed tests differs from PINS in either direction: a test that stops
// being claimed (a regression that now throws Unsupported) fails the run
// unless PINS changes with it. --write-claimed PINS writes the set instead.
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <spdlog/spdlog.h>

#include <onnx/onnx_pb.h>

#include "run_case.h"

namespace fs = std::filesystem;

namespace {

std::string Num(double v) {
  std::ostringstream out;
  out.precision(3);
  out << v;
  return out.str();
}

struct Result {
  std::string name;
  std::vector<std::string> ops;  // distinct op types of the graph
  bool claimed = false, passed = false;
  double max_abs = 0, max_rel = 0;
  std::string unsupported;
  std::vector<std::string> failures, log, bound;
};

std::vector<std::string> OpTypes(const fs::path& model) {
  onnx::ModelProto proto;
  std::ifstream in(model, std::ios::binary);
  std::set<std::string> ops;
  if (proto.ParseFromIstream(&in))
    for (const auto& node : proto.graph().node())
      ops.insert(node.domain().empty() || node.domain() == "ai.onnx" ? node.op_type()
                                                                      : node.domain() + "." + node.op_type());
  return {ops.begin(), ops.end()};
}

void Interpret(Result& r, const std::string& output, int status, bool timed_out, int timeout) {
  bool done = false;
  std::istringstream lines(output);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("@@UNSUPPORTED ", 0) == 0) r.unsupported = line.substr(14), done = true;
    else if (line.rfind("@@FAIL ", 0) == 0) r.failures.push_back(line.substr(7));
    else if (line == "@@DONE") done = true;
    else if (line.rfind("@@BOUND ", 0) == 0) r.bound.push_back(line.substr(8));
    else if (line.rfind("@@CHECK ", 0) == 0) {
      std::istringstream in(line.substr(8));
      double a = 0, rel = 0;
      in >> a >> rel;
      r.max_abs = std::max(r.max_abs, a), r.max_rel = std::max(r.max_rel, rel);
    } else if (!line.empty() && r.log.size() < 5) r.log.push_back(line);
  }
  if (timed_out) r.failures.push_back("crash: timed out after " + std::to_string(timeout) + " s");
  else if (WIFSIGNALED(status)) r.failures.push_back(std::string("crash: ") + strsignal(WTERMSIG(status)));
  else if (!done || WEXITSTATUS(status) != 0)
    r.failures.push_back("crash: exit status " + std::to_string(WEXITSTATUS(status)) + " before finishing");
  r.claimed = r.unsupported.empty() || !r.failures.empty();
  r.passed = r.claimed && r.failures.empty();
}

struct Child {
  std::size_t index;
  pid_t pid;
  int fd;
  std::string output;
  std::chrono::steady_clock::time_point start;
};

// Runs RunCase for every test in a forked child, `jobs` at a time; prints each
// claimed test's line as soon as all tests before it are done.
void RunAll(const fs::path& root, std::vector<Result>& results, int jobs, int timeout, bool show_unsupported,
            onnxfuse::conformance::Via via) {
  std::vector<Child> running;
  std::size_t next = 0, reported = 0;
  std::vector<bool> finished(results.size(), false);
  while (reported < results.size()) {
    while (next < results.size() && static_cast<int>(running.size()) < jobs) {
      int fds[2];
      if (pipe(fds) != 0) throw std::runtime_error("pipe failed");
      std::cout.flush();
      pid_t pid = fork();
      if (pid < 0) throw std::runtime_error("fork failed");
      if (pid == 0) {
        close(fds[0]);
        dup2(fds[1], STDOUT_FILENO), dup2(fds[1], STDERR_FILENO), close(fds[1]);
        spdlog::set_level(spdlog::level::err);
        onnxfuse::conformance::RunCase((root / results[next].name).string(), via);
        std::cout.flush();
        std::_Exit(0);
      }
      close(fds[1]);
      running.push_back({next++, pid, fds[0], "", std::chrono::steady_clock::now()});
    }
    std::vector<pollfd> polls;
    for (const Child& c : running) polls.push_back({c.fd, POLLIN, 0});
    poll(polls.data(), polls.size(), 200);
    for (std::size_t i = 0; i < running.size();) {
      Child& c = running[i];
      bool eof = false;
      if (polls[i].revents) {
        char buf[4096];
        ssize_t n = read(c.fd, buf, sizeof buf);
        if (n > 0) c.output.append(buf, static_cast<std::size_t>(n));
        else eof = true;
      }
      bool timed_out = std::chrono::steady_clock::now() - c.start > std::chrono::seconds(timeout);
      if (!eof && !timed_out) {
        ++i;
        continue;
      }
      if (timed_out) kill(c.pid, SIGKILL);
      int status = 0;
      waitpid(c.pid, &status, 0);
      close(c.fd);
      Interpret(results[c.index], c.output, status, timed_out && !eof, timeout);
      finished[c.index] = true;
      running.erase(running.begin() + static_cast<std::ptrdiff_t>(i));
      polls.erase(polls.begin() + static_cast<std::ptrdiff_t>(i));
    }
    for (; reported < results.size() && finished[reported]; ++reported) {  // print in sorted order
      const Result& r = results[reported];
      if (!r.claimed) {
        if (show_unsupported) std::cout << "---- " << r.name << "  not claimed: " << r.unsupported << "\n";
        continue;
      }
      std::cout << (r.passed ? "PASS " : "FAIL ") << r.name << "  max abs " << Num(r.max_abs) << ", max rel "
                << Num(r.max_rel);
      for (std::size_t b = 0; b < r.bound.size(); ++b)
        std::cout << (b ? ", " : "  [bound as constants: ") << r.bound[b] << (b + 1 == r.bound.size() ? "]" : "");
      std::cout << "\n";
      for (const auto& f : r.failures) std::cout << "    " << f << "\n";
      if (!r.passed)
        for (const auto& l : r.log) std::cout << "    | " << l << "\n";
    }
  }
}

// expected_failures.txt: "test_name  # reason" per line; '#' lines and blank lines ignored.
std::map<std::string, std::string> ReadExpected(const std::string& path, bool& ok) {
  std::map<std::string, std::string> listed;
  if (path.empty()) return listed;
  std::ifstream in(path);
  if (!in) return std::cout << "cannot read " << path << "\n", ok = false, listed;
  for (std::string line; std::getline(in, line);) {
    auto hash = line.find('#');
    std::string name = line.substr(0, hash), reason = hash == std::string::npos ? "" : line.substr(hash + 1);
    name.erase(std::remove_if(name.begin(), name.end(), [](unsigned char ch) { return std::isspace(ch); }), name.end());
    reason.erase(0, reason.find_first_not_of(" \t"));
    if (name.empty()) continue;
    if (reason.empty()) std::cout << path << ": " << name << " has no '# reason'\n", ok = false;
    listed[name] = reason;
  }
  return listed;
}

// The pins (--claimed): one node test name per line; '#' lines and blank lines ignored.
std::set<std::string> ReadClaimed(const std::string& path, bool& ok) {
  std::set<std::string> names;
  std::ifstream in(path);
  if (!in) return std::cout << "cannot read " << path << "\n", ok = false, names;
  for (std::string line; std::getline(in, line);) {
    line = line.substr(0, line.find('#'));
    line.erase(std::remove_if(line.begin(), line.end(), [](unsigned char ch) { return std::isspace(ch); }), line.end());
    if (!line.empty()) names.insert(line);
  }
  return names;
}

// The claimed tests against the pinned set, both ways.
bool CheckClaimed(const std::vector<Result>& results, const std::set<std::string>& pinned, bool whole_corpus) {
  bool ok = true;
  std::set<std::string> seen;
  for (const Result& r : results) {
    seen.insert(r.name);
    if (r.claimed && !pinned.count(r.name))
      ok = false, std::cout << "NEWLY CLAIMED " << r.name << ": add it to the pins (--claimed)\n";
    else if (!r.claimed && pinned.count(r.name))
      ok = false, std::cout << "NO LONGER CLAIMED " << r.name << ": " << r.unsupported
                            << " (fix it, or remove it from the pins)\n";
  }
  for (const auto& name : pinned)
    if (whole_corpus && !seen.count(name)) ok = false, std::cout << "STALE PIN " << name << ": not in the corpus\n";
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: onnxfuse_conformance NODE_DIR [--expected FILE] [--claimed PINS | --write-claimed PINS] "
                 "[--filter SUBSTR] [--jobs N] [--timeout S] [--show-unsupported] [--session]\n";
    return 2;
  }
  fs::path root = argv[1];
  std::string expected_path, filter, claimed_path, write_claimed;
  int jobs = 1, timeout = 60;
  bool show_unsupported = false;
  auto via = onnxfuse::conformance::Via::kPlans;
  for (int i = 2; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--show-unsupported") {
      show_unsupported = true;
      continue;
    }
    if (arg == "--session") {
      via = onnxfuse::conformance::Via::kSession;
      continue;
    }
    if (i + 1 >= argc) return std::cerr << "missing value for " << arg << "\n", 2;
    if (arg == "--expected") expected_path = argv[++i];
    else if (arg == "--claimed") claimed_path = argv[++i];
    else if (arg == "--write-claimed") write_claimed = argv[++i];
    else if (arg == "--filter") filter = argv[++i];
    else if (arg == "--jobs") jobs = std::max(1, std::stoi(argv[++i]));
    else if (arg == "--timeout") timeout = std::max(1, std::stoi(argv[++i]));
    else return std::cerr << "unknown argument " << arg << "\n", 2;
  }
  auto has_tests = [&] {  // node/, pytorch-converted/, pytorch-operator/: folders of MODEL/model.onnx
    std::error_code ec;
    if (!fs::is_directory(root, ec)) return false;
    for (const auto& entry : fs::directory_iterator(root, ec))
      if (fs::exists(entry.path() / "model.onnx")) return true;
    return false;
  };
  if (!has_tests()) {
    std::cout << "conformance data not found at '" << root.string()
              << "': install Debian's libonnx-testdata (scripts/setup.sh) and re-run cmake\n";
    return 1;
  }
  auto start = std::chrono::steady_clock::now();
  bool ok = true;
  std::map<std::string, std::string> listed = ReadExpected(expected_path, ok);

  std::vector<Result> results;
  for (const auto& entry : fs::directory_iterator(root))
    if (entry.is_directory() && fs::exists(entry.path() / "model.onnx") &&
        entry.path().filename().string().find(filter) != std::string::npos)
    {
      Result r;
      r.name = entry.path().filename().string();
      r.ops = OpTypes(entry.path() / "model.onnx");
      results.push_back(std::move(r));
    }
  std::sort(results.begin(), results.end(), [](const Result& a, const Result& b) { return a.name < b.name; });
  RunAll(root, results, jobs, timeout, show_unsupported, via);

  // Per op: tests containing it in the corpus, claimed, passed.
  std::map<std::string, std::array<int, 3>> per_op;
  for (const Result& r : results)
    for (const auto& op : r.ops) {
      auto& row = per_op[op];
      ++row[0], row[1] += r.claimed, row[2] += r.passed;
    }
  std::cout << "\nper op: passed/claimed (of N tests in the corpus; a test counts for every op in its graph)\n";
  std::vector<std::string> never;
  for (const auto& [op, row] : per_op) {
    if (row[1] == 0) never.push_back(op + "(" + std::to_string(row[0]) + ")");
    else std::cout << "  " << op << ": " << row[2] << "/" << row[1] << " (of " << row[0] << ")\n";
  }
  std::cout << "ops in no claimed test (tests in the corpus):";
  for (std::size_t i = 0; i < never.size(); ++i) std::cout << (i % 8 ? " " : "\n  ") << never[i];
  std::cout << "\n\n";

  int claimed = 0, passed = 0, known = 0;
  std::set<std::string> seen;
  for (const Result& r : results) {
    seen.insert(r.name);
    claimed += r.claimed, passed += r.passed;
    auto it = listed.find(r.name);
    if (r.claimed && !r.passed && it != listed.end()) {
      ++known;
      std::cout << "KNOWN FAILURE " << r.name << ": " << it->second << "\n";
    } else if (r.claimed && !r.passed) {
      ok = false;
      std::cout << "UNEXPECTED FAILURE " << r.name << ": " << r.failures.front()
                << " (fix it, or list it in expected_failures.txt with '# reason')\n";
    } else if (it != listed.end()) {
      ok = false;
      std::cout << (r.passed ? "UNEXPECTED PASS " : "NOT CLAIMED ") << r.name << ": listed as a known failure but "
                << (r.passed ? "passes" : "is not claimed (" + r.unsupported + ")")
                << ": remove it from expected_failures.txt\n";
    }
  }
  for (const auto& [name, reason] : listed)
    if (!seen.count(name) && filter.empty())
      ok = false, std::cout << "STALE ENTRY " << name << ": listed but not in the corpus\n";
  if (!claimed_path.empty()) {
    std::set<std::string> pinned = ReadClaimed(claimed_path, ok);
    ok = CheckClaimed(results, pinned, filter.empty()) && ok;
  }
  if (!write_claimed.empty()) {
    std::ofstream out(write_claimed);
    out << "# The tests of this folder that tests/conformance claims (ctest conformance.*, --claimed):\n"
           "# a test leaving or joining this set fails the run unless this file changes with it.\n"
           "# Written by: onnxfuse_conformance NODE_DIR --write-claimed FILE\n";
    for (const Result& r : results)
      if (r.claimed) out << r.name << "\n";
    if (!out) ok = false, std::cout << "cannot write " << write_claimed << "\n";
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << "claimed " << claimed << " of " << results.size() << " node tests, passed " << passed << " ("
            << known << " known failures), " << Num(seconds) << " s\n";
  std::cout << (ok ? "conformance: OK\n" : "conformance: FAILED\n");
  return ok ? 0 : 1;
}
