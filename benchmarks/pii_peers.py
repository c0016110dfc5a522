"""The peers of ``bench_pii.py``, run by their own interpreters (never the project's environment):

    bench-out/dt-venv/bin/python benchmarks/pii_peers.py datatrove IN.jsonl OUT.jsonl REPEATS
    bench-out/presidio-venv/bin/python benchmarks/pii_peers.py presidio IN.jsonl OUT.jsonl REPEATS

IN has one ``{"id", "text"}`` per line. OUT gets one line per document (datatrove: the formatted text;
presidio: ``[entity, span, score]`` triples) and a last line ``{"cpu_s": best of REPEATS}``: the CPU
time of one pass over all documents in this process (one core). Imports only the standard library and
the peer.
"""

from __future__ import annotations

import json
import sys
import time


def datatrove(texts: list[str]) -> tuple[list[object], object]:
    from datatrove.pipeline.formatters import PIIFormatter

    # Same placeholders as pii_v1; public IPs only, datatrove's default and pii_v1's.
    f = PIIFormatter(email_replacement="<EMAIL>", ip_replacement="<IP_ADDRESS>")
    return [f.format(t) for t in texts], lambda: [f.format(t) for t in texts]


def presidio(texts: list[str]) -> tuple[list[object], object]:
    from presidio_analyzer.predefined_recognizers import (
        CreditCardRecognizer,
        EmailRecognizer,
        IbanRecognizer,
        IpRecognizer,
        PhoneRecognizer,
        UsSsnRecognizer,
    )

    # Regex (and phonenumbers) recognisers only: no NLP model, so no context words raise scores.
    recs = [
        EmailRecognizer(),
        PhoneRecognizer(),
        IpRecognizer(),
        CreditCardRecognizer(),
        IbanRecognizer(),
        UsSsnRecognizer(),
    ]

    def one(t: str) -> list[list[object]]:
        out: list[list[object]] = []
        for r in recs:
            for res in r.analyze(t, r.supported_entities, None):
                out.append([res.entity_type, t[res.start : res.end], round(res.score, 3)])
        return out

    return [one(t) for t in texts], lambda: [one(t) for t in texts]


def main(argv: list[str]) -> int:
    peer, src, dst, repeats = argv[0], argv[1], argv[2], int(argv[3])
    with open(src) as f:
        texts = [json.loads(line)["text"] for line in f]
    results, again = {"datatrove": datatrove, "presidio": presidio}[peer](texts)
    best = float("inf")
    for _ in range(repeats):
        c0 = time.process_time()
        again()  # type: ignore[operator]
        best = min(best, time.process_time() - c0)
    with open(dst, "w") as f:
        for r in results:
            f.write(json.dumps(r) + "\n")
        f.write(json.dumps({"cpu_s": best}) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
