"""A scripted backend for the dialogue pipeline tests: it writes one fixed dialogue and
judges by a rule. ``dialogue_script_plugin`` registers it in subprocesses."""

from __future__ import annotations

import threading
import time

from pydantic import BaseModel, ConfigDict

from rolecall.llm.base import Backend, Completion, TokenLogprob
from rolecall.llm.registry import BackendEntry

# what the model writes after "시스템:"; the third system turn breaks the persona ("저도")
DIALOGUE = (
    " 안녕하세요, 어르신. 오늘 기분은 어떠세요?\n사용자: 그냥 그래.\n"
    "시스템: 식사는 하셨어요?\n사용자: 응, 먹었어.\n"
    "시스템: 저도 방금 점심을 먹었어요.\n사용자: 그래?\n"
    "시스템: 건강 잘 챙기세요.\n사용자: 고마워.\n"
)


class Options(BaseModel):
    model_config = ConfigDict(extra="forbid")
    delay: float = 0.0  # seconds a call takes (a run slow enough to be killed mid-way)


class DialogueScript(Backend):
    """Writes one fixed dialogue (finish 'stop': it ended); as a judge, prefers the label
    word 'persona' for a system turn with '저도' and the in-bounds word otherwise."""

    scheme = "dialogue-script"
    supports_loglikelihood = True
    max_concurrency = 4

    def __init__(self, location: str, options: Options):
        self.model_id, self.calls, self._lock = f"script-{location}", 0, threading.Lock()
        self.delay = options.delay

    def complete(self, request, sample_index=0):
        with self._lock:
            self.calls += 1
        time.sleep(self.delay)
        if request.kind == "score":
            last = [line for line in request.prompt.splitlines() if line.startswith("시스템: ")]
            wanted = " persona" if "저도" in last[-1] else " 적절"
            logprob = -0.2 if request.score_text == wanted else -3.0
            return Completion(
                text=request.score_text,
                logprobs=[TokenLogprob(token=request.score_text, logprob=logprob)],
            )
        return Completion(text=DIALOGUE, finish_reason="stop")


ENTRY = BackendEntry(
    factory=DialogueScript, options=Options, summary="scripted dialogues for tests"
)
