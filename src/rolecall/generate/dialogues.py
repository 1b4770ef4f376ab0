"""One-shot dialogue generation (NAACL 2022, section 3.1).

Prompt = the role spec's outline + one example dialogue, sampled per generation; the LM
writes a whole new dialogue, both roles. Defaults follow the paper: temperature 0.5,
top-p 0.8. Generation ``i`` always uses the same example and seed (both derived from the
run's seed and ``i``), so a resumed run asks for exactly the calls a fresh run would, and
the cache answers the finished ones.

Parsing is forgiving where the meaning is clear and strict where it is not: speaker tags in
Korean or English, continuation lines joined to the turn above, stray text before the first
tag ignored; a generation that never reaches the end marker, repeats itself, or is too short
becomes a ``Rejected`` record with the reason, never a crash. So does a **near copy** of
its one-shot example (``near_copy``): a small model often writes the example out again,
which adds no dialogue and duplicates the example's turns in the training data; the limit
(``max_copy``, the share of the dialogue's character 4-grams found in its example) was set
where two different written dialogues never reach (docs/dialogues.md).
"""

from __future__ import annotations

import random
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from rolecall.engines import Engine
from rolecall.jsonl import ResumableJsonl
from rolecall.llm import Request, SamplingParams
from rolecall.llm.batch import complete_records_with_model
from rolecall.prompts import Template, load_template
from rolecall.records import Dialogue, Rejected, RoleSpec, Turn
from rolecall.rundir import Files

SPEAKERS = {
    "system": ("시스템", "상담원", "챗봇", "AI", "System", "Bot", "Assistant", "Agent"),
    "user": ("사용자", "어르신", "할머니", "할아버지", "User", "Human", "Senior", "Customer"),
}
_TAG = re.compile(
    r"^\s*(?:\*\*)?(?P<tag>%s)(?:\*\*)?\s*[:：]\s*(?P<text>.*)$"
    % "|".join(
        re.escape(t) for tags in SPEAKERS.values() for t in sorted(tags, key=len, reverse=True)
    )
)
_ROLE_OF = {tag: role for role, tags in SPEAKERS.items() for tag in tags}
END_MARKERS = ("[대화 끝]", "[dialogue end]", "[대화 시작]", "[dialogue start]")
FIRST_TAG = {"ko": "시스템:", "en": "System:"}
MAX_COPY = 0.5  # of a dialogue's character 4-grams, the most its example may hold
COPY_GRAMS = 4


@dataclass(frozen=True)
class GenerationConfig:
    count: int = 10
    temperature: float = 0.5
    top_p: float = 0.8
    frequency_penalty: float = 0.0
    presence_penalty: float = 0.0
    max_tokens: int = 768
    seed: int = 0
    min_turns: int = 6
    require_end: bool = True
    language: str = "ko"
    template: str = "dialogue_generate"
    max_copy: float | None = MAX_COPY  # None: a near copy of the example is kept


def parse_dialogue(
    raw: str, dialogue_id: str, min_turns: int = 6, require_end: bool = True
) -> Dialogue | Rejected:
    """Turn the LM's text (starting at the first speaker tag) into a ``Dialogue``."""
    body, ended = _cut_at_end(raw)
    turns = _turns(body)
    reason = None
    if not ended:
        # a loop is the likelier cause of a missing end, so name it when there is one
        reason = _repetition(turns) or (
            "never ended: no end marker before the token limit" if require_end else None
        )
        turns = turns[:-1]  # the token limit cut the last turn off mid-way
    reason = reason or _problem(turns, min_turns)
    if reason:
        return Rejected(id=dialogue_id, reason=reason, raw=raw)
    return Dialogue(id=dialogue_id, turns=turns)


def _turns(body: str) -> list[Turn]:
    turns: list[Turn] = []
    for line in body.splitlines():
        match = _TAG.match(line)
        if match:
            role = _ROLE_OF[match.group("tag")]
            text = match.group("text").strip()
            if turns and turns[-1].role == role:  # one speaker split over two tags
                turns[-1] = Turn(role=role, text=f"{turns[-1].text} {text}".strip())
            else:
                turns.append(Turn(role=role, text=text))
        elif turns and line.strip():  # a continuation line of the turn above
            turns[-1] = Turn(role=turns[-1].role, text=f"{turns[-1].text} {line.strip()}")
    return [t for t in turns if t.text]


def _cut_at_end(raw: str) -> tuple[str, bool]:
    hits = [raw.find(m) for m in END_MARKERS if m in raw]
    return (raw[: min(hits)], True) if hits else (raw, False)


def _problem(turns: list[Turn], min_turns: int) -> str | None:
    if len(turns) < min_turns:
        return f"too short: {len(turns)} turns (minimum {min_turns})"
    if turns[0].role != "system":
        return "the dialogue does not start with the system"
    if not any(t.role == "user" for t in turns):
        return "no user turn"
    return _repetition(turns)


