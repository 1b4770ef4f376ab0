"""The dashboard's rates from labels (web/label_rates.py): the random share only, and
agreement per error category."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from rolecall.store import Annotation, Item, ItemKind, User, session
from rolecall.web.label_rates import category_agreement, label_error_rates


def _label(db, item_id: int, user_id: int, payload: dict, share: str | None) -> None:
    db.add(Annotation(item_id=item_id, user_id=user_id, kind="oob", payload=payload, share=share))


def test_error_rates_read_the_random_share_and_alpha_reads_each_category(page_site):
    engine, project_id = page_site
    oob = {"first_oob": 2, "category": "policy violation"}
    style = {"first_oob": 2, "category": "style"}
    clean = {"first_oob": None, "category": None}
    with session(engine) as db:
        ann1, ann2 = (
            db.scalar(select(User.id).where(User.username == n)) for n in ("ann1", "ann2")
        )
        ids = []
        for _ in range(6):
            item = Item(project_id=project_id, kind=ItemKind.DIALOGUE, payload={"turns": []})
            db.add(item)
            db.flush()
            ids.append(item.id)
        # random share: 1 of 3 out of bounds; the ranked (hard) items are all out of bounds
        for item_id, label in zip(ids[:3], (oob, clean, clean)):
            _label(db, item_id, ann1, label, "random")
        for item_id in ids[3:]:
            _label(db, item_id, ann1, oob, "ranked")
        # doubly labelled: two agree on policy violation, one splits policy vs style
        _label(db, ids[0], ann2, oob, "random")
        _label(db, ids[3], ann2, style, "ranked")
        _label(db, ids[4], ann2, oob, "ranked")
    with session(engine) as db:
        rows = {r["question"]: r for r in label_error_rates(db, project_id)}
        dialogue = rows["out_of_bounds"]
        assert (dialogue["errors"], dialogue["sampled"], dialogue["ranked_left_out"]) == (1, 3, 3)
        assert dialogue["error_rate"] == pytest.approx(1 / 3) and dialogue["low"] < 1 / 3
        assert (
            rows["not_consistent"]["sampled"] == 0 and rows["not_consistent"]["error_rate"] is None
        )
        agreement = category_agreement(db, project_id, ["policy violation", "style", "safety"])
    assert [r["category"] for r in agreement] == ["category", "policy violation", "style", "safety"]
    assert all(r["items_with_2_or_more"] == 3 for r in agreement)
    policy = agreement[1]["krippendorff_alpha"]
    assert policy is not None and policy < 1.0  # one of three doubly labelled items split
    assert agreement[3]["krippendorff_alpha"] is None  # nobody chose safety: undefined
