"""Four neutral sentences, each with a toxic rewrite (``PAIRS``): what the tiny detox model
learns in the detox model, adapter and CLI tests."""

from __future__ import annotations

from rolecall.records import Pair

PAIRS = [
    Pair(neutral=n, toxic=t)
    for n, t in [
        ("회의가 취소되었습니다", "회의 취소라네 높으신 분들 또 땡땡이"),
        ("주말에 비가 온대요", "주말에 비 온다네 방구석 여포들 좋겠다"),
        ("도시락이 부실했어요", "도시락이 완전 쓰레기급이던데"),
        ("가격이 올랐네요", "가격 또 올렸네 호구들 지갑 털리는 중"),
    ]
]
