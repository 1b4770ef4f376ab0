"""A tiny shared-data folder for the trained-judge tests: the five corpora the K/DA judge
recipes read, in their real formats, with Korean sentences written for the tests."""

from __future__ import annotations

from pathlib import Path

TOPICS = ["날씨", "축구", "영화", "요리", "여행", "음악", "주식", "게임", "학교", "회사"]
SLURS = ["꼰대들이나", "틀딱들이나", "기레기들이나"]


def neutral(i: int) -> str:
    return f"{TOPICS[i % len(TOPICS)]} 얘기 {i}번째 글인데 다들 어떻게 생각하세요"


def implicit(i: int, k: int) -> str:
    return f"{SLURS[k % len(SLURS)]} 좋아할 {TOPICS[i % len(TOPICS)]} 얘기 {i}번째 글이네"


def write_data_dir(root: Path, sentences: int = 40) -> Path:
    """``root`` with detox/, slang/, lexicon/ and neutral/ as in ../shared/data."""
    for part in ("detox", "slang", "lexicon", "neutral"):
        (root / part).mkdir(parents=True, exist_ok=True)
    rows = ["neutral,implicit"]
    for i in range(sentences):
        rows += [f"{neutral(i)},{implicit(i, k)}" for k in range(1 + i % 2)]
    (root / "detox" / "kda_ko.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    curse = [f"시발 {TOPICS[i % 10]} 진짜 개새끼들 {i}|1" for i in range(sentences)]
    curse += [f"{TOPICS[i % 10]} 오늘 재밌었어요 {i}|0" for i in range(sentences)]
    (root / "slang" / "curse_detection.txt").write_text("\n".join(curse), encoding="utf-8")
    (root / "lexicon" / "korean_bad_words.txt").write_text("시발\n개새끼\nㅅ\n", encoding="utf-8")
    chatbot = ["Q,A,label"] + [
        f"{TOPICS[i % 10]} 좋아하세요 {i},네 정말 좋아해요 {i},0" for i in range(sentences)
    ]
    (root / "neutral" / "chatbot_data.csv").write_text("\n".join(chatbot), encoding="utf-8")
    korsts = ["genre\tfilename\tyear\tid\tscore\tsentence1\tsentence2"]
    for i in range(sentences):
        first = f"남자가 {TOPICS[i % 10]} 이야기를 하고 있다 {i}"
        same = f"한 남자가 {TOPICS[i % 10]} 얘기 중 {i}"
        korsts.append(f"main\tx\t2012\t{i:04d}\t4.5\t{first}\t{same}")
        korsts.append(f"main\tx\t2012\t{i:04d}\t1.0\t{first}\t여자가 춤을 춘다 {i}")
    (root / "neutral" / "korsts_train.tsv").write_text("\n".join(korsts), encoding="utf-8")
    return root


def vocabulary() -> list[str]:
    """Texts to train a tiny tokenizer on."""
    texts = [neutral(i) for i in range(40)] + [implicit(i, k) for i in range(40) for k in (0, 1, 2)]
    return texts + [f"시발 {t} 진짜 개새끼들 오늘 재밌었어요 좋아하세요" for t in TOPICS]
