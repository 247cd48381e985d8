//===- RematIlp.cpp - --trainc-remat's exact solver: an integer program ---===//
//
// Which saved values to recompute, and when, as an integer program (after
// Checkmate, MLSys 2020, restricted to the op order the function has),
// solved by CBC. The model is the greedy's (RematModel.h): the live bytes
// at each op.
//
//   * A candidate is a recomputable forward op with saved results (read
//     by the backward pass). A view of a saved result that lives on keeps
//     it: such an op is never absent.
//   * A choice R[X,t] = 1 recomputes X right before op t, a time the
//     backward pass reads one of X's saved results (or a time another
//     choice needs X there: a closure over the program). The saved results
//     are then absent from after their last reader before t until t, and
//     the clones serve every later reader. X may be recomputed at several
//     times; of the choices whose absences cover one time, one at most.
//   * The chain of a choice: X, and the ops whose results are dead by t,
//     recomputed with it (its own peak, its clones run in order, counts
//     before op t). An operand still in use at t is read where it is: a
//     saved result must not be absent then.
//   * The live bytes at every op (and before it, where chains run) are at
//     most M. The objective: the recomputed flops (CostOpInterface) with M
//     the target, or, where no choice meets it, M first, then the flops at
//     that M.
//
// The greedy may recompute a saved result inside another chain where it
// is absent; this model does not, so on some graphs the greedy reaches a
// lower peak (`solver=best` runs both and keeps the better plan). Where
// both meet a target, the integer program's plan is the cheapest of those
// its model holds (docs/PERFORMANCE.md compares them).
//
// CBC is run with a node limit, which makes the plan the same on every
// machine, and a time limit, a safety net that the reference models do not
// reach (where it binds, the plan depends on the machine's speed, and the
// outcome says so). The best solution found is used, and the outcome says
// whether it was proven optimal. An integer program solved before in the
// process (a --memory-budget search asks for the lowest peak of one graph
// at several targets) is answered from a memo.
//
//===----------------------------------------------------------------------===//
#include "dialects/graph/Transforms/RematModel.h"

#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"

#include "llvm/ADT/Hashing.h"
#include "llvm/ADT/SetVector.h"

#include <coin/Cbc_C_Interface.h>

#include <cassert>
#include <chrono>
#include <cmath>
#include <map>
#include <mutex>
#include <set>

using namespace mlir;

namespace trainc::graph::remat {
namespace {

/// A result the backward pass reads.
struct Saved {
  int64_t size = 0;
  int64_t made = 0;
  /// Its readers: where they run, and where what they read dies (later
  /// for a view).
  SmallVector<std::pair<int64_t, int64_t>> uses;

  /// Where it dies if its readers from `at` on read a clone made there;
  /// nullopt where a view made before `at` still lives there.
  std::optional<int64_t> endBefore(int64_t at) const {
    int64_t end = made;
    for (auto [position, dies] : uses)
      if (position < at)
        end = std::max(end, dies);
    if (end >= at)
      return std::nullopt;
    return end;
  }
};

struct Candidate {
  Operation *op = nullptr;
  DenseMap<Value, Saved> saved;
  /// The times tried, and the columns of its choices.
  std::set<int64_t> times;
  SmallVector<int> columns;
};

/// X recomputed before op `at`.
struct Choice {
  int candidate = 0;
  int64_t at = 0;
  SmallVector<Operation *> chain; // program order, the candidate last
  double flops = 0;
  /// The most bytes the chain's clones hold at once.
  int64_t transient = 0;
  /// The saved results absent from `from` to `at` (exclusive).
  struct Absent {
    Value value;
    int64_t bytes, from;
  };
  SmallVector<Absent> absent;
  /// Saved results the chain reads (and their candidates): they must not
  /// be absent at `at`.
  SmallVector<std::pair<int, Value>> present;
  bool valid = false;
};

class Problem {
public:
  Problem(func::FuncOp function)
      : function(function), live(function), forward(forwardOps(function)),
        liveBytes(live.liveBytes()), liveBefore(liveBytes) {
    for (auto [at, op] : llvm::enumerate(live.ops))
      for (Value result : op->getResults())
        liveBefore[at] -= live.sizeOf(result);
    findCandidates();
    closeTimes();
  }

