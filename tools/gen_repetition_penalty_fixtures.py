#!/usr/bin/python3
"""Generate tests/fixtures/logit_processors/repetition_penalty.json.

Replicates Hugging Face transformers' RepetitionPenaltyLogitsProcessor.__call__ (its
gather / where / scatter over float32 scores, as in transformers 4.x) with PyTorch, so that
tinylm's repetition penalty (src/tinylm/generate/logit_processors.h) can be compared with it
bit for bit. Each case: random float32 logits (both signs, a zero), the ids seen (prompt +
generated, repeats included), the penalty, and the processed logits. Floats are stored as
their float32 bit patterns (uint32), so they round-trip exactly.

Usage (from the repository root; Debian's python3-torch):
    /usr/bin/python3 tools/gen_repetition_penalty_fixtures.py [--out PATH]
"""

import argparse
import json
from pathlib import Path

import torch

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO_ROOT / "tests" / "fixtures" / "logit_processors" / "repetition_penalty.json"


def repetition_penalty(input_ids, scores, penalty):
    # transformers.generation.logits_process.RepetitionPenaltyLogitsProcessor.__call__
    score = torch.gather(scores, 1, input_ids)
    score = torch.where(score < 0, score * penalty, score / penalty)
    return scores.scatter(1, input_ids, score)


def bits(t):
    return [int(x) for x in t.contiguous().view(torch.int32).flatten().tolist()]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=str(DEFAULT_OUT))
    args = ap.parse_args()
    gen = torch.Generator().manual_seed(39)
    cases = []
    for vocab, seen, penalty in [(16, 6, 1.3), (64, 20, 0.7), (257, 50, 1.1), (1000, 300, 2.5),
                                 (50, 10, 1.0001)]:
        scores = (torch.randn(1, vocab, generator=gen) * 4).to(torch.float32)
        scores[0, 0] = 0.0
        ids = torch.randint(0, vocab, (1, seen), generator=gen)
        ids[0, 0] = 0
        out = repetition_penalty(ids, scores, penalty)
        cases.append({
            "penalty": penalty,
            "ids": ids.flatten().tolist(),
            "logits_bits": [x & 0xFFFFFFFF for x in bits(scores)],
            "expected_bits": [x & 0xFFFFFFFF for x in bits(out)],
        })
    Path(args.out).write_text(json.dumps({"torch": torch.__version__, "cases": cases}) + "\n")


if __name__ == "__main__":
    main()
