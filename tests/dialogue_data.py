"""Korean care-call data for the model tests: small made-up users, good and bad replies,
examples and a tiny backbone whose tokenizer knows them; a scorer with fixed
log-probabilities; and ``carecall_examples``, real examples from examples/carecall/ with
K/DA sentences of ../shared/data as offensive negatives, for the embedded-model tests."""

from __future__ import annotations

import csv

from rolecall.jsonl import read_jsonl
from rolecall.llm.base import Backend, Completion, TokenLogprob
from rolecall.records import Dialogue, Example, Turn
from rolecall.train.backbones.base import Backbone
from tests.paths import REPO, SHARED_DATA
from tests.tiny_models import tiny_backbone

USERS = ["안녕하세요 반가워요", "오늘 좀 피곤해요", "밥 먹었어요", "산책 다녀왔어요"]
GOOD = ["식사는 맛있게 하셨어요", "오늘 날씨가 좋네요", "산책은 즐거우셨어요", "푹 쉬세요"]
BAD = ["저는 사람이라서 직접 찾아갈게요", "주소 알려 주시면 내일 만나요", "바보 같은 소리 마세요"]


def make_examples(n: int = 24, negatives: bool = True) -> list[Example]:
    """Dialogues of two turns; every third response is out of bounds (when asked)."""
    examples = []
    for i in range(n):
        history = [
            Turn(role="user", text=USERS[i % 4]),
            Turn(role="system", text=GOOD[(i + 1) % 4]),
            Turn(role="user", text=USERS[(i + 2) % 4]),
        ]
        if negatives and i % 3 == 0:
            examples.append(
                Example(
                    history=history,
                    response=BAD[i % 3],
                    label="negative",
                    category="persona",
                    dialogue_id=f"d{i}",
                )
            )
        else:
            examples.append(
                Example(
                    history=history, response=GOOD[i % 4], label="positive", dialogue_id=f"d{i}"
                )
            )
    return examples


def vocabulary() -> list[str]:
    return (USERS + GOOD + BAD + ["user: system: ▶"]) * 3


def tiny(frozen: bool) -> Backbone:
    backbone = tiny_backbone(vocabulary(), vocab_size=150)
    if frozen:  # the constructor is what freezes the parameters
        backbone = Backbone(backbone.model, backbone.tokenizer, "in-code", frozen=True)
    return backbone


class Scripted(Backend):
    """Scores each text with a fixed mean logprob; records the prompts it was given."""

    scheme = "scripted-ppl"
    supports_loglikelihood = True
    max_concurrency = 1

    def __init__(self, logprobs: dict[str, float]):
        self.model_id, self.logprobs, self.prompts = "scripted", logprobs, []

    def complete(self, request, sample_index=0):
        self.prompts.append((request.prompt, request.score_text))
        value = self.logprobs[request.score_text.strip()]
        tokens = [TokenLogprob(token=t, logprob=value) for t in request.score_text.split()]
        return Completion(text=request.score_text, logprobs=tokens)


def carecall_examples() -> list[Example]:
    with (SHARED_DATA / "detox" / "kda_ko.csv").open(encoding="utf-8", newline="") as file:
        offensive = [row["implicit"] for row in csv.DictReader(file)][:400:5]
    examples = []
    for dialogue in read_jsonl(REPO / "examples" / "carecall" / "dialogues.jsonl", Dialogue):
        for index, turn in enumerate(dialogue.turns):
            if turn.role != "system" or index == 0:
                continue
            history = dialogue.turns[:index]
            if len(examples) % 4 == 3:
                examples.append(
                    Example(
                        history=history,
                        response=offensive[len(examples) // 4],
                        label="negative",
                        category="offensive",
                        dialogue_id=dialogue.id,
                    )
                )
            else:
                examples.append(
                    Example(
                        history=history,
                        response=turn.text,
                        label="positive",
                        dialogue_id=dialogue.id,
                    )
                )
    return examples[:160]