  /// Solves for at most `target` live bytes (0: as low as possible);
  /// applies the solution.
  std::optional<IlpOutcome> run(int64_t target, const IlpLimits &limits);
  /// A solve of run() stopped at the time limit.
  bool ranOutOfTime() const { return outOfTime; }

private:
  void findCandidates();
  void closeTimes();
  /// Recomputing `candidate` before op `at`.
  Choice makeChoice(int candidate, int64_t at);
  /// Adds `at` to the times of `candidate` where it may be recomputed
  /// there.
  void tryTime(int candidate, int64_t at);

public:
  struct Solution {
    std::vector<double> values;
    bool optimal = false;
    double objective = 0;
    int64_t nodes = 0;
  };
  /// A solve's answer, and whether the time limit (not the node limit or
  /// a proof) stopped it.
  struct Attempt {
    std::optional<Solution> solution;
    bool timedOut = false;
  };

private:
  /// A solve of this problem stopped at the time limit: its programs are
  /// too large for the limits, and the next would stop there too.
  bool outOfTime = false;
  /// min flops with M <= bound, or (bound < 0) min M.
  std::optional<Solution> solve(double bound, const IlpLimits &limits);
  /// The model's live bytes (scaled) at each op, for a solution.
  double modelPeak(const std::vector<double> &values) const;
  void apply(const std::vector<double> &values);

