import json
from pathlib import Path

import pytest

from rolecall.errors import ConfigError, InputFileError, RolecallError
from rolecall.formats.carecall import (
    carecall_to_examples,
    read_carecall,
    write_carecall,
    write_examples_jsonl,
)
from rolecall.jsonl import read_jsonl
from rolecall.records import Dialogue, Example, Turn

FIXTURE = Path(__file__).with_name("carecall_fixture.json")


def canonical_fixture() -> list[dict]:
    """The fixture in canonical form: the one user turn without a flag gets ``false``."""
    data = json.loads(FIXTURE.read_text(encoding="utf-8"))
    for dialogue in data:
        for turn in dialogue["data"]:
            turn.setdefault("out-of-bounds", False)
    return data


def write_json(path: Path, data) -> Path:
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return path


def test_read_maps_ids_flags_categories_and_extras():
    dialogues = read_carecall(FIXTURE)
    assert [d.id for d in dialogues] == ["cc-0001", "cc-0002", "cc-0003", "cc-0004"]
    first, second, third, _ = dialogues
    # user turns are never judged, whether the flag is false or absent
    assert first.turns[1].out_of_bounds is None and first.turns[3].out_of_bounds is None
    assert [t.out_of_bounds for t in second.turns if t.role == "system"] == [
        False,
        False,
        True,
        True,
    ]
    assert second.metadata == {"topic": "식사", "turn_extras": {"2": {"emotion": "관심"}}}
    assert first.metadata == {}
    assert third.turns[4] == Turn(
        role="system",
        text="무릎이 아프시면 이 약을 드셔 보세요.",
        out_of_bounds=True,
        category="policy violation",
    )
    assert second.turns[4].category is None


def test_round_trip_is_lossless(tmp_path):
    dialogues = read_carecall(FIXTURE)
    out = tmp_path / "out" / "carecall.json"
    assert write_carecall(out, dialogues) == 4
    assert read_carecall(out) == dialogues
    assert json.loads(out.read_text(encoding="utf-8")) == canonical_fixture()
    # canonical in, identical out
    again = tmp_path / "again.json"
    write_carecall(again, read_carecall(out))
    assert again.read_bytes() == out.read_bytes()


def test_written_file_is_readable_korean_indented_and_atomic(tmp_path):
    out = tmp_path / "carecall.json"
    write_carecall(out, read_carecall(FIXTURE))
    text = out.read_text(encoding="utf-8")
    assert "된장찌개" in text and "\\u" not in text
    assert text.startswith('[\n  {\n    "guid": "cc-0001"')
    assert [p.name for p in tmp_path.iterdir()] == ["carecall.json"]  # no temp file left


def test_a_jsonl_name_gets_one_dialogue_per_line(tmp_path):
    out = tmp_path / "carecall.jsonl"
    assert write_carecall(out, read_carecall(FIXTURE)) == 4
    lines = out.read_text(encoding="utf-8").splitlines()
    assert [json.loads(line) for line in lines] == canonical_fixture()
    assert read_carecall(out) == read_carecall(FIXTURE)


def test_jsonl_and_single_object_files_are_detected(tmp_path):
    data = canonical_fixture()
    jsonl = tmp_path / "dialogues.jsonl"
    jsonl.write_text(
        "\n".join(json.dumps(d, ensure_ascii=False) for d in data) + "\n\n", encoding="utf-8"
    )
    assert read_carecall(jsonl) == read_carecall(FIXTURE)
    single = tmp_path / "one.json"
    single.write_text(json.dumps(data[2], ensure_ascii=False, indent=2), encoding="utf-8")
    assert read_carecall(single) == [read_carecall(FIXTURE)[2]]


def test_split_on_the_fixture_matches_the_hand_count(tmp_path):
    examples = carecall_to_examples(FIXTURE)
    # cc-0001: system turns 0, 2, 4 in bounds            -> 3 positives
    # cc-0002: 0, 2 in bounds; 4 out; 6 (also out) dropped -> 2 positives, 1 negative
    # cc-0003: 0, 2 in bounds; 4 out (last system turn)  -> 2 positives, 1 negative
    # cc-0004: 0 out (first turn), 2 dropped              -> 0 positives, 1 negative
    positives = [e for e in examples if e.label == "positive"]
    negatives = [e for e in examples if e.label == "negative"]
    assert len(positives) == 7 and len(negatives) == 3
    assert [(e.dialogue_id, e.response, e.category) for e in negatives] == [
        ("cc-0002", "저도 된장찌개 정말 좋아해요! 어제도 먹었어요.", "unspecified"),
        ("cc-0003", "무릎이 아프시면 이 약을 드셔 보세요.", "policy violation"),
        ("cc-0004", "저는 사람이에요. 진짜 간호사예요.", "unspecified"),
    ]
    assert [len(e.history) for e in examples if e.dialogue_id == "cc-0002"] == [0, 2, 4]
    out = tmp_path / "examples.jsonl"
    assert write_examples_jsonl(out, examples) == 10
    assert list(read_jsonl(out, Example)) == examples


