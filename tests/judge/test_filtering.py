"""K/DA filters on a scripted backend: order, retention arithmetic, unparsed answers."""

from __future__ import annotations

import json
import math
import threading

import pytest
from pydantic import BaseModel, ConfigDict

from rolecall.errors import ConfigError
from rolecall.jsonl import read_jsonl
from rolecall.judge.filtering import filter_pairs
from rolecall.judge.pair_filters import FILTERS, make_pair_judge, make_panel
from rolecall.llm import LLM, Cache, load_backend
from rolecall.llm.base import Backend, Completion, TokenLogprob
from rolecall.llm.registry import BackendEntry
from rolecall.records import Pair, Verdict
from tests.fakes import use_backend


def make_panels(llms, calibrated=False):
    """One panel per filter, in K/DA's order, each judge of ``llms`` on each (as the
    kda filter stage makes them, ``pipelines/kda_filter.py``)."""
    return [make_panel(name, llms, "ko", "auto", None, 0.0, calibrated) for name in FILTERS]


def rewrite_of(prompt: str) -> str:
    lines = [ln for ln in prompt.splitlines() if ln.startswith(("변환: ", "문장: "))]
    return lines[-1].split(": ", 1)[1]


def consistency_word(text: str) -> str:
    return "변화" if "대답" in text else "유지"


def implicit_word(text: str) -> str:
    return "은근함" if "ㅋㅋ" in text else "노골적" if "노골" in text else "무해함"


class KdaOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    scoring: bool = True
    explicit_bias: float = 0.0  # added to "노골적" on every prompt: a label prior


CONTENT_FREE = ("N/A", "[MASK]")


class KdaScripted(Backend):
    scheme = "kda-scripted"
    supports_chat = True
    supports_loglikelihood = True
    max_concurrency = 4

    def __init__(self, location, options):
        self.model_id = "kda"
        self.supports_loglikelihood = options.scoring
        self.bias = options.explicit_bias
        self.prompts: list[str] = []
        self._lock = threading.Lock()

    def complete(self, request, sample_index=0):
        prompt = request.prompt or request.messages[0].content
        with self._lock:
            self.prompts.append(prompt)
        text = rewrite_of(prompt)
        wanted = consistency_word(text) if "맥락" in prompt else implicit_word(text)
        if request.kind == "score":
            logprob = -0.1 if request.score_text == f" {wanted}" else -3.0
            if text in CONTENT_FREE:
                logprob = -1.0  # content-free: no word preferred but for the bias
            if request.score_text == " 노골적":
                logprob += self.bias
            return Completion(
                text=request.score_text, logprobs=[TokenLogprob(token="x", logprob=logprob)]
            )
        if "??" in text:
            return Completion(text="글쎄요")
        return Completion(text=json.dumps({"label": wanted}, ensure_ascii=False))


@pytest.fixture(autouse=True)
def _scripted_judges(monkeypatch):
    use_backend(
        monkeypatch,
        "kda-scripted",
        BackendEntry(factory=KdaScripted, options=KdaOptions, summary="scripted K/DA judge"),
    )
    use_backend(
        monkeypatch,
        "kda-contrary",
        BackendEntry(factory=Contrary, options=KdaOptions, summary="scripted K/DA judge, contrary"),
    )


def pair(i, n, toxic):
    return Pair(
        neutral=f"중립 문장 {i}", toxic=toxic, provenance={"candidate_id": f"s{i}/n{n}", "n": n}
    )


PAIRS = [
    pair(1, 0, "대답: 네 알겠습니다"),
    pair(1, 3, "뭐래 ㅋㅋ 또 그소리"),
    pair(2, 0, "평범하게 바꾼 문장"),
    pair(2, 3, "노골 욕설 문장"),
    pair(3, 0, "높으신 분들 ㅋㅋ"),
    pair(3, 3, "대답 ㅋㅋ"),
]


def judges(llm):
    return make_panels([llm])


