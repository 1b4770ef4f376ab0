"""Eight care-call topics with the system's answer to each (``TOPICS``), and retrieval
pairs made of them: three user lines a topic, each with its answer (``PAIRS``)."""

from __future__ import annotations

from rolecall.records import Turn
from rolecall.train.data import context_text

TOPICS = [
    ("날씨", "오늘 날씨가 맑아요"),
    ("식사", "점심은 드셨어요"),
    ("산책", "산책 다녀오세요"),
    ("잠", "푹 주무셨나요"),
    ("약", "약은 챙겨 드셨어요"),
    ("병원", "병원 예약 하셨어요"),
    ("가족", "가족분들 잘 지내시죠"),
    ("운동", "운동 조금 하셨어요"),
]
PAIRS = [
    (context_text([Turn(role="user", text=f"{topic} 이야기 {n}")]), answer)
    for n in range(3)
    for topic, answer in TOPICS
]