def _fixed(guid: str, *texts: str, flags: tuple = ()) -> dict:
    """A dialogue of alternating system/user turns; system turn i gets ``flags[i]`` if
    given, else no "out-of-bounds" key at all (as in a human-fixed file)."""
    data = []
    for i, text in enumerate(texts):
        turn = {"role": "system" if i % 2 == 0 else "user", "text": text}
        if i % 2 == 0 and i // 2 < len(flags):
            turn["out-of-bounds"] = flags[i // 2]
        data.append(turn)
    return {"guid": guid, "data": data}


FIXED = [
    _fixed("fix-1", "안녕하세요, 어르신.", "네, 안녕하세요.", "식사는요?", "네.", "다행이에요."),
    _fixed("fix-2", "오늘 산책하셨어요?", "아니요.", "내일은 꼭 걸어 보세요.", flags=(None,)),
]


def test_unflagged_in_bounds_makes_every_system_turn_a_positive(tmp_path):
    path = write_json(tmp_path / "fixed.json", FIXED)
    examples = carecall_to_examples(path, unflagged="in-bounds")
    system = [(d["guid"], t["text"]) for d in FIXED for t in d["data"] if t["role"] == "system"]
    assert [(e.dialogue_id, e.response) for e in examples] == system
    assert {e.label for e in examples} == {"positive"}
    # the history is the turns before, unjudged, whatever the flag reading was
    assert [len(e.history) for e in examples] == [0, 2, 4, 0, 2]
    assert all(t.out_of_bounds is None for e in examples for t in e.history)


def test_unflagged_in_bounds_keeps_a_true_flag_as_the_end_of_the_split(tmp_path):
    mixed = _fixed(
        "mix-1",
        "안녕하세요.",
        "네.",
        "저도 사람이에요.",
        "그래요?",
        "네, 진짜예요.",
        flags=(None, True, None),
    )
    path = write_json(tmp_path / "mixed.json", [mixed, *FIXED])
    examples = [e for e in carecall_to_examples(path, "in-bounds") if e.dialogue_id == "mix-1"]
    assert [(e.response, e.label, e.category) for e in examples] == [
        ("안녕하세요.", "positive", None),
        ("저도 사람이에요.", "negative", "unspecified"),
    ]
    # the fixture (every system turn flagged) splits the same either way
    assert carecall_to_examples(FIXTURE, "in-bounds") == carecall_to_examples(FIXTURE)


def test_stop_refuses_a_file_that_gives_no_example_because_of_unflagged_turns(tmp_path):
    path = write_json(tmp_path / "fixed.json", FIXED)
    with pytest.raises(InputFileError) as info:
        carecall_to_examples(path)
    assert str(info.value).startswith(f"{path}: ")
    assert "5 system turns" in str(info.value)
    assert "--unflagged in-bounds" in info.value.fix and "dialogues judge" in info.value.fix
    # one flagged turn that gives an example: the rest stop quietly, as before
    flagged = _fixed("ok-1", "안녕하세요.", "네.", "식사는요?", flags=(False,))
    examples = carecall_to_examples(write_json(tmp_path / "some.json", [flagged, *FIXED]))
    assert [e.response for e in examples] == ["안녕하세요."]
    with pytest.raises(ConfigError, match="in-bounds"):
        carecall_to_examples(FIXTURE, "in_bounds")


def test_unjudged_system_turns_round_trip_as_null(tmp_path):
    dialogue = Dialogue(
        id="gen-1",
        turns=[
            Turn(role="system", text="안녕하세요.", out_of_bounds=False),
            Turn(role="user", text="네."),
            Turn(role="system", text="식사는 하셨어요?"),
        ],
    )
    out = tmp_path / "c.json"
    write_carecall(out, [dialogue])
    assert json.loads(out.read_text(encoding="utf-8"))[0]["data"][2]["out-of-bounds"] is None
    assert json.loads(out.read_text(encoding="utf-8"))[0]["data"][1]["out-of-bounds"] is False
    assert read_carecall(out) == [dialogue]


def _dialogue(*turns, guid="g-7"):
    return {"guid": guid, "data": list(turns)}


SYSTEM = {"role": "system", "text": "안녕하세요.", "out-of-bounds": False}


@pytest.mark.parametrize(
    "data, needles",
    [
        ([], ["list of dialogues is empty"]),
        ({"a": 1}, ['"guid" is missing']),
        ([3], ["dialogues[0]", "expected a dialogue object"]),
        ([_dialogue(SYSTEM), {"data": []}], ["dialogues[1]", '"guid" is missing']),
        ([_dialogue(SYSTEM, guid="")], ['"guid" must be a non-empty string']),
        ([{"guid": "g-7"}], ['guid "g-7"', '"data"', "missing"]),
        ([{"guid": "g-7", "data": {}}], ['guid "g-7"', '"data" must be a list']),
        (
            [_dialogue(SYSTEM, {"role": "assistant", "text": "네."})],
            ['guid "g-7"', "data[1]", '"role" must be "system" or "user"', "assistant"],
        ),
        ([_dialogue({"text": "네."})], ["data[0]", '"role" is missing']),
        (
            [_dialogue(SYSTEM, {"role": "user", "out-of-bounds": False})],
            ['guid "g-7"', "data[1]", '"text" is missing'],
        ),
        ([_dialogue({"role": "user", "text": 5})], ["data[0]", '"text" must be a string']),
        (
            [_dialogue(SYSTEM, SYSTEM | {"out-of-bounds": "true"})],
            ['guid "g-7"', "data[1]", '"out-of-bounds" must be true or false', '"true"'],
        ),
        ([_dialogue(SYSTEM | {"out-of-bounds": 1})], ["data[0]", "must be true or false"]),
        (
            [_dialogue({"role": "user", "text": "네.", "out-of-bounds": True})],
            ["data[0]", "only system turns are judged"],
        ),
        ([_dialogue(SYSTEM | {"category": 3})], ['"category" must be a non-empty string']),
        ([_dialogue(SYSTEM), _dialogue(SYSTEM)], ["dialogues[1]", 'guid "g-7" already used']),
        ([_dialogue(SYSTEM) | {"turn_extras": {}}], ['"turn_extras" is reserved']),
    ],
)
def test_malformed_dialogues_name_the_guid_and_turn(tmp_path, data, needles):
    path = write_json(tmp_path / "bad.json", data)
    with pytest.raises(InputFileError) as info:
        read_carecall(path)
    message = str(info.value)
    assert message.startswith(f"{path}: ")
    for needle in needles:
        assert needle in message


@pytest.mark.parametrize(
    "content, line, needle",
    [
        ("", None, "the file is empty"),
        ("   \n", None, "the file is empty"),
        ("안녕하세요", 1, "not valid JSON"),
        ('[{"guid": "a",\n "data": [}\n]', 2, "not valid JSON"),
        ('{\n  "guid": "a",\n  "data": [,]\n}', 3, "not valid JSON"),
        ('{"guid": "a", "data": []}\n{"guid": "b", "data": [\n', 2, "not valid JSON"),
        ('{"guid": "a", "data": []}\n[1]\n', 2, "expected a JSON object"),
        (
            '{"guid": "a", "data": []}\n{"guid": "b", "data": [{"role": "user"}]}\n',
            2,
            'bad.json:2: dialogue (guid "b"): data[0]: "text" is missing',
        ),
        ('{"guid": "a", "data": []}\n\n{"guid": "a", "data": []}\n', 3, "already used by line 1"),
        ('"just a string"', None, "expected a JSON list of dialogues, found str"),
    ],
)
def test_malformed_files_name_the_line(tmp_path, content, line, needle):
    path = tmp_path / "bad.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(InputFileError) as info:
        read_carecall(path)
    assert info.value.line == line
    assert needle in str(info.value)
    assert info.value.fix


def test_missing_and_non_utf8_files(tmp_path):
    with pytest.raises(InputFileError, match="file not found"):
        read_carecall(tmp_path / "nope.json")
    path = tmp_path / "euc-kr.json"
    path.write_bytes('[{"guid": "a", "data": [{"role": "user", "text": "안녕"}]}]'.encode("euc-kr"))
    with pytest.raises(InputFileError, match="not UTF-8"):
        read_carecall(path)


def test_a_bom_is_tolerated(tmp_path):
    path = tmp_path / "bom.json"
    path.write_bytes(b"\xef\xbb\xbf" + FIXTURE.read_bytes())
    assert read_carecall(path) == read_carecall(FIXTURE)


@pytest.mark.parametrize(
    "dialogue, needle",
    [
        (
            Dialogue(id="d", turns=[Turn(role="user", text="네.", out_of_bounds=True)]),
            "user turn is marked out of bounds",
        ),
        (Dialogue(id="d", turns=[], metadata={"guid": "x"}), "would overwrite the corpus keys"),
        (
            Dialogue(
                id="d",
                turns=[Turn(role="user", text="네.")],
                metadata={"turn_extras": {"1": {"x": 1}}},
            ),
            "turns that do not exist",
        ),
        (
            Dialogue(
                id="d",
                turns=[Turn(role="user", text="네.")],
                metadata={"turn_extras": {"0": {"text": "b"}}},
            ),
            "would overwrite ['text']",
        ),
    ],
)
def test_export_refuses_what_it_cannot_write_losslessly(tmp_path, dialogue, needle):
    out = tmp_path / "out.json"
    with pytest.raises(RolecallError) as info:
        write_carecall(out, [dialogue])
    assert needle in str(info.value) and 'dialogue "d"' in str(info.value)
    assert not out.exists()