def test_filters_run_in_order_and_only_consistent_candidates_reach_the_second(tmp_path):
    llm = LLM(load_backend("kda-scripted:x"))
    report, kept = filter_pairs(judges(llm), PAIRS, tmp_path, progress=False)
    implicit_prompts = [p for p in llm.backend.prompts if "맥락" not in p]
    judged_second = {rewrite_of(p) for p in implicit_prompts}
    assert judged_second == {
        "뭐래 ㅋㅋ 또 그소리",
        "평범하게 바꾼 문장",
        "노골 욕설 문장",
        "높으신 분들 ㅋㅋ",
    }  # the two "대답" candidates never got there
    assert [p.provenance["candidate_id"] for p in kept] == ["s1/n3", "s3/n0"]
    assert sorted(f.name for f in tmp_path.iterdir()) == [  # the judge writes verdicts only
        "verdicts_consistency.jsonl",
        "verdicts_implicit.jsonl",
    ]
    first, second = report["filters"]
    assert (first["filter"], first["in"], first["kept"], first["retention"]) == (
        "consistency",
        6,
        4,
        round(4 / 6, 4),
    )
    assert (second["filter"], second["in"], second["kept"], second["retention"]) == (
        "implicit",
        4,
        2,
        0.5,
    )
    assert first["by_n"] == {
        "0": {"in": 3, "kept": 2, "unparsed": 0, "retention": 0.6667},
        "3": {"in": 3, "kept": 2, "unparsed": 0, "retention": 0.6667},
    }
    assert second["by_n"]["3"] == {"in": 2, "kept": 1, "unparsed": 0, "retention": 0.5}
    assert report["overall"] == {"in": 6, "kept": 2, "retention": round(2 / 6, 4)}


def test_score_verdicts_keep_probabilities_and_raw_output(tmp_path):
    llm = LLM(load_backend("kda-scripted:x"))
    filter_pairs(judges(llm), PAIRS[:2], tmp_path, progress=False)
    votes = list(read_jsonl(tmp_path / "verdicts_consistency.jsonl"))
    assert [v["label"] for v in votes] == ["shifted", "maintained"]
    assert set(votes[0]["probabilities"]) == {"maintained", "shifted"}
    assert json.loads(votes[0]["raw_output"])["loglikelihood"]["변화"] == -0.1


def test_unparsed_answers_are_their_own_outcome(tmp_path):
    llm = LLM(load_backend("kda-scripted:x?scoring=false"))
    pairs = PAIRS[:2] + [pair(4, 5, "이게 무슨 ?? ㅋㅋ")]
    report, _ = filter_pairs(judges(llm), pairs, tmp_path, progress=False)
    assert report["filters"][0]["unparsed"] == 1 and report["filters"][0]["kept"] == 1
    votes = {v["item_id"]: v for v in read_jsonl(tmp_path / "verdicts_consistency.jsonl")}
    assert votes["s4/n5"]["parse_status"] == "unparsed" and votes["s4/n5"]["raw_output"] == "글쎄요"


def test_majority_over_samples_and_resume(tmp_path):
    llm = LLM(load_backend("kda-scripted:x?scoring=false"))
    filter_pairs(judges(llm), PAIRS, tmp_path, samples=3, progress=False)
    votes = list(read_jsonl(tmp_path / "verdicts_consistency.jsonl"))
    assert len(votes) == 6 * 3
    before = (tmp_path / "verdicts_consistency.jsonl").read_text(encoding="utf-8")
    filter_pairs(judges(llm), PAIRS, tmp_path, samples=3, progress=False)
    assert (tmp_path / "verdicts_consistency.jsonl").read_text(encoding="utf-8") == before


def test_bad_filter_names_and_languages():
    backend = load_backend("kda-scripted:x")
    with pytest.raises(ConfigError, match="unknown filter"):
        make_pair_judge("toxicity", backend)
    with pytest.raises(ConfigError, match="language"):
        make_pair_judge("implicit", backend, language="ja")
    with pytest.raises(ConfigError, match="no prompt template"):
        make_pair_judge("implicit", backend, template="judge_implicit_v9")


