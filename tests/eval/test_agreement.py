"""Agreement statistics against hand-computed values."""

import pytest

from rolecall.errors import InputFileError
from rolecall.eval.agreement import (
    agreement_report,
    cohen_kappa,
    krippendorff_alpha,
    percent_agreement,
    read_human_labels,
)
from rolecall.records import Verdict


def test_kappa_on_a_textbook_table():
    # 50 items: both yes 20, A yes/B no 5, A no/B yes 10, both no 15.
    a = ["y"] * 20 + ["y"] * 5 + ["n"] * 10 + ["n"] * 15
    b = ["y"] * 20 + ["n"] * 5 + ["y"] * 10 + ["n"] * 15
    # p_o = 35/50 = 0.7; p_e = (25*30 + 25*20) / 2500 = 0.5; kappa = 0.2 / 0.5 = 0.4
    assert percent_agreement(a, b) == pytest.approx(0.7)
    assert cohen_kappa(a, b) == pytest.approx(0.4)


def test_kappa_edge_cases():
    assert cohen_kappa(["x", "x"], ["x", "x"]) == 1.0
    assert cohen_kappa(["a", "b"], ["b", "a"]) == pytest.approx(-1.0)
    with pytest.raises(ValueError):
        percent_agreement([], [])


def vote(item, label, judge="consistency/score/0"):
    return Verdict(judge=judge, item_id=item, label=label, raw_output=label, parse_status="parsed")


def test_report_per_annotator_and_majority(tmp_path):
    labels = tmp_path / "human.csv"
    labels.write_text(
        "item_id,filter,label,annotator\n"
        "s1/n0,consistency,maintained,kim\ns1/n0,consistency,maintained,lee\n"
        "s1/n0,consistency,shifted,park\n"
        "s2/n0,consistency,shifted,kim\ns2/n0,consistency,maintained,lee\n"
        "s3/n0,consistency,shifted,kim\ns3/n0,consistency,shifted,lee\n"
        "s9/n0,consistency,shifted,kim\n",
        encoding="utf-8",
    )
    human = read_human_labels(labels)
    verdicts = {
        "consistency": [
            vote("s1/n0", "maintained"),
            vote("s2/n0", "maintained"),
            vote("s3/n0", "maintained"),
        ]
    }
    report = agreement_report(verdicts, human)["consistency"]
    # kim: s1 agree, s2 disagree, s3 disagree -> 1/3; judge says one label only
    assert report["annotators"]["kim"]["agreement"] == pytest.approx(0.3333)
    assert report["annotators"]["lee"]["agreement"] == pytest.approx(0.6667)
    assert report["annotators"]["park"]["items"] == 1
    # human majority: s1 maintained, s2 tie (left out), s3 shifted, s9 unmatched
    assert report["majority_vote"]["items"] == 2
    assert report["majority_vote"]["agreement"] == 0.5
    assert report["unmatched_items"] == ["s9/n0"]


def kind_vote(item, label, kind, model):
    judge = f"implicit/{kind}" if kind != "llm" else "implicit/score/0"
    return Verdict(
        judge=judge,
        item_id=item,
        label=label,
        raw_output="",
        parse_status="parsed",
        kind=kind,
        model=model,
    )


def test_a_panel_of_several_kinds_is_measured_per_kind(tmp_path):
    labels = tmp_path / "human.csv"
    labels.write_text(
        "item_id,filter,label\n"
        "a,implicit,implicit\nb,implicit,none\nc,implicit,explicit\nd,implicit,implicit\n",
        encoding="utf-8",
    )
    human = read_human_labels(labels)
    people = {"a": "implicit", "b": "none", "c": "explicit", "d": "implicit"}
    llm = {"a": "explicit", "b": "explicit", "c": "explicit", "d": "none"}  # 1 of 4
    votes = [kind_vote(i, people[i], "classifier", "classifier:j") for i in people]
    votes += [kind_vote(i, llm[i], "llm", "fake-x") for i in people]
    votes += [kind_vote(i, "none", "rules", "rules:r") for i in "ab"]
    report = agreement_report({"implicit": votes}, human)["implicit"]
    kinds = report["kinds"]
    assert list(kinds) == ["classifier", "llm", "rules"]
    assert kinds["classifier"]["majority_vote"] == {"items": 4, "agreement": 1.0, "kappa": 1.0}
    assert kinds["llm"]["majority_vote"]["agreement"] == 0.25
    assert kinds["rules"]["majority_vote"]["items"] == 2  # it judged two items
    assert kinds["rules"]["unmatched_items"] == ["c", "d"]
    assert kinds["llm"]["annotators"]["annotator"]["agreement"] == 0.25
    # the panel as the run pooled it, all its votes together
    assert report["majority_vote"]["items"] == 4
    # votes of one kind (or files from before kinds: no kind is an LLM's) add no "kinds"
    one_kind = [v.model_copy(update={"kind": None}) for v in votes if v.kind == "llm"]
    assert "kinds" not in agreement_report({"implicit": one_kind}, human)["implicit"]
    mixed_old = one_kind + [kind_vote("a", "implicit", "llm", "fake-y")]
    assert "kinds" not in agreement_report({"implicit": mixed_old}, human)["implicit"]


