"""Shared part of the same-run A/B scripts (ab_codec.py, ab_logstore.py):
run a baseline and a changed binary alternately (A B, B A, ...) and
summarise each measured quantity as the median of each binary and the
median [min-max] of the per-alternation ratios new/base. The machine's
speed drifts within a minute, so only ratios taken seconds apart are
compared."""
import statistics


def alternate(base, new, rounds, run):
    """Calls run(binary) for base and new, alternating which goes first, and
    returns {"base": [result, ...], "new": [result, ...]}; each result is a
    dict of quantity name -> value."""
    results = {"base": [], "new": []}
    for r in range(rounds):
        order = [("base", base), ("new", new)]
        if r % 2:
            order.reverse()
        for name, binary in order:
            results[name].append(run(binary))
    return results


def print_ratios(results, label, width, fmt="{:.2f}"):
    """Prints one row per quantity of the first base result: medians of each
    binary and median [min-max] of new/base over the alternations where both
    measured it."""
    print(f"{label:{width}s} {'base':>10s} {'new':>10s}  new/base median [min-max]")
    for key in results["base"][0]:
        pairs = [(b[key], n[key]) for b, n in zip(results["base"], results["new"]) if key in n]
        if not pairs:
            continue
        ratios = [n / b for b, n in pairs]
        base = statistics.median(b for b, _ in pairs)
        new = statistics.median(n for _, n in pairs)
        print(f"{key:{width}s} {fmt.format(base):>10s} {fmt.format(new):>10s}  "
              f"{statistics.median(ratios):.3f} [{min(ratios):.3f}-{max(ratios):.3f}]")