class Contrary(KdaScripted):
    """A second judge model that always says the opposite of the scripted one."""

    scheme = "kda-contrary"

    def complete(self, request, sample_index=0):
        answer = super().complete(request, sample_index)
        if request.kind == "score":
            flipped = -3.0 if answer.logprobs[0].logprob > -1 else -0.1
            return Completion(text=answer.text, logprobs=[TokenLogprob(token="x", logprob=flipped)])
        return answer


def test_a_panel_of_judge_models_pools_votes_and_ties_drop_the_candidate(tmp_path):
    # two models that disagree on every consistency label: every vote is a tie, and a tie
    # never keeps a candidate; both models' votes are on file, told apart by model
    agree, contrary = LLM(load_backend("kda-scripted:x")), LLM(load_backend("kda-contrary:y"))
    contrary.backend.model_id = "contrary"
    report, _ = filter_pairs(make_panels([agree, contrary]), PAIRS, tmp_path, progress=False)
    assert report["filters"][0]["kept"] == 0 and report["overall"]["kept"] == 0
    votes = list(read_jsonl(tmp_path / "verdicts_consistency.jsonl"))
    assert len(votes) == 2 * len(PAIRS)
    assert {v["model"] for v in votes} == {"kda-scripted:kda", "kda-contrary:contrary"}
    # a third model that agrees with the first breaks the ties its way
    third = LLM(load_backend("kda-scripted:z"))
    third.backend.model_id = "kda-2"
    report, _ = filter_pairs(
        make_panels([agree, contrary, third]), PAIRS, tmp_path / "3", progress=False
    )
    assert [f["kept"] for f in report["filters"]] == [4, 2]


def test_majority_ties_go_against_the_keep_label():
    from rolecall.judge.voting import majority
    from rolecall.records import Verdict

    def vote(label):
        return Verdict(
            judge="consistency",
            item_id="a",
            label=label,
            raw_output=label,
            parse_status="parsed",
            model="m",
        )

    assert majority([vote("maintained"), vote("shifted")], "maintained").label == "shifted"
    assert majority([vote("shifted"), vote("maintained")], "maintained").label == "shifted"
    assert (
        majority(
            [vote("implicit"), vote("none"), vote("none"), vote("implicit"), vote("explicit")],
            "implicit",
        ).label
        == "none"
    )
    assert (
        majority([vote("maintained"), vote("maintained"), vote("shifted")], "maintained").label
        == "maintained"
    )


def test_calibration_divides_out_a_label_prior(tmp_path):
    biased = LLM(load_backend("kda-scripted:x?explicit_bias=5"))
    implicit = [pair(i, 0, text) for i, text in enumerate(["높으신 분들 ㅋㅋ", "평범한 문장"])]
    _, plain = make_panels([biased])[1][0]
    assert [
        plain.parse_output(
            p, [s[0].completion for s in biased.generate(plain.format_input(p))], "m"
        ).label
        for p in implicit
    ] == ["explicit", "explicit"]

    _, calibrated = make_panels([biased], calibrated=True)[1][0]
    assert calibrated.prior["노골적"] == pytest.approx(-math.log(1 + 2 * math.exp(-5)))
    verdicts = [
        calibrated.parse_output(
            p, [s[0].completion for s in biased.generate(calibrated.format_input(p))], "m"
        )
        for p in implicit
    ]
    assert [v.label for v in verdicts] == ["implicit", "none"]
    raw = json.loads(verdicts[0].raw_output)
    assert raw["prior"] == pytest.approx(calibrated.prior) and "loglikelihood" in raw
    assert sum(verdicts[0].probabilities.values()) == pytest.approx(1.0)


