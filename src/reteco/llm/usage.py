"""What LLM calls cost: the tokens each call used (as the server reported them) and their price.

Every response stored in the cache carries the ``usage`` the server reported: prompt tokens, the
part of them the server had cached (``usage.prompt_tokens_details.cached_tokens``: OpenAI's
automatic prompt caching, llama-server's and vLLM's prefix caches) and completion tokens
(``call_usage``). The cache keeps them in columns of its ``calls`` table; calls stored by an
older reteco have NULL there and count as "not recorded", never as zero.

``TokenUsage`` adds calls up (per judgment, submission, team, phase). ``Prices`` come from the
judge config (``price_per_million: {input, cached_input, output}`` in dollars per million
tokens, and ``batch_price_factor``, the Batch API's discount: 0.5 at OpenAI); without prices
there is no money figure, never a made-up one. Money = (prompt - cached) x input + cached x
cached_input + completion x output, each call answered through a batch multiplied by the factor.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import astuple, dataclass
from typing import Any

#: The keys of ``price_per_million`` in a config file.
PRICE_KEYS = ("input", "cached_input", "output")
NOT_RECORDED = "not recorded"


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def call_usage(completion: Mapping[str, Any] | None) -> tuple[int, int, int] | None:
    """(prompt, cached prompt, completion) tokens from a chat completion's ``usage``, or None when
    the server reported none (or nonsense). A server that reports no cached tokens cached none."""
    usage = completion.get("usage") if isinstance(completion, Mapping) else None
    if not isinstance(usage, Mapping):
        return None
    prompt, completion_tokens = _count(usage.get("prompt_tokens")), _count(usage.get("completion_tokens"))
    if prompt is None or completion_tokens is None:
        return None
    details = usage.get("prompt_tokens_details")
    cached = _count(details.get("cached_tokens")) if isinstance(details, Mapping) else None
    return prompt, min(cached or 0, prompt), completion_tokens


@dataclass(frozen=True)
class TokenUsage:
    """Calls and their tokens, added up. ``not_recorded``: calls whose usage is unknown (stored by
    an older reteco, or the server reported none): their tokens are in none of the sums.
    ``batch_*``: the part of the sums answered through the Batch API (priced at the factor)."""

    calls: int = 0
    prompt_tokens: int = 0
    cached_tokens: int = 0
    completion_tokens: int = 0
    not_recorded: int = 0
    batch_prompt_tokens: int = 0
    batch_cached_tokens: int = 0
    batch_completion_tokens: int = 0

    @classmethod
    def of_call(cls, usage: tuple[int | None, int | None, int | None] | None, *, batch: bool = False) -> TokenUsage:
        """One call's usage: (prompt, cached, completion) as stored (None or NULLs: not recorded)."""
        if usage is None or usage[0] is None or usage[2] is None:
            return cls(calls=1, not_recorded=1)
        prompt, cached, completion = usage[0], usage[1] or 0, usage[2]
        if batch:
            return cls(1, prompt, cached, completion, 0, prompt, cached, completion)
        return cls(1, prompt, cached, completion)

    def __add__(self, other: TokenUsage) -> TokenUsage:
        return TokenUsage(*(a + b for a, b in zip(astuple(self), astuple(other))))

    def as_dict(self, prices: Prices | None = None) -> dict[str, Any]:
        """The figures as JSON-ready values; ``money_usd`` only with prices (None: no price known)."""
        out: dict[str, Any] = {
            "calls": self.calls, "prompt_tokens": self.prompt_tokens, "cached_tokens": self.cached_tokens,
            "completion_tokens": self.completion_tokens, "calls_usage_not_recorded": self.not_recorded,
        }
        out["money_usd"] = None if prices is None else round(prices.money(self), 6)
        return out


def total(usages: Iterable[TokenUsage]) -> TokenUsage:
    """The sum of ``usages``."""
    out = TokenUsage()
    for u in usages:
        out = out + u
    return out


@dataclass(frozen=True)
class Prices:
    """Dollars per million tokens, and the Batch API's factor on them."""

    input: float
    cached_input: float
    output: float
    batch_factor: float = 0.5

    def money(self, usage: TokenUsage) -> float:
        """What ``usage`` costs in dollars (module docstring); calls not recorded count nothing."""
        def cost(prompt: int, cached: int, completion: int) -> float:
            return ((prompt - cached) * self.input + cached * self.cached_input + completion * self.output) / 1e6

        live = cost(usage.prompt_tokens - usage.batch_prompt_tokens, usage.cached_tokens - usage.batch_cached_tokens,
                    usage.completion_tokens - usage.batch_completion_tokens)
        return live + self.batch_factor * cost(usage.batch_prompt_tokens, usage.batch_cached_tokens,
                                               usage.batch_completion_tokens)


def prices_problems(price_per_million: Any, batch_price_factor: Any) -> list[str]:
    """What is wrong with a config's prices (empty when usable or absent)."""
    problems = []
    if price_per_million is not None:
        if not isinstance(price_per_million, Mapping) or set(price_per_million) != set(PRICE_KEYS) or not all(
                isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0 for v in price_per_million.values()):
            problems.append("price_per_million must map each of input, cached_input, output to a number >= 0 "
                            "(dollars per million tokens), or be null")
    if isinstance(batch_price_factor, bool) or not isinstance(batch_price_factor, (int, float)) or not (
            0 <= batch_price_factor <= 1):
        problems.append("batch_price_factor must be a number within 0..1")
    return problems


def prices_of(price_per_million: Mapping[str, float] | None, batch_price_factor: float) -> Prices | None:
    """The config's prices, or None when it names none (then reports give tokens only)."""
    if not price_per_million:
        return None
    return Prices(float(price_per_million["input"]), float(price_per_million["cached_input"]),
                  float(price_per_million["output"]), float(batch_price_factor))


def this_run_line(requests: int, usage: Mapping[str, Any] | None) -> str:
    """What a command's run paid, from the server's usage of the requests it sent (``usage``: a
    ``TokenUsage.as_dict``, or a sum of them; None: nothing answered):
    "this run: N requests, T tokens (cached C), $X". Requests count every HTTP request sent
    (preflight, retries and re-asks included); tokens (prompt plus completion) and money only the
    answered ones, as the server reported them. A run answered from the cache sent nothing: 0
    requests and $0.00."""
    usage = usage or {}
    tokens = (usage.get("prompt_tokens") or 0) + (usage.get("completion_tokens") or 0)
    money = usage.get("money_usd")
    paid = (f"${money:,.2f} at the judge config's prices" if money is not None
            else "$0.00" if not requests else "no prices in the judge config")
    missing = usage.get("calls_usage_not_recorded") or 0
    unreported = f"; {missing:,} answers without usage" if missing else ""
    return (f"this run: {requests:,} requests, {tokens:,} tokens (cached {usage.get('cached_tokens') or 0:,}), "
            f"{paid}{unreported}")