  func::FuncOp function;
  Liveness live;
  DenseSet<Operation *> forward;
  /// The live bytes at each op, and before it (without its results).
  std::vector<int64_t> liveBytes, liveBefore;
  std::vector<Candidate> candidates;
  DenseMap<Operation *, int> candidateOf;
  std::vector<Choice> choices; // by column
  std::vector<std::pair<int, int64_t>> pending;
};

void Problem::findCandidates() {
  for (Operation *op : live.ops) {
    if (!recomputable(op, forward))
      continue;
    Candidate candidate;
    candidate.op = op;
    for (Value result : op->getResults()) {
      if (!live.sizeOf(result) ||
          llvm::all_of(result.getUsers(), [&](Operation *user) {
            return isa<func::ReturnOp>(user) || forward.contains(user);
          }))
        continue;
      Saved saved;
      saved.size = live.sizeOf(result);
      saved.made = live.positionOf(op);
      for (OpOperand &use : result.getUses()) {
        Operation *user = use.getOwner();
        if (isa<func::ReturnOp>(user))
          continue;
        int64_t at = live.positionOf(user);
        saved.uses.push_back(
            {at, isView(user) ? live.endOf(user->getResult(0)) : at});
      }
      candidate.saved[result] = std::move(saved);
    }
    if (candidate.saved.empty())
      continue;
    candidateOf[op] = static_cast<int>(candidates.size());
    candidates.push_back(std::move(candidate));
  }
}

void Problem::tryTime(int candidate, int64_t at) {
  Candidate &c = candidates[candidate];
  // Some saved result must still be read there, and none viewed across.
  bool read = false;
  for (const auto &entry : c.saved) {
    if (!entry.second.endBefore(at))
      return;
    read |= live.endOf(entry.first) >= at;
  }
  if (read && c.times.insert(at).second)
    pending.push_back({candidate, at});
}

Choice Problem::makeChoice(int candidate, int64_t at) {
  Choice choice;
  choice.candidate = candidate;
  choice.at = at;
  Operation *root = candidates[candidate].op;
  llvm::SetVector<Operation *> chain;
  SmallVector<Operation *> work{root};
  llvm::SetVector<std::pair<int, Value>> present;
  while (!work.empty()) {
    Operation *op = work.pop_back_val();
    for (Value operand : op->getOperands()) {
      Operation *def = operand.getDefiningOp();
      if (!def || matchPattern(def, m_Constant()) || chain.contains(def))
        continue;
      if (live.endOf(operand) >= at) {
        // In use at `at`: there, unless it is a saved result recomputed
        // after `at` (the solver sees that it is not).
        auto it = candidateOf.find(def);
        if (it != candidateOf.end() &&
            candidates[it->second].saved.count(operand))
          present.insert({it->second, operand});
        continue;
      }
      // Recomputed with the chain.
      if (!recomputable(def, forward) ||
          static_cast<int>(chain.size()) + 1 >= kMaxChain)
        return choice;
      chain.insert(def);
      work.push_back(def);
    }
  }
  choice.chain.assign(chain.begin(), chain.end());
  llvm::sort(choice.chain, [&](Operation *a, Operation *b) {
    return live.positionOf(a) < live.positionOf(b);
  });
  choice.chain.push_back(root);
  // The chain's own peak as its clones run in order: a clone's results
  // live until the last clone that reads them (the root's results in use
  // at `at` are counted there already).
  std::vector<int64_t> bytes(choice.chain.size() + 1, 0);
  for (auto [index, op] : llvm::enumerate(choice.chain)) {
    choice.flops += flopsOf(op);
    for (Value result : op->getResults()) {
      if (op == root && live.endOf(result) >= at)
        continue;
      size_t last = index;
      for (Operation *user : result.getUsers())
        if (const auto *it = llvm::find(choice.chain, user);
            it != choice.chain.end())
          last = std::max<size_t>(last, it - choice.chain.begin());
      bytes[index] += live.sizeOf(result);
      bytes[last + 1] -= live.sizeOf(result);
    }
  }
  for (size_t i = 0, now = 0; i < choice.chain.size(); ++i) {
    now += bytes[i];
    choice.transient = std::max<int64_t>(choice.transient, now);
  }
  for (const auto &entry : candidates[candidate].saved) {
    int64_t from = *entry.second.endBefore(at) + 1;
    if (from < at)
      choice.absent.push_back({entry.first, entry.second.size, from});
  }
  for (auto [other, value] : present)
    if (other != candidate) {
      choice.present.push_back({other, value});
      // It may come back right here.
      tryTime(other, at);
    }
  choice.valid = true;
  return choice;
}

void Problem::closeTimes() {
  // The times the backward pass reads a saved result.
  for (int i = 0; i < static_cast<int>(candidates.size()); ++i)
    for (const auto &entry : candidates[i].saved)
      for (Operation *user : entry.first.getUsers())
        if (!isa<func::ReturnOp>(user) && !forward.contains(user))
          tryTime(i, live.positionOf(user));
  auto add = [&](Choice choice) {
    if (!choice.valid)
      return;
    candidates[choice.candidate].columns.push_back(
        static_cast<int>(choices.size()));
    choices.push_back(std::move(choice));
  };
  while (!pending.empty()) {
    auto [candidate, at] = pending.back();
    pending.pop_back();
    add(makeChoice(candidate, at));
  }
}

/// Bytes in the program's units of 4 KiB, flops in MFLOP: coefficients CBC
/// handles well.
constexpr double kBytes = 1.0 / 4096, kFlops = 1e-6;

/// Integer programs solved in this process, by a hash of the program and
/// the limits: the same program gets the same answer without CBC.
struct Memo {
  std::mutex mutex;
  std::map<uint64_t, Problem::Attempt> solved;
};

Memo &memo() {
  static Memo instance;
  return instance;
}

std::optional<Problem::Solution> Problem::solve(double bound,
                                                const IlpLimits &limits) {
  bool minimizePeak = bound < 0;
  int peak = static_cast<int>(choices.size());
  int columns = peak + 1;

  // The rows, collected first and handed to CBC at once: adding them one
  // at a time (Cbc_addRow) took 70 s for RegNetY-400MF's 24160 rows.
  std::vector<int> cols;
  std::vector<double> coefs;
  struct Entry {
    int row, column;
    double coefficient;
  };
  std::vector<Entry> entries;
  std::vector<double> upper; // of each row; every row is `<=`
  auto row = [&](char sense, double rhs) {
    assert(sense == 'L' && "the program's rows are all upper bounds");
    (void)sense;
    int index = static_cast<int>(upper.size());
    for (auto [column, coefficient] : llvm::zip(cols, coefs))
      entries.push_back({index, column, coefficient});
    upper.push_back(rhs);
    cols.clear();
    coefs.clear();
  };
  // A value is absent once at a time: of the recomputations of one op
  // whose absences cover a time (or that run there), one at most.
  for (Candidate &candidate : candidates) {
    std::set<std::vector<int>> cliques;
    for (int t : candidate.columns) {
      std::vector<int> clique;
      int64_t at = choices[t].at;
      for (int c : candidate.columns)
        if (choices[c].at == at ||
            (choices[c].at > at &&
             llvm::any_of(choices[c].absent,
                          [&](auto absent) { return absent.from <= at; })))
          clique.push_back(c);
      if (clique.size() > 1)
        cliques.insert(clique);
    }
    for (const std::vector<int> &clique : cliques) {
      cols.assign(clique.begin(), clique.end());
      coefs.assign(clique.size(), 1);
      row('L', 1);
    }
  }
  for (int column = 0; column < static_cast<int>(choices.size()); ++column) {
    const Choice &choice = choices[column];
    // What the chain reads is there: not absent at `at`.
    for (auto [other, value] : choice.present) {
      cols.push_back(column), coefs.push_back(1);
      for (int c : candidates[other].columns)
        if (llvm::any_of(choices[c].absent, [&](auto absent) {
              return absent.value == value && absent.from <= choice.at &&
                     choice.at < choices[c].at;
            }))
          cols.push_back(c), coefs.push_back(1);
      if (cols.size() > 1)
        row('L', 1);
      cols.clear(), coefs.clear();
    }
  }
  // The live bytes at each op: where nothing changes between two ops, the
  // larger of them.
  std::set<int64_t> breaks{0, static_cast<int64_t>(liveBytes.size())};
  for (const Choice &choice : choices)
    breaks.insert(choice.at), breaks.insert(choice.at + 1);
  for (const Choice &choice : choices)
    for (const Choice::Absent &absent : choice.absent)
      breaks.insert(absent.from);
  for (auto it = breaks.begin(); std::next(it) != breaks.end(); ++it) {
    int64_t from = *it, to = *std::next(it);
    if (from >= static_cast<int64_t>(liveBytes.size()))
      break;
    int64_t most =
        *std::max_element(liveBytes.begin() + from, liveBytes.begin() + to);
    // At the ops, and, where chains are cloned, before the first op (its
    // results are not made yet).
    for (bool chains : {false, true}) {
      bool any = false;
      for (int column = 0; column < static_cast<int>(choices.size());
           ++column) {
        const Choice &choice = choices[column];
        double coefficient = 0;
        if (choice.at > from)
          for (const Choice::Absent &absent : choice.absent)
            if (absent.from <= from)
              coefficient -= absent.bytes;
        if (chains && choice.at == from)
          coefficient += choice.transient, any = true;
        if (coefficient != 0)
          cols.push_back(column), coefs.push_back(coefficient * kBytes);
      }
      if (chains && !any) {
        cols.clear(), coefs.clear();
        continue;
      }
      cols.push_back(peak), coefs.push_back(-1);
      row('L', -(chains ? liveBefore[from] : most) * kBytes);
    }
  }

  // Column-major, as Cbc_loadProblem takes the matrix.
  llvm::stable_sort(entries, [](const Entry &a, const Entry &b) {
    return a.column < b.column;
  });
  std::vector<CoinBigIndex> starts(columns + 1, 0);
  std::vector<int> rows;
  std::vector<double> values;
  rows.reserve(entries.size());
  values.reserve(entries.size());
  for (const Entry &entry : entries) {
    ++starts[entry.column + 1];
    rows.push_back(entry.row);
    values.push_back(entry.coefficient);
  }
  for (int column = 0; column < columns; ++column)
    starts[column + 1] += starts[column];
  std::vector<double> columnLower(columns, 0), columnUpper(columns, 1),
      objective(columns, 0);
  for (int column = 0; column < peak; ++column)
    objective[column] = minimizePeak ? 0 : choices[column].flops * kFlops;
  columnUpper[peak] = minimizePeak ? 1e30 : bound;
  objective[peak] = minimizePeak ? 1 : 0;
  std::vector<double> lower(upper.size(), -1e30);

  auto bytes = [](const auto &vector) {
    const char *data = reinterpret_cast<const char *>(vector.data());
    return llvm::hash_combine_range(data,
                                    data + vector.size() * sizeof(vector[0]));
  };
  std::vector<double> scalars = {
      columnUpper[peak], static_cast<double>(limits.nodes), limits.seconds};
  uint64_t key =
      llvm::hash_combine(columns, bytes(starts), bytes(rows), bytes(values),
                         bytes(upper), bytes(objective), bytes(scalars));
  {
    std::lock_guard<std::mutex> lock(memo().mutex);
    auto known = memo().solved.find(key);
    if (known != memo().solved.end()) {
      outOfTime |= known->second.timedOut;
      return known->second.solution;
    }
  }

  Cbc_Model *model = Cbc_newModel();
  Cbc_setLogLevel(model, 0);
  Cbc_loadProblem(model, columns, static_cast<int>(upper.size()), starts.data(),
                  rows.data(), values.data(), columnLower.data(),
                  columnUpper.data(), objective.data(), lower.data(),
                  upper.data());
  for (int column = 0; column < peak; ++column)
    Cbc_setInteger(model, column);
  Cbc_setMaximumNodes(model, static_cast<int>(limits.nodes));
  Cbc_setMaximumSeconds(model, limits.seconds);
  Cbc_solve(model);
  Attempt attempt;
  if (const double *values = Cbc_bestSolution(model)) {
    Solution &solution = attempt.solution.emplace();
    solution.values.assign(values, values + choices.size() + 1);
    solution.optimal = Cbc_isProvenOptimal(model);
    solution.objective = Cbc_getObjValue(model);
    solution.nodes = Cbc_getNodeCount(model);
  }
  // Stopped on a limit (status 1) with nodes to spare: the time limit.
  attempt.timedOut = Cbc_status(model) == 1 && !Cbc_isProvenOptimal(model) &&
                     Cbc_getNodeCount(model) < limits.nodes;
  outOfTime |= attempt.timedOut;
  Cbc_deleteModel(model);
  std::lock_guard<std::mutex> lock(memo().mutex);
  // A --memory-budget search solves tens of programs: a bound keeps a
  // long-running process's memo small.
  if (memo().solved.size() >= 64)
    memo().solved.clear();
  memo().solved.emplace(key, attempt);
  return attempt.solution;
}

double Problem::modelPeak(const std::vector<double> &values) const {
  std::vector<int64_t> at = liveBytes, before = liveBefore;
  std::vector<bool> chains(at.size(), false);
  for (int column = 0; column < static_cast<int>(choices.size()); ++column) {
    if (values[column] < 0.5)
      continue;
    const Choice &choice = choices[column];
    before[choice.at] += choice.transient;
    chains[choice.at] = true;
    for (const Choice::Absent &absent : choice.absent)
      for (int64_t t = absent.from; t < choice.at; ++t)
        at[t] -= absent.bytes, before[t] -= absent.bytes;
  }
  int64_t peak = 0;
  for (size_t t = 0; t < at.size(); ++t)
    peak = std::max(peak, chains[t] ? std::max(at[t], before[t]) : at[t]);
  return peak;
}

void Problem::apply(const std::vector<double> &values) {
  SmallVector<const Choice *> chosen;
  for (int column = 0; column < static_cast<int>(choices.size()); ++column)
    if (values[column] > 0.5)
      chosen.push_back(&choices[column]);
  // Latest first, and at one op the later candidates first, each chain
  // before the ones placed there already: a clone that reads another
  // recomputed value is placed before that value's clone is made, and
  // the redirection below reaches it.
  llvm::sort(chosen, [&](const Choice *a, const Choice *b) {
    if (a->at != b->at)
      return a->at > b->at;
    return live.positionOf(candidates[a->candidate].op) >
           live.positionOf(candidates[b->candidate].op);
  });
  Operation *before = nullptr;
  int64_t group = -1;
  for (const Choice *choice : chosen) {
    if (choice->at != group)
      group = choice->at, before = live.ops[choice->at];
    OpBuilder builder(before);
    IRMapping mapping;
    SmallVector<Operation *> clones;
    for (Operation *op : choice->chain)
      clones.push_back(builder.clone(*op, mapping));
    // The root's readers from here on read its clone (the rest of the
    // chain is read by the chain only).
    Operation *last = clones.back();
    for (auto [original, clone] :
         llvm::zip(choice->chain.back()->getResults(), last->getResults()))
      for (OpOperand &use : llvm::make_early_inc_range(original.getUses()))
        if (!isa<func::ReturnOp>(use.getOwner()) &&
            last->isBeforeInBlock(use.getOwner()))
          use.set(clone);
    before = clones.front();
  }
}

std::optional<IlpOutcome> Problem::run(int64_t target,
                                       const IlpLimits &limits) {
  auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                         start)
        .count();
  };
  IlpOutcome outcome;
  int64_t before = *std::max_element(liveBytes.begin(), liveBytes.end());
  if (choices.empty() || (target > 0 && before <= target)) {
    outcome.modelPeak = before;
    outcome.optimal = true;
    outcome.seconds = elapsed();
    return outcome;
  }
  std::optional<Solution> solution;
  if (target > 0)
    solution = solve(target * kBytes, limits);
  if (solution)
    outcome.nodes += solution->nodes;
  bool optimal = true;
  if (!solution) {
    // The target cannot be met (or no solution was found within the
    // limits): the lowest peak, then the fewest flops there, each solve
    // with limits of its own; none after one that ran out of time (a
    // RegNetY-400MF program does not finish its root node in 30 s).
    if (outOfTime)
      return std::nullopt;
    std::optional<Solution> lowest = solve(-1, limits);
    if (!lowest)
      return std::nullopt;
    optimal = lowest->optimal;
    outcome.nodes += lowest->nodes;
    double peak = modelPeak(lowest->values) * kBytes;
    if (!outOfTime)
      solution = solve(peak + 1e-6, limits);
    if (solution)
      outcome.nodes += solution->nodes;
    else
      solution = lowest;
  }
  outcome.modelPeak = static_cast<int64_t>(modelPeak(solution->values));
  outcome.optimal = optimal && solution->optimal;
  for (int column = 0; column < static_cast<int>(choices.size()); ++column)
    if (solution->values[column] > 0.5) {
      outcome.flops += choices[column].flops;
      outcome.recomputedOps += choices[column].chain.size();
    }
  apply(solution->values);
  outcome.seconds = elapsed();
  return outcome;
}

} // namespace

std::optional<IlpOutcome> rematByIlp(func::FuncOp function, int64_t target,
                                     const IlpLimits &limits, bool &timedOut) {
  Problem problem(function);
  std::optional<IlpOutcome> outcome = problem.run(target, limits);
  timedOut = problem.ranOutOfTime();
  return outcome;
}

} // namespace trainc::graph::remat
