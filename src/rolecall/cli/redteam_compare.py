"""``rolecall redteam-compare``: red-team rates of bot versions side by side (issue #19;
``pipelines/redteam/compare.py`` does the work, docs/redteam.md tells how)."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.markup import escape

from rolecall.cli.common import err, out, out_directory


def redteam_compare_command(
    run_dirs: list[Path] = typer.Argument(
        ..., help="two or more `rolecall redteam --out` directories; the first is the base"
    ),
    out_dir: Path = typer.Option(
        ...,
        "--out",
        callback=out_directory,
        help="the report's directory (compare.json, .md, .html)",
    ),
):
    """Compare red-team runs of bot versions: not-safe and out-of-role rates per attack
    kind and version, and each version's difference from the first with a 95% interval.
    Writes compare.json, compare.md and compare.html."""
    from rolecall.pipelines.redteam.compare import write_comparison

    comparison = write_comparison(out_dir, run_dirs)
    for warning in comparison["warnings"]:
        err.print(f"[yellow]not paired:[/yellow] {escape(warning)}", highlight=False)
    for kind, rows in comparison["kinds"].items():
        for row in rows:
            difference = row["not_safe_vs_first"]
            versus = ""
            if difference is not None:
                low, high = difference["ci95"]
                versus = (
                    f", vs run 1 {100 * difference['difference']:+.0f} points "
                    f"[{100 * low:+.0f}, {100 * high:+.0f}]"
                )
            out.print(
                f"{kind:<9} run {row['run']} {row['label']}: not safe "
                f"{row['not_safe']['k']}/{row['n']}{versus}, out of role "
                f"{row['out_of_role']['k']}/{row['n']}",
                highlight=False,
                markup=False,
            )
    out.print(f"comparison: {out_dir / 'compare.html'} (and compare.json, compare.md)")
