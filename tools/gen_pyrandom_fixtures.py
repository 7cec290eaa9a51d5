#!/usr/bin/python3
"""Generate tests/fixtures/pyrandom/pyrandom.json.

The fixture records what CPython's own `random` module produces for a set of
seeds, so that tinylm's Python-compatible RNG (MT19937 seeded via
init_by_array, random(), gauss() with its cached second value,
getrandbits(k <= 32), _randbelow(n), shuffle, choices with weights) can be
compared against it value for value.

Floats are stored as repr() strings so they round-trip exactly; ints are JSON
numbers.  Every list is drawn from a fresh random.Random(seed) instance,
except "mixed", which interleaves ~200 calls after a single seeding.

Usage (from the repository root):
    /usr/bin/python3 tools/gen_pyrandom_fixtures.py [--out PATH]
"""

import argparse
import json
import math
import random
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO_ROOT / "tests" / "fixtures" / "pyrandom" / "pyrandom.json"

SEEDS = [0, 1, 42, 12345, 4294967296 + 7, 1099511627779, 18446744073709551615]
COUNT = 64
GETRANDBITS_K = [1, 2, 5, 8, 17, 31, 32]
RANDBELOW_N = [1, 2, 3, 27, 1000, 32033, 2147483653]
GAUSS_MU = 0.0
GAUSS_SIGMA = 0.08
GAUSS_COUNT = 65  # odd on purpose: the last value leaves a cached second value unused
SHUFFLE_N = 100
NUM_CHOICES = 27
MIXED_CALLS = 200
MIXED_SHUFFLE_N = 10
MIXED_GETRANDBITS_K = 7
MIXED_RANDBELOW_N = 1000

# Fixed (not rng-driven) pattern for the "mixed" section.  Its length (13) is
# odd and gauss appears at positions that make the cached second gauss value
# survive across random/getrandbits/randbelow/choices/shuffle calls.
MIXED_PATTERN = [
    "gauss", "random", "gauss", "gauss", "getrandbits", "gauss",
    "randbelow", "choices", "gauss", "shuffle", "random", "gauss",
    "choices",
]


def make_weights():
    """Softmax-like positive weights over 27 classes, computed without the rng.

    One weight is exactly zero (that class must never be drawn)."""
    logits = [2.0 * math.sin(0.7 * i + 0.3) + 0.5 * math.cos(1.3 * i) for i in range(NUM_CHOICES)]
    mx = max(logits)
    exps = [math.exp(l - mx) for l in logits]
    total = sum(exps)
    weights = [e / total for e in exps]
    weights[5] = 0.0
    return weights


def fresh(seed):
    return random.Random(seed)


def gen_case(seed, weights):
    case = {"seed": seed}

    rng = fresh(seed)
    case["random"] = [repr(rng.random()) for _ in range(COUNT)]

    case["getrandbits"] = []
    for k in GETRANDBITS_K:
        rng = fresh(seed)
        case["getrandbits"].append({"k": k, "values": [rng.getrandbits(k) for _ in range(COUNT)]})

    case["randbelow"] = []
    for n in RANDBELOW_N:
        rng = fresh(seed)
        case["randbelow"].append({"n": n, "values": [rng._randbelow(n) for _ in range(COUNT)]})

    rng = fresh(seed)
    case["gauss"] = {
        "mu": repr(GAUSS_MU),
        "sigma": repr(GAUSS_SIGMA),
        "values": [repr(rng.gauss(GAUSS_MU, GAUSS_SIGMA)) for _ in range(GAUSS_COUNT)],
    }

    rng = fresh(seed)
    lst = list(range(SHUFFLE_N))
    rng.shuffle(lst)
    case["shuffle"] = {"n": SHUFFLE_N, "result": lst}

    rng = fresh(seed)
    population = range(NUM_CHOICES)
    case["choices"] = {
        "weights": [repr(w) for w in weights],
        "values": [rng.choices(population, weights=weights)[0] for _ in range(COUNT)],
    }

    rng = fresh(seed)
    mixed = []
    for i in range(MIXED_CALLS):
        op = MIXED_PATTERN[i % len(MIXED_PATTERN)]
        if op == "random":
            mixed.append(["random", repr(rng.random())])
        elif op == "gauss":
            mixed.append(["gauss", repr(rng.gauss(GAUSS_MU, GAUSS_SIGMA))])
        elif op == "getrandbits":
            mixed.append(["getrandbits", MIXED_GETRANDBITS_K, rng.getrandbits(MIXED_GETRANDBITS_K)])
        elif op == "randbelow":
            mixed.append(["randbelow", MIXED_RANDBELOW_N, rng._randbelow(MIXED_RANDBELOW_N)])
        elif op == "choices":
            mixed.append(["choices", rng.choices(population, weights=weights)[0]])
        elif op == "shuffle":
            lst = list(range(MIXED_SHUFFLE_N))
            rng.shuffle(lst)
            mixed.append(["shuffle", lst])
        else:
            raise AssertionError(op)
    case["mixed"] = mixed
    return case


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=str(DEFAULT_OUT), help="output JSON path")
    args = ap.parse_args()

    weights = make_weights()
    assert weights[5] == 0.0 and all(w >= 0.0 for w in weights)
    cases = [gen_case(seed, weights) for seed in SEEDS]

    def dump(obj):
        return json.dumps(obj, separators=(",", ":"))

    # Compact JSON, one case per line.
    lines = ["{" + dump("generator") + ":" + dump("tools/gen_pyrandom_fixtures.py") + ","
             + dump("python") + ":" + dump(sys.version.split()[0]) + ","
             + dump("cases") + ":["]
    for i, case in enumerate(cases):
        lines.append(dump(case) + ("," if i + 1 < len(cases) else ""))
    lines.append("]}")
    text = "\n".join(lines) + "\n"

    # Sanity: the output must parse back to the same structure.
    parsed = json.loads(text)
    assert parsed["cases"] == cases

    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    print(f"wrote {out} ({len(text.encode())} bytes, {len(cases)} cases, python {sys.version.split()[0]})")


if __name__ == "__main__":
    main()
