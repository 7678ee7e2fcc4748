"""`knowl eval` as text: one line per question, then the summary; from its JSON answer.

Queries and page names come from the eval file (a pull request): every one passes `printable`.
"""

from __future__ import annotations

from typing import Any, TextIO

from knowl_build.output.text import printable

_MARK = {"pass": "PASS", "fail": "FAIL", "known": "KNOWN"}


def render(answer: dict[str, Any], out: TextIO, *, quiet: int = 0) -> None:
    file = answer["file"]
    for q in answer["questions"]:
        if quiet and q["status"] == "pass":
            continue
        rank = "-" if q["rank"] is None else str(q["rank"])
        who = f" as {q['user']}" if q["user"] else ""
        line = (
            f"{_MARK[q['status']]:5} {file}:{q['line']}:{q['column']}: {q['query']!r}{who}: "
            f"rank {rank} (k={q['k']}), recall@k {q['recall_at_k']:.2f}, "
            f"RR {q['reciprocal_rank']:.2f}, nDCG@10 {q['ndcg_at_10']:.2f}"
        )
        out.write(printable(line) + "\n")
        if q["status"] != "pass":
            for item in q["ranks"]:
                where = "not in the top 100" if item["rank"] is None else f"rank {item['rank']}"
                if item["rank"] is not None and item["rank"] <= q["k"]:
                    continue
                out.write(printable(f"      expected {item['page']}: {where}") + "\n")
            for item in q["missing"]:
                out.write(printable(f"      {item['reason']}") + "\n")
            if q["top"]:
                out.write(printable(f"      top {q['k']}: {', '.join(q['top'])}") + "\n")
            if "baseline" in q:
                base = q["baseline"]
                was = "passed" if base["passed"] else "failed"
                rank = "-" if base["rank"] is None else str(base["rank"])
                out.write(printable(f"      at the baseline: {was} (rank {rank})") + "\n")
    s = answer["summary"]
    parts = [f"{s['passed']} passed", f"{s['failed']} failed"]
    if s["known"]:
        parts.append(f"{s['known']} failing at the baseline too")
    mrr = f"MRR@10 {s['mrr_at_10']:.3f}"
    if s["min_mrr"]:
        mrr += f" ({'below' if s['mrr_at_10'] < s['min_mrr'] else 'at least'} min_mrr {s['min_mrr']:g})"
    base = answer["baseline"]
    if base is not None:
        mrr += f"; {printable(base['ref'])} {base['commit'][:12]}: MRR@10 {base['mrr_at_10']:.3f}"
    out.write(
        f"{s['questions']} questions: {', '.join(parts)}; {mrr}, recall@k "
        f"{s['recall_at_k']:.3f}, nDCG@10 {s['ndcg_at_10']:.3f}\n"
    )
