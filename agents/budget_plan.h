// The plan of a search's budget: what proposal k of a search of `budget` calls is. A short
// opening (the first min(budget, kOpeningCalls) proposals) makes big changes first, as an
// annealer starts hot; past it, moves in a ruler sequence of sizes refine. The reasons and
// the measurements behind each number are in docs/notes/search-moves.md; docs/agents.md
// describes the search.
#pragma once

#include <cstdint>
#include <vector>

namespace goenv::agents::proposals {

// What a proposal is; each kind but kDecision is one move (agents/moves/move.h).
enum class Kind {
  kDecision,  // a whole decision from the policy: greedy (k = 0) or sampled (every 8th past the opening)
  kSmooth,    // every run of at most `size` units of the critical path between two runs of
              // one choice goes to that choice (placement)
  kJoin,      // the drawn unit's run on the critical path goes to its neighbours' choice (placement)
  kMove,      // `size` units move: one drawn unit, or a segment of the critical path around it
  kShift,     // one unit crosses a change of choice on the critical path: the candidate ranked `size` (placement)
  kOffload,   // the `size` units of the busiest choice with the most data slack go to the least busy (placement)
};
struct Plan {
  Kind kind;
  std::int64_t size;  // units moved (kMove, kOffload), the longest run smoothed (kSmooth), a shift's rank, else 0
};

// The search's opening and the most units one move takes.
inline constexpr std::int64_t kOpeningCalls = 32;
inline constexpr std::int64_t kMostMoved = 16;
// The opening's first moves smooth the critical path: runs of at most 1, 2, 4, 8 units.
inline constexpr std::int64_t kSmoothings = 4;

// The opening's load moves, at calls where the plan would otherwise sample a whole decision
// (k = 7, 15, 23, 31) or join (k = 11): offloads of 16, 8 and 4 units and the two
// best-ranked shifts, the two changes the opening's other moves do not make.
struct LoadMove {
  std::int64_t k;
  Kind kind;
  std::int64_t size;  // units offloaded, or the shift's rank
};
inline constexpr LoadMove kLoadMoves[] = {
    {7, Kind::kOffload, 16}, {11, Kind::kOffload, 8}, {15, Kind::kShift, 0}, {23, Kind::kOffload, 4}, {31, Kind::kShift, 1}};

// Past the opening, moves aim at the critical path's waits: a unit beside a wait weighs
// 1 + kWaitWeight x (that wait / the path's mean wait) in the draw (1 elsewhere on the
// path), and goes, kAcrossShare of the time, to the choice across its wait instead of one
// sampled from the policy.
inline constexpr double kWaitWeight = 8.0;
inline constexpr double kAcrossShare = 0.5;

// The number of units proposal k moves if it is a move (0 for the greedy decision and the
// samples; budget 0: no opening): 1, 2, 1, 4, 1, 2, 1, 8, ..., 16 (a ruler sequence: small
// moves most often), and in the opening (the first min(budget, kOpeningCalls) proposals)
// at least 16 x (1 - k / opening): big segments first.
std::int64_t units_moved(std::int64_t k, std::int64_t budget = 0);

// Proposal k of a search of `budget` calls (0: no opening): k = 0 and every 8th are
// decisions; in the opening, the first kSmoothings moves smooth runs of at most 1, 2, 4, 8
// units, kLoadMoves take their calls, and the other even-numbered moves are joins; every
// other proposal is a move of units_moved(k, budget) units.
Plan plan(std::int64_t k, std::int64_t budget = 0);

// plan() and units_moved() of one search, computed once when it starts: the opening's
// proposals are a table; past the opening a proposal's plan depends on k alone (the ruler
// sequence, a few integer operations), since a search draws again without spending a call
// where a proposal repeats the best decisions, and so has no last k to tabulate up to.
class BudgetPlan {
 public:
  explicit BudgetPlan(std::int64_t budget);
  // plan(k, budget).
  Plan at(std::int64_t k) const;
  // units_moved(k, budget): the size of the move a placement-only kind becomes without a placement head.
  std::int64_t moved_at(std::int64_t k) const;
  // Whether proposal k is one of the opening's (k < min(budget, kOpeningCalls)).
  bool in_opening(std::int64_t k) const { return k < opening(); }
  std::int64_t opening() const { return static_cast<std::int64_t>(opening_.size()); }

 private:
  struct Entry {
    Plan plan;
    std::int64_t moved;
  };
  std::vector<Entry> opening_;  // per proposal of the opening
};

}  // namespace goenv::agents::proposals
