"""The human sample's planner (``reteco human-sample --plan``, issue 32 item 4).

From the phase's expected size (S systems, T turns), the judge-human disagreement seen so far
(``residual_sd``: the standard deviation of the human's minus the judge's score on the (s-1)/4
scale, per rated turn; ``leaderboard --human-ratings`` reports it per figure as ``residual_sd``)
and the judge's own spread over turns (``judge_sd``), it answers how many turns a **paired**
sample needs (every sampled turn rated for every system) so that a system's corrected 95%
interval is at most ``width`` wide, by the leaderboard's own formula
(``reteco.metrics.prediction_powered``; the covariance term left out):

    width(n) = 2 t_{n-1, 0.975} sqrt(residual_sd^2 / n + judge_sd^2 / T)

the smallest n >= MIN_RATED with width(n) <= width (none when even n = T cannot: the judge's own
sampling of turns is then the limit, and the plan says so). At that n it also gives the paired
difference's interval width, taking two systems' errors as independent (sd sqrt(2) residual_sd:
the conservative side, the paired design's positive correlation only narrows it), and the
smallest true difference that Holm's first step over the S(S-1)/2 pairs detects with 80% power,
(t_{n-1, 1 - alpha/(2m)} + t_{n-1, 0.8}) se. What it costs: items n S, ratings n S x dimensions x
annotators per item, annotator hours n S x annotators per item x minutes per item / 60, and the
pay at an hourly rate when given. Assumptions (printed): every system answers every sampled turn
(unanswered turns need no rating: fewer items), one annotator per item.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass

from reteco.metrics.label_agreement import Z_95
from reteco.metrics.prediction_powered import MIN_RATED, t_quantile
from reteco.problems import EXIT_OK, InputError, UsageError

DEFAULTS = {"residual_sd": 0.2, "judge_sd": 0.2, "width": 0.1, "dimensions": 5, "minutes_per_item": 3.0,
            "annotators_per_item": 1, "alpha": 0.05, "power": 0.8}


@dataclass(frozen=True)
class Plan:
    systems: int
    phase_turns: int
    residual_sd: float
    judge_sd: float
    target_width: float
    turns: int | None  # None: no n reaches the width
    reason: str | None
    system_width: float | None  # a system's interval width at that n
    difference_width: float | None
    detectable_difference: float | None
    items: int | None
    ratings: int | None
    annotator_hours: float | None
    cost: float | None


def _width(n: int, residual_sd: float, judge_sd: float, phase_turns: int) -> float:
    return 2 * t_quantile(n - 1) * math.sqrt(residual_sd ** 2 / n + judge_sd ** 2 / phase_turns)


def plan(systems: int, phase_turns: int, *, residual_sd: float = DEFAULTS["residual_sd"],
         judge_sd: float = DEFAULTS["judge_sd"], width: float = DEFAULTS["width"],
         dimensions: int = DEFAULTS["dimensions"], minutes_per_item: float = DEFAULTS["minutes_per_item"],
         annotators_per_item: int = DEFAULTS["annotators_per_item"], hourly_rate: float | None = None) -> Plan:
    """The plan (module docstring)."""
    if systems < 1 or phase_turns < MIN_RATED:
        raise ValueError(f"at least one system and {MIN_RATED} turns")
    for name, value in (("residual_sd", residual_sd), ("judge_sd", judge_sd), ("width", width),
                        ("minutes_per_item", minutes_per_item)):
        if not (math.isfinite(value) and value > 0):
            raise ValueError(f"{name} must be a positive number")
    n = MIN_RATED
    while n <= phase_turns and _width(n, residual_sd, judge_sd, phase_turns) > width:
        n = n + max(1, n // 8)  # geometric steps, then back down to the smallest
    if n > phase_turns:
        limit = 2 * Z_95 * judge_sd / math.sqrt(phase_turns)
        return Plan(systems, phase_turns, residual_sd, judge_sd, width, None,
                    f"no sample size reaches a width of {width:g}: even rating every turn leaves "
                    f"{_width(phase_turns, residual_sd, judge_sd, phase_turns):.4f} (the judge's sampling of {phase_turns} "
                    f"turns alone is {limit:.4f})", None, None, None, None, None, None, None)
    while n > MIN_RATED and _width(n - 1, residual_sd, judge_sd, phase_turns) <= width:
        n -= 1
    pairs = max(1, systems * (systems - 1) // 2)
    se_d = math.sqrt(2 * residual_sd ** 2 / n + 2 * judge_sd ** 2 / phase_turns)
    from scipy.stats import t

    critical = float(t.ppf(1 - DEFAULTS["alpha"] / (2 * pairs), n - 1)) + float(t.ppf(DEFAULTS["power"], n - 1))
    items = n * systems
    hours = items * annotators_per_item * minutes_per_item / 60
    return Plan(systems, phase_turns, residual_sd, judge_sd, width, n, None,
                _width(n, residual_sd, judge_sd, phase_turns), 2 * t_quantile(n - 1) * se_d, critical * se_d, items,
                items * dimensions * annotators_per_item, hours, None if hourly_rate is None else hours * hourly_rate)


def plan_text(p: Plan, hourly_rate: float | None) -> list[str]:
    """What the command prints."""
    head = (f"plan for {p.systems} systems x {p.phase_turns} turns, judge-human residual sd {p.residual_sd:g}, judge sd "
            f"{p.judge_sd:g}, target width {p.target_width:g} of a system's 95% interval (paired design)")
    if p.turns is None:
        return [head, f"  {p.reason}"]
    lines = [head,
             f"  turns to rate: {p.turns} (each for every system): {p.items} items, {p.ratings} ratings",
             f"  a system's interval: {p.system_width:.4f} wide; a paired difference's: {p.difference_width:.4f}; "
             f"smallest difference Holm over {p.systems * (p.systems - 1) // 2} pairs finds with 80% power: "
             f"{p.detectable_difference:.4f}",
             f"  annotator time: {p.annotator_hours:.1f} hours"
             + (f", {p.cost:.2f} at {hourly_rate:g} per hour" if p.cost is not None else "")]
    lines.append("  assumes every system answers every sampled turn and the residual sd given; the interval's own "
                 f"minimum is {MIN_RATED} rated turns per system")
    return lines


def residual_sd_of(board: dict, where: str) -> float:
    """The judge-human disagreement a corrected leaderboard saw: the root mean square of its
    systems' ``judge_mean`` ``residual_sd`` (InputError when it has none)."""
    block = board.get("human_corrected") if isinstance(board, dict) else None
    values = [s["figures"]["judge_mean"]["residual_sd"] for s in (block or {}).get("systems", [])
              if isinstance(((s.get("figures") or {}).get("judge_mean") or {}).get("residual_sd"), float)]
    if not values:
        raise InputError("no system of this leaderboard has a judge_mean residual_sd: give it `leaderboard "
                         "--human-ratings`'s leaderboard.json, or --residual-sd", where)
    return math.sqrt(sum(v * v for v in values) / len(values))


def plan_from_args(args) -> int:
    """``human-sample --plan`` (the command's options)."""
    if args.systems is None or args.phase_turns is None:
        raise UsageError("--plan needs --systems and --phase-turns (the phase's expected size)")
    if args.from_leaderboard is not None:
        if args.residual_sd is not None:
            raise UsageError("--from-leaderboard and --residual-sd both give the residual sd: give one")
        try:
            board = json.loads(args.from_leaderboard.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise InputError(f"cannot read it as JSON ({exc})", str(args.from_leaderboard)) from None
        args.residual_sd = residual_sd_of(board, str(args.from_leaderboard))
    options = {"residual_sd": args.residual_sd, "width": args.width, "dimensions": args.dimensions_rated,
               "minutes_per_item": args.minutes_per_item, "annotators_per_item": args.annotators_per_item}
    given = {k: v for k, v in options.items() if v is not None}
    try:
        result = plan(args.systems, args.phase_turns, hourly_rate=args.hourly_rate, **given)
    except ValueError as exc:
        raise UsageError(f"--plan: {exc}") from None
    for line in plan_text(result, args.hourly_rate):
        print(line)
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "plan.json").write_text(json.dumps(asdict(result), indent=2) + "\n", encoding="utf-8")
    return EXIT_OK