def test_eval_agreement_command_reports_each_kind(tmp_path):
    import json

    from rolecall.jsonl import write_jsonl
    from tests.cli_runs import run_cli

    labels = tmp_path / "human.csv"
    labels.write_text("item_id,filter,label\na,implicit,implicit\n", encoding="utf-8")
    write_jsonl(
        tmp_path / "verdicts_implicit.jsonl",
        [
            kind_vote("a", "implicit", "classifier", "classifier:j"),
            kind_vote("a", "none", "llm", "fake-x"),
        ],
    )
    result = run_cli("eval", "agreement", "--run", str(tmp_path), "--labels", str(labels))
    assert result.returncode == 0, result.stderr
    kinds = json.loads(result.stdout)["implicit"]["kinds"]
    assert kinds["classifier"]["majority_vote"]["agreement"] == 1.0
    assert kinds["llm"]["majority_vote"]["agreement"] == 0.0


def test_bad_label_files(tmp_path):
    path = tmp_path / "h.csv"
    path.write_text("item,label\nx,y\n", encoding="utf-8")
    with pytest.raises(InputFileError, match="missing column"):
        read_human_labels(path)
    path.write_text("item_id,filter,label\nx,consistency,\n", encoding="utf-8")
    with pytest.raises(InputFileError, match=":2: empty"):
        read_human_labels(path)
    # a misspelt filter or a label no judge gives: an error, not a block of 0 items or a
    # disagreement counted
    path.write_text("item_id,filter,label\nx,consistancy,shifted\n", encoding="utf-8")
    with pytest.raises(InputFileError, match=":2: unknown filter 'consistancy'") as raised:
        read_human_labels(path)
    assert "consistency, implicit" in raised.value.fix
    path.write_text("item_id,filter,label\nx,consistency,banana\n", encoding="utf-8")
    with pytest.raises(InputFileError, match="unknown consistency label 'banana'") as raised:
        read_human_labels(path)
    assert "maintained, shifted" in raised.value.fix


def test_krippendorff_alpha_by_hand():
    # o_ab = o_ba = 1 (the third item), n_a = n_b = 3: 1 - 5 * 2 / 18
    assert krippendorff_alpha([["a", "a"], ["b", "b"], ["a", "b"]]) == pytest.approx(4 / 9)
    # three annotators on the first item, one label missing on the third (not pairable):
    # item 1 gives 4 ordered disagreeing pairs / (3 - 1); n_a = 2, n_b = 3: 1 - 4 * 2 / 12
    assert krippendorff_alpha([["a", "a", "b"], ["b", "b"], ["a"]]) == pytest.approx(1 / 3)
    assert krippendorff_alpha([[True, True], [False, False]]) == 1.0
    assert krippendorff_alpha([["a", "a"], ["a", "a"]]) is None  # no disagreement possible
    assert krippendorff_alpha([["a"], ["b"]]) is None  # nothing pairable


def test_krippendorff_alpha_on_the_published_example():
    # Krippendorff (2011), "Computing Krippendorff's alpha-reliability", example C: nominal
    # data of 4 observers on 12 units (None = no label; unit 12 is labelled once and is not
    # pairable); the paper gives alpha = 0.743
    observers = [
        [1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3],
        [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, None],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None],
    ]
    units = [[o[i] for o in observers if o[i] is not None] for i in range(12)]
    assert krippendorff_alpha(units) == pytest.approx(0.743, abs=5e-4)