def _repetition(turns: list[Turn]) -> str | None:
    counts = Counter(t.text for t in turns)
    if counts:
        text, times = counts.most_common(1)[0]
        if times >= 3:
            return f"runaway repetition: the same turn {times} times ({text[:40]!r})"
    return None


def _grams(turns: Sequence[Turn]) -> set[str]:
    text = "".join("".join(t.text.split()) for t in turns)
    return {text[i : i + COPY_GRAMS] for i in range(len(text) - COPY_GRAMS + 1)}


def copied_share(dialogue: Dialogue, example: Dialogue) -> float:
    """The share of ``dialogue``'s character 4-grams (spaces removed) found in
    ``example``: 1.0 for a copy, near 0 for a dialogue of its own."""
    grams = _grams(dialogue.turns)
    return len(grams & _grams(example.turns)) / len(grams) if grams else 0.0


def near_copy(dialogue: Dialogue, example: Dialogue, limit: float | None) -> str | None:
    """The reason to reject ``dialogue`` as a near copy of its example, or None."""
    if limit is None:
        return None
    share = copied_share(dialogue, example)
    if share <= limit:
        return None
    return (f"a near copy of its example {example.id}: {share:.0%} of its character "
            f"4-grams are the example's (limit {limit:.0%}; --max-copy)")  # fmt: skip


def build_requests(
    spec: RoleSpec, examples: Sequence[Dialogue], config: GenerationConfig, template: Template
) -> list[tuple[str, Request, str]]:
    """(generation id, request, example id) for every generation of the run."""
    if not examples:
        raise ValueError("one-shot generation needs at least one example dialogue")
    params = SamplingParams(
        temperature=config.temperature,
        top_p=config.top_p,
        frequency_penalty=config.frequency_penalty,
        presence_penalty=config.presence_penalty,
        max_tokens=config.max_tokens,
        seed=config.seed,
        stop=(END_MARKERS[0] if config.language == "ko" else END_MARKERS[1],),
    )
    out = []
    for i in range(config.count):
        example = random.Random(f"{config.seed}:{i}").choice(list(examples))
        prompt = template.render(outline=spec.outline.strip(), example=example)
        params_i = params.model_copy(update={"seed": config.seed + i})
        out.append((f"gen-{i:05d}", Request(prompt=prompt, params=params_i), example.id))
    return out


def generate_dialogues(
    engine: Engine,
    spec: RoleSpec,
    examples: Sequence[Dialogue],
    config: GenerationConfig,
    out_dir: Path,
) -> dict[str, int]:
    """Write ``dialogues.jsonl`` and ``rejected.jsonl`` in ``out_dir``; resumable.

    ``complete_records_with_model`` runs over ``{"id": generation id, "request"}`` records
    on ``engine`` (``rolecall.engines``: locally each dialogue is written as its call
    finishes, on Ray as its batch comes back)."""
    template = load_template(config.template, config.language)
    plan = build_requests(spec, examples, config, template)
    example_of = {e.id: e for e in examples}
    first_tag = FIRST_TAG.get(config.language, FIRST_TAG["ko"])
    with (
        ResumableJsonl(out_dir / Files.DIALOGUES, key=lambda r: r["id"]) as accepted,
        ResumableJsonl(out_dir / Files.REJECTED_DIALOGUES, key=lambda r: r["id"]) as rejected,
    ):
        todo = [p for p in plan if p[0] not in accepted.done | rejected.done]

        def write(planned: tuple[str, Request, str], text: str, finish: str, model: str):
            gen_id, request, example_id = planned
            meta = {
                "example_id": example_id,
                "seed": request.params.seed,
                "prompt_hash": template.hash,
                "model": model,
            }
            # the stop string ate the end marker: a "stop" finish means the dialogue ended
            ended = finish == "stop"
            raw = first_tag + text
            parsed = parse_dialogue(
                raw + ("\n" + END_MARKERS[0] if ended else ""),
                gen_id,
                config.min_turns,
                config.require_end,
            )
            if isinstance(parsed, Dialogue):
                copied = near_copy(parsed, example_of[example_id], config.max_copy)
                if copied is not None:
                    parsed = Rejected(id=gen_id, reason=copied, raw=raw)
            if isinstance(parsed, Dialogue):
                accepted.append(parsed.model_copy(update={"metadata": meta}))
            else:
                rejected.append(parsed.model_copy(update={"metadata": meta, "raw": raw}))

        by_id = {p[0]: p for p in todo}
        records = [{"id": p[0], "request": p[1].model_dump(mode="json")} for p in todo]

        def on_row(row: dict) -> None:
            if "error" not in row:  # a failure: in the engine's stats, asked again next run
                write(by_id[row["id"]], row["text"], row["finish_reason"], row["model"])

        params = {"description": "generating dialogues"}
        engine.run(complete_records_with_model, records, params, on_row)
        stats = engine.stats
        return {
            "generations": len(plan),
            "accepted": len(accepted.records),
            "rejected": len(rejected.records),
            "failed": stats.failures,
        }
