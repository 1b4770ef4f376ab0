"""The Retrieve-fail-Generate bot (NAACL 2022, sections 4.3-4.5), one reply at a time.

Per user turn:

0. **check the user's turn** (``serve/user_checks.py``, when the bot has ``user_checks/``):
   a crisis, abuse toward the bot, an off-role request, a question about the bot or the
   date, or an unclear turn gets the spec's reply for it (path ``checked``; a crisis turn
   is flagged for the operator), and nothing below runs;
1. **retrieve**: the retriever's top ``k`` candidates (``serve/selection.py``: one
   backbone pass for the context; its scores fused with BM25's on the last user turn,
   ``lexical_weight``), reordered by the reranker only with ``rerank`` in
   ``bot.json``: off by default, since on frozen features the reranker orders them worse
   than the retriever (``bench/retrieval_quality.py``);
2. **fail?**: the best candidate's confidence at or below ``unanswerable_threshold`` means
   no candidate fits: the context is unanswerable by retrieval. ``unanswerable_method``
   says what gives it (``serve/unanswerable.py``): the reranker's MC dropout (mean -
   variance of its sigmoid scores over ``mc_passes`` passes), the sentence encoder's
   cosine of context and reply, or both standardised (``unanswerable_scales``) and summed;
3. **generate**: then the generator (LoRA, MLE + unlikelihood) writes the reply; or, with
   ``when_unanswerable: safe_reply`` (a generator that answers worse than retrieval, such
   as the embedded 270M model), a safe turn instead of a non sequitur: a clarifying
   question when the user asked something, else an acknowledgement and a question on a
   topic not asked yet in this call (path ``fallback``);
4. **guard**: the out-of-bounds classifier reads the reply; when it flags it, the bot says
   the pre-defined question on another topic the LM finds most natural after the context
   (lowest perplexity, scored by the generator).

Every reply (``serve/reply.py``) carries its provenance: the path taken (``retrieved``,
``generated`` or ``fallback``), each stage's scores and the thresholds they were compared
with, and the latency of each stage and of the whole turn.

A bot directory holds the models, each optional but at least one way to answer::

    MODELS_DIR/bot.json          thresholds, k, passes, fallback questions (all optional)
    MODELS_DIR/retriever/        rolecall train retriever (its candidates/ index inside)
    MODELS_DIR/partner_retriever/  a second backbone's retriever of the same candidates:
                                 the two retrievers' standardised scores are summed
    MODELS_DIR/reranker/         rolecall train reranker
    MODELS_DIR/generator/        rolecall train generator
    MODELS_DIR/classifier/       rolecall train classifier
    MODELS_DIR/user_checks/      rolecall train user-checks
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from rolecall.errors import ConfigError, InputFileError, describe_validation
from rolecall.records import Turn
from rolecall.serve.reply import Reply, draw_unrejected, ms_since, unsaid

BOT_FILE = "bot.json"
PARTNER = "partner_retriever"  # a second backbone's retriever (serve/selection.py)
CLARIFY_REPLIES = [
    "제가 잘 이해했는지 모르겠어요. 조금만 더 자세히 말씀해 주시겠어요?",
    "그 말씀은 제가 잘 답해 드리기 어려워요. 어떤 점이 궁금하신지 조금 더 말씀해 주시겠어요?",
]
# a user's turn that asks something: a question mark, an ending that only asks (해요체
# "-어요" asks and tells alike, so it does not count), or a question word
QUESTION = re.compile(
    r"\?|(까요|나요|니까|냐|니|을까|는지|던가|는가|겠어요)\s*[.…~]*\s*$|"
    r"(^|\s)(뭐|뭘|왜|어디|언제|누가|누구|어떻게|어떤|몇|무슨|얼마)"
)
FALLBACK_QUESTIONS = [
    "요즘 즐겨 보시는 프로그램 있으세요?",
    "오늘 식사는 잘 챙겨 드셨어요?",
    "요즘 날씨가 어떤가요?",
    "최근에 산책은 다녀오셨어요?",
]


UnanswerableMethod = Literal["mc_dropout", "cosine", "cosine+reranker", "e5", "e5+reranker"]


class BotSettings(BaseModel):
    """``bot.json``: how the parts are joined."""

    model_config = ConfigDict(extra="forbid")
    k: int = Field(10, ge=1, description="candidates retrieved (and reranked, with rerank)")
    lexical_weight: float = Field(
        1.0,
        ge=0.0,
        description="weight of BM25 on the last user turn fused with the retriever's "
        "scores (serve/lexical.py); 0: the retriever alone",
    )
    rerank: bool = Field(
        False,
        description="reorder the retriever's k by the reranker; off by default: on frozen "
        "Gemma and sentence-encoder states the reranker lowers Hits@1/20 (docs/models.md); "
        "the reranker still gives the MC-dropout confidence",
    )
    unanswerable_threshold: float | None = Field(
        None,
        description="confidence (by unanswerable_method) at or below which retrieval "
        "fails (from 'rolecall eval unanswerable'); None: retrieval never fails",
    )
    unanswerable_method: UnanswerableMethod = Field(
        "mc_dropout",
        description="what gives the confidence (serve/unanswerable.py): the reranker's MC "
        "dropout, the sentence encoder's (cosine) or multilingual-e5-small's (e5) cosine of "
        "context and reply, or one of them and the reranker standardised and summed",
    )
    unanswerable_scales: list[tuple[float, float]] | None = Field(
        None,
        description="cosine+reranker, e5+reranker: each part's mean and standard deviation "
        "on the calibration items (the 'scales' its calibration reports)",
    )
    mc_passes: int = Field(10, ge=2, description="MC dropout passes")
    when_unanswerable: Literal["generate", "safe_reply"] = Field(
        "generate",
        description="when retrieval fails: the generator writes the reply, or a safe turn "
        "(clarify_replies to a question, else acknowledgement + a fallback question)",
    )
    clarify_replies: list[str] = Field(
        default_factory=lambda: list(CLARIFY_REPLIES),
        min_length=1,
        description="safe_reply to a question no candidate answers",
    )
    acknowledgement: str = Field(
        "아, 그러셨군요.", description="safe_reply: said before a fallback question"
    )

    @model_validator(mode="after")
    def _summed_needs_scales(self) -> BotSettings:
        method = self.unanswerable_method
        if method.endswith("+reranker") and self.unanswerable_threshold is not None:
            if not self.unanswerable_scales or len(self.unanswerable_scales) != 2:
                raise ValueError(
                    f"unanswerable_method {method!r} needs unanswerable_scales: two "
                    "[mean, std] pairs, the 'scales' that 'rolecall eval unanswerable "
                    f"--methods {method}' reports"
                )
        return self

    guard: bool = Field(True, description="let the classifier guard every reply")
    user_checks: bool = Field(
        True, description="read the user's turn with user_checks/ before answering it"
    )
    fallback_questions: list[str] = Field(
        default_factory=lambda: list(FALLBACK_QUESTIONS), min_length=1
    )
    max_new_tokens: int = Field(48, ge=1, description="the generator's reply length")
    temperature: float = Field(0.0, ge=0.0, description="the generator's; 0 = greedy")
    generator_model: str | None = Field(
        None,
        description="without generator/: this LLM (a model string), prompted with "
        "the role spec in 'spec', is the generator (serve/prompted.py)",
    )
    spec: str | None = Field(
        None, description="the role spec (YAML) for generator_model; relative to the bot directory"
    )


class Bot:
    """The loaded parts; ``reply(history)`` answers the last user turn (a ``ChatBot``,
    ``serve/reply.py``)."""

    version = "rfg"  # the web app sets one that hashes the bot's files (web/bots.py)

    def __init__(
        self,
        settings: BotSettings | None = None,
        selector: Any = None,
        generator: Any = None,
        classifier: Any = None,
        user_checks: Any = None,
    ):
        if selector is None and generator is None:
            raise ConfigError(
                "a bot needs a retriever with its candidate index or a generator",
                fix="train one: rolecall train retriever / rolecall train generator",
            )
        self.settings = settings or BotSettings()
        self.selector, self.generator, self.classifier = selector, generator, classifier
        self.user_checks = user_checks

    @classmethod
    def load(
        cls, directory: str | Path, progress: bool = False, llm: Any = None, typing: bool = False
    ) -> Bot:
        """The bot in ``directory`` (see the module docstring); what is absent is skipped,
        what is present but broken is an error naming the part. ``llm``: an open ``LLM``
        to use for ``generator_model`` when it is that model (saves loading it twice).
        ``typing``: a person types the first turn (an interactive chat): the BM25 index is
        built in a thread while they do, so the bot is ready sooner (in a script, at once:
        two loads side by side only slow each other)."""
        directory = Path(directory)
        check_bot_directory(directory)
        settings = _read_settings(directory / BOT_FILE)
        selector = generator = classifier = None
        if (directory / "retriever").exists():
            from rolecall.serve.candidates import CandidateIndex
            from rolecall.serve.selection import ResponseSelector
            from rolecall.train.retriever import Retriever

            index_dir = directory / "retriever" / "candidates"
            if not index_dir.exists():
                raise InputFileError(
                    directory / "retriever",
                    "has no candidates/ index",
                    fix="train it with 'rolecall train retriever' (it "
                    "builds the index) or copy the index there",
                )
            index = CandidateIndex.load(index_dir, Retriever.load(directory / "retriever"))
            partner = None
            if (directory / PARTNER).exists():  # a second backbone's retriever
                partner = CandidateIndex.load(
                    directory / PARTNER / "candidates", Retriever.load(directory / PARTNER)
                )
            reranker = None
            if (directory / "reranker").exists():
                from rolecall.train.reranker import Reranker

                reranker = Reranker.load(directory / "reranker")
            selector = ResponseSelector(
                index,
                reranker,
                k=settings.k,
                rerank=settings.rerank,
                lexical_weight=settings.lexical_weight,
                partner=partner,
            )
            selector.prepare(progress, lexical=not typing)
        if (directory / "generator").exists():
            from rolecall.train.generator import Generator

            generator = Generator.load(directory / "generator")
        elif settings.generator_model:
            generator = _prompted_generator(directory, settings, llm)
        if (directory / "classifier").exists():
            from rolecall.train.classifier import load_classifier

            classifier = load_classifier(directory / "classifier")
        user_checks = _user_checks(directory / "user_checks")
        if selector is None and generator is None:
            inside = sorted(p.parent for p in directory.glob("*/bot.json"))
            raise InputFileError(
                directory,
                "holds neither retriever/ nor generator/",
                fix=f"did you mean {inside[0]}? (a bot directory holds bot.json)"
                if inside
                else "build a bot: rolecall bot run BOT.yaml (docs/bots.md), or train one "
                f"part: rolecall train retriever EXAMPLES --out {directory}/retriever",
            )
        if selector is not None and typing:
            selector.build_lexical_in_background()  # once the rest is loaded
        return cls(settings, selector, generator, classifier, user_checks)

    # ---- one turn ----------------------------------------------------------------------

    def reply(self, history: Sequence[Turn], exclude: Collection[str] = ()) -> Reply:
        """The bot's next turn after ``history`` (its last turn is the user's).

        ``exclude``: replies a person rejected at this point (the web app's Fix); the bot
        answers with the best candidate not among them, else generates (sampling when the
        greedy reply was rejected)."""
        started = time.perf_counter()
        history, exclude = list(history), set(exclude)
        stages: list[dict[str, Any]] = []
        if self.user_checks is not None and self.settings.user_checks:
            checked = self._check(history, stages, exclude)
            if checked is not None:
                return Reply(checked, "checked", stages, ms_since(started))
        text, path = None, "retrieved"
        if self.selector is not None:
            text = self._retrieve(history, stages, exclude)
        if text is None and self.settings.when_unanswerable == "safe_reply":
            text, path = self._safe_reply(history, stages, exclude), "fallback"
        elif text is None:
            text, path = self._generate(history, stages, exclude)
        if self.settings.guard and self.classifier is not None:
            guarded = self._guard(history, text, stages)
            if guarded is not None:
                text, path = guarded, "fallback"
        return Reply(text, path, stages, ms_since(started))

    def _check(self, history: list[Turn], stages: list[dict], exclude: set[str]) -> str | None:
        """The spec's reply to the check the user's turn calls for, or None."""
        started = time.perf_counter()
        stage = self.user_checks.read(history)
        text = None
        if stage["check"] is not None:
            text = self.user_checks.reply(stage["check"], history, exclude)
            if text is None:
                stage["note"] = "every reply of the check was rejected: answered as usual"
        stage["ms"] = ms_since(started)
        stages.append(stage)
        return text

    def _retrieve(self, history: list[Turn], stages: list[dict], exclude: set[str]) -> str | None:
        """The best candidate, or None when retrieval fails and a generator can answer."""
        started = time.perf_counter()
        threshold, method = self.settings.unanswerable_threshold, self.settings.unanswerable_method
        detector = None
        if threshold is not None and method != "mc_dropout":
            from rolecall.serve.unanswerable import detector_named

            reranker, scales = self.selector.reranker, self.settings.unanswerable_scales
            detector = detector_named(method, reranker, scales=scales)
        mc = threshold is not None and method == "mc_dropout" and self.selector.reranker is not None
        check = mc or detector is not None
        passes = self.settings.mc_passes if mc else 0
        turn = self.selector.select(history, mc_passes=passes, detector=detector)
        answerable = not check or turn.confidence > threshold
        allowed = [s for s in turn.ranked if s.text not in exclude]
        best = allowed[0] if allowed else turn.best
        if not allowed:
            answerable = False
        stage = {
            "stage": "retrieve",
            "best": best.text,
            "excluded": len(exclude),
            "candidates": [
                {
                    "text": s.text,
                    "retrieval_score": round(s.retrieval_score, 4),
                    "rerank_score": None if s.rerank_score is None else round(s.rerank_score, 4),
                }
                for s in turn.ranked[:3]
            ],
            "confidence": None if turn.confidence is None else round(turn.confidence, 4),
            "threshold": threshold,
            "method": method if check else None,
            "answerable": answerable,
        }
        safe = self.settings.when_unanswerable == "safe_reply"
        if not answerable and self.generator is None and not safe:
            stage["note"] = "unanswerable, but there is no generator: the best candidate"
            answerable = True
        stage["ms"] = ms_since(started)
        stages.append(stage)
        return best.text if answerable else None

    def _safe_reply(self, history: list[Turn], stages: list[dict], exclude: set[str]) -> str:
        """A clarifying question when the user asked something, else an acknowledgement
        and a fallback question not asked yet in this call."""
        last = next((t.text for t in reversed(history) if t.role == "user"), "")
        asked = bool(QUESTION.search(last.strip()))
        if asked:
            pool = self.settings.clarify_replies
        else:
            pool = [
                f"{self.settings.acknowledgement} {q}" for q in self.settings.fallback_questions
            ]
        text = unsaid(pool, history, exclude)[0]
        stages.append({"stage": "safe_reply", "text": text, "asked": asked})
        return text

    def _generate(
        self, history: list[Turn], stages: list[dict], exclude: set[str]
    ) -> tuple[str, str]:
        """The generator's reply; sampled again (``draw_unrejected``) when the reply at
        the configured temperature was rejected before."""
        started = time.perf_counter()

        def draw(temperature: float, seed: int) -> str:
            return self.generator.generate(
                [history], self.settings.max_new_tokens, temperature, seed=seed
            )[0]

        text, tries, temperature = draw_unrejected(draw, self.settings.temperature, exclude)
        stages.append(
            {
                "stage": "generate",
                "text": text,
                "tries": tries,
                "temperature": temperature,
                "alpha": self.generator.settings.alpha,
                "ms": ms_since(started),
            }
        )
        return text, "generated"

    def _guard(self, history: list[Turn], text: str, stages: list[dict]) -> str | None:
        """The fallback question when the classifier flags ``text``, else None."""
        started = time.perf_counter()
        threshold = self.classifier.settings.threshold
        p_out = float(self.classifier.predict_proba([history], [text])[0, 1])
        stage: dict[str, Any] = {
            "stage": "guard",
            "text": text,
            "p_out_of_bounds": round(p_out, 4),
            "threshold": threshold,
            "flagged": p_out >= threshold,
        }
        question = None
        if stage["flagged"]:
            # a question the bot already asked in this call is not asked again
            questions = unsaid(self.settings.fallback_questions, history)
            if self.generator is not None:
                values = self.generator.response_perplexities([history] * len(questions), questions)
                best = min(range(len(questions)), key=values.__getitem__)
                stage["perplexities"] = [round(v, 3) for v in values]
            else:
                best = 0  # no LM to rank them: the first, as configured
            question = questions[best]
            stage["fallback"] = question
        stage["ms"] = ms_since(started)
        stages.append(stage)
        return question


def check_bot_directory(directory: Path) -> None:
    """An ``InputFileError`` that says what ``directory`` is instead, unless it holds a bot
    (``bot.json``, ``retriever/`` or ``generator/``): a missing folder, a file (``bot.json``
    itself), a run directory with its bot one level down ("did you mean ...?")."""
    build = "build a bot: rolecall bot run BOT.yaml (docs/bots.md; the demo's is runs/demo/bot)"
    if not directory.exists():
        raise InputFileError(directory, "no such bot directory", fix=build)
    if not directory.is_dir():
        fix = f"give its folder: {directory.parent}" if directory.name == BOT_FILE else build
        raise InputFileError(directory, "is a file, not a bot directory", fix=fix)
    if any((directory / part).exists() for part in (BOT_FILE, "retriever", "generator")):
        return
    inside = sorted(p.parent for p in directory.glob(f"*/{BOT_FILE}"))
    raise InputFileError(
        directory,
        f"is not a bot directory (it holds no {BOT_FILE}, retriever/ or generator/)",
        fix=f"did you mean {inside[0]}?" if inside else build,
    )


def _user_checks(directory: Path) -> Any:
    """The bot's user-turn checks (``serve/user_checks.py``), or None without them."""
    if not directory.exists():
        return None
    from rolecall.serve.user_checks import UserTurnChecks

    return UserTurnChecks.load(directory)


def _prompted_generator(directory: Path, settings: BotSettings, llm: Any):
    from rolecall.llm.opening import open_llm
    from rolecall.serve.prompted import PromptedGenerator
    from rolecall.spec import load_role_spec

    if not settings.spec:
        raise InputFileError(
            directory / BOT_FILE,
            "names a generator_model but no spec",
            fix='add "spec": "path/to/spec.yaml" (the role spec that prompts the model)',
        )
    spec = load_role_spec(directory / settings.spec)  # an absolute spec path stays as is
    if llm is None:
        llm = open_llm(settings.generator_model)
    return PromptedGenerator(llm, spec)


def _read_settings(path: Path) -> BotSettings:
    if not path.is_file():
        return BotSettings()
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InputFileError(
            path, f"is not valid JSON: {exc}", fix="fix the file or delete it to use the defaults"
        ) from None
    try:
        return BotSettings.model_validate(raw)
    except ValidationError as exc:
        raise InputFileError(
            path,
            f"bad settings: {describe_validation(exc)}",
            fix="see BotSettings in rolecall/serve/bot.py for each key",
        ) from None