def test_calibration_leaves_generate_mode_alone():
    llm = LLM(load_backend("kda-scripted:x?scoring=false"))
    panels = make_panels([llm], calibrated=True)
    assert all(
        judge.mode == "generate" and judge.prior is None for panel in panels for _, judge in panel
    )


class LaughRules:
    """A direct judge (no LLM) of the consistency filter: a candidate keeps the context
    when it laughs ("ㅋㅋ"); it remembers the items it was asked about."""

    kind, name, model = "rules", "consistency", "rules:laugh"

    def __init__(self):
        self.asked: list[str] = []

    @staticmethod
    def item_id(pair: Pair) -> str:
        return pair.provenance["candidate_id"]

    def verdicts(self, pairs):
        self.asked += [self.item_id(p) for p in pairs]
        return [
            Verdict(
                judge=self.name,
                item_id=self.item_id(p),
                label="maintained" if "ㅋㅋ" in p.toxic else "shifted",
                raw_output=p.toxic,
                parse_status="parsed",
                score=0.9,
                rule=None if "ㅋㅋ" in p.toxic else "no-laugh",
            )
            for p in pairs
        ]


def mixed_panels(llm, rules):
    return [make_panel("consistency", [llm, rules]), make_panel("implicit", [llm])]


def test_a_panel_mixing_an_llm_and_a_direct_judge_votes_and_ties_drop(tmp_path):
    llm, rules = LLM(load_backend("kda-scripted:x")), LaughRules()
    report, kept = filter_pairs(mixed_panels(llm, rules), PAIRS, tmp_path, progress=False)
    # the LLM keeps all but the "대답" ones, the rules only those that laugh: where they
    # disagree the vote is a tie, and a tie never keeps a candidate
    assert report["filters"][0]["kept"] == 2
    assert [p.provenance["candidate_id"] for p in kept] == ["s1/n3", "s3/n0"]
    votes = list(read_jsonl(tmp_path / "verdicts_consistency.jsonl", Verdict))
    assert len(votes) == 2 * len(PAIRS)
    by_kind = {kind: [v for v in votes if v.kind == kind] for kind in ("llm", "rules")}
    assert len(by_kind["llm"]) == len(by_kind["rules"]) == len(PAIRS)
    assert {(v.judge, v.model) for v in by_kind["llm"]} == {
        ("consistency/score/0", "kda-scripted:kda")
    }
    assert {(v.judge, v.model, v.score) for v in by_kind["rules"]} == {
        ("consistency/rules", "rules:laugh", 0.9)
    }
    assert {v.item_id: v.rule for v in by_kind["rules"]}["s2/n0"] == "no-laugh"
    implicit = list(read_jsonl(tmp_path / "verdicts_implicit.jsonl", Verdict))
    assert {v.kind for v in implicit} == {"llm"} and len(implicit) == 2


def test_a_mixed_panel_resumes_without_calls_or_duplicates(tmp_path):
    cache = tmp_path / "cache.sqlite"
    llm, rules = LLM(load_backend("kda-scripted:x"), Cache(cache)), LaughRules()
    first, _ = filter_pairs(mixed_panels(llm, rules), PAIRS, tmp_path / "run", progress=False)
    files = {p.name: p.read_bytes() for p in (tmp_path / "run").iterdir()}
    again, more = LLM(load_backend("kda-scripted:x"), Cache(cache)), LaughRules()
    second, _ = filter_pairs(mixed_panels(again, more), PAIRS, tmp_path / "run", progress=False)
    assert second == first
    assert again.stats.calls == 0 and again.backend.prompts == []
    assert more.asked == []  # the rules' votes were read back from the verdict file
    assert {p.name: p.read_bytes() for p in (tmp_path / "run").iterdir()} == files


def test_a_direct_judge_of_another_filter_is_refused():
    with pytest.raises(ConfigError, match="not the implicit filter") as caught:
        make_panel("implicit", [LaughRules()])
    assert caught.value.fix
    with pytest.raises(ConfigError, match="no judge"):
        make_panel("implicit", [])
