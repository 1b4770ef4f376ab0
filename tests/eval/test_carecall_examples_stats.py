"""Stats of examples/carecall/ against counts checked by hand with coreutils.

The numbers were checked outside rolecall: the turn texts written one per line, then
``wc -lw`` (527 turns, 4,145 words), ``tr -s ' \\n' '\\n\\n' | sort -u`` (2,177 unique
words) and ``awk '{for(i=1;i<NF;i++) print $i" "$(i+1)}' | sort -u`` (3,224 unique bigrams
out of 3,618). Change them only together with the dialogues.
"""

import pytest

from rolecall.eval.stats import dialogue_stats
from rolecall.jsonl import read_jsonl
from rolecall.records import Dialogue
from tests.paths import REPO


def test_example_dialogue_stats_match_the_hand_checked_counts():
    dialogues = list(read_jsonl(REPO / "examples" / "carecall" / "dialogues.jsonl", Dialogue))
    stats = dialogue_stats(dialogues, unit="eojeol")
    assert stats["dialogues"] == 39 and stats["turns"] == 527
    assert stats["avg_turns_per_dialogue"] == pytest.approx(527 / 39)
    assert stats["unique_system_turns"] == 283
    assert stats["words"] == 4145 and stats["unique_words"] == 2177
    assert stats["unique_bigrams"] == 3224
    assert stats["distinct_1"] == pytest.approx(2177 / 4145)
    assert stats["distinct_2"] == pytest.approx(3224 / 3618)
    assert stats["positive_examples"] == stats["negative_examples"] == 0  # not judged
    topics = {d.metadata["topic"] for d in dialogues}
    assert len(topics) >= 25
    assert all(10 <= len(d.turns) <= 16 for d in dialogues)
