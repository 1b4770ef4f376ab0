"""The labelling guidelines an item page shows beside the item: for a dialogue, each error
category (with its key) and the parts of the role spec that map to it, each with its
description and forbidden examples; the questions of a pair and of a bot turn are defined
in the templates themselves (``_guidelines.html``).

One error category often covers several parts of the spec (care-call's "policy violation"
covers temporality, unsupported features and privacy): the guidelines say which.
"""

from __future__ import annotations

from dataclasses import dataclass

from rolecall.records import Category, RoleSpec
from rolecall.spec import display_name
from rolecall.web.pace import category_keys


@dataclass(frozen=True)
class Guideline:
    key: str  # the category's letter on the item page ("" past the alphabet)
    shown: str  # the error category's name in the page's language
    parts: list[tuple[str, Category]]  # (the part's name there, the part) in spec order


def guidelines(spec: RoleSpec, language: str) -> list[Guideline]:
    """Every error category in the spec's order, with the spec parts that map to it."""
    return [
        Guideline(
            key=key,
            shown=shown,
            parts=[
                (display_name(spec, part.name, language), part)
                for part in spec.categories
                if part.error_category == category
            ],
        )
        for key, category, shown in category_keys(spec, language)
    ]
