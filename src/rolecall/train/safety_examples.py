"""K/DA pairs as safety training examples (issue #19 item 3): an implicitly offensive user
turn, then a bot reply that agrees with it or echoes it (negative, the spec's "not safe"
category) or a polite in-role redirect (positive).

Why: the out-of-bounds classifier and the generator's unlikelihood term learn "not safe"
from judged generated dialogues, whose users are never offensive (the NAACL paper's own
limitation). K/DA's implicit sentences are the offensive users those dialogues lack; what
the bot must not do after one is to agree with it or say its words back.

Per pair (``safety_examples``):

- a short care-call **context**: a bot opening line and, for about half the pairs, one
  earlier ordinary exchange (built-in lists, drawn by the seed), then the implicit
  sentence as the user's last turn;
- **negatives** from templates: an agreement that repeats the sentence whole ("맞아요,
  어르신. <sentence>"), and an agreement that echoes its *offensive words*: the content
  nouns (Kiwi, ``retrieval/tokens.py``) of the implicit sentence that its neutral sentence
  lacks, i.e. what the rewrite added (the sentence's nouns when it added none);
- **positives** from templates: an acknowledgement that does not take up the words, then
  a question on another care-call topic.

With an LLM (``llm``), each pair also gets one reply written by it for each intent
(prompts ``safety_agree`` and ``safety_redirect``), labelled by the prompt it answered.

Template replies are a recipe, not natural data: a classifier trained on them learns
these wordings, and held-out pairs measure how it carries to new sentences, not to new
reply styles. A strong ``--model`` adds replies in its own words; a weak one (the embedded
270M base model) may not follow the prompt's intent, and its labels are then wrong.

Examples are deterministic for a seed, unique (context, response), and every example of
one neutral sentence shares a ``dialogue_id`` (``kda-`` + its hash), so the classifier's
own held-out split keeps them together; ``split_pairs`` holds pairs out by neutral
sentence before any example is built.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence
from typing import Any

from rolecall.records import Example, Pair, RoleSpec, Turn

NOT_SAFE = "not safe"  # the paper's name of the safety error category
OPENINGS = [
    "안녕하세요, 어르신. 요즘 어떻게 지내세요?",
    "안녕하세요, 어르신. 돌봄 안부 전화 드렸어요. 잘 지내셨어요?",
    "어르신, 안녕하세요. 오늘 하루는 어떠셨어요?",
    "안녕하세요. 오늘도 안부 여쭈려고 전화드렸어요. 별일 없으시죠?",
]
# (user, system) ordinary exchanges that may come before the offensive turn
EXCHANGES = [
    ("그냥 그렇지 뭐. 별일 없어.", "별일 없으셨다니 다행이에요. 식사는 챙겨 드셨어요?"),
    ("아까 텔레비전 좀 봤어.", "그러셨군요. 요즘 즐겨 보시는 프로그램이 있으세요?"),
    ("무릎이 좀 쑤시네.", "무릎이 불편하시군요. 무리하지 마시고 따뜻하게 해 주세요."),
    ("오늘 복지관에 다녀왔어.", "다녀오셨군요. 복지관에서는 어떤 걸 하셨어요?"),
    ("잠을 통 못 잤어.", "잠을 설치셨군요. 낮에 잠깐이라도 쉬시면 좋겠어요."),
    ("산책 좀 하고 왔지.", "산책 다녀오셨군요. 바깥 공기는 괜찮았어요?"),
]
AGREE = [
    "맞아요, 어르신. {sentence}",
    "그러게요. {sentence} 저도 그렇게 생각해요.",
    "어르신 말씀이 딱 맞네요. {sentence}",
]
ECHO = [
    "맞아요, {word} 진짜 문제예요.",
    "정말 {word} 같은 것들은 어쩔 수가 없네요.",
    "저도 {word} 얘기 들으면 한심하다는 생각이 들어요.",
]
ACKNOWLEDGE = [
    "그런 일로 마음이 많이 상하셨나 봐요.",
    "속상하신 마음은 알겠어요, 어르신.",
    "많이 답답하셨던 것 같아요.",
    "그렇게 느끼실 수도 있겠어요.",
]
REDIRECT = [
    "오늘 식사는 잘 챙겨 드셨어요?",
    "요즘 잠은 잘 주무세요?",
    "요즘 즐겨 보시는 프로그램 있으세요?",
    "최근에 산책은 다녀오셨어요?",
    "오늘 몸은 좀 어떠세요?",
]
NOUN_TAGS = frozenset({"NNG", "NNP"})


def safety_category(spec: RoleSpec | None) -> str:
    """The error category of the spec's ``safety`` category; the paper's ``not safe``
    without a spec or without that category."""
    if spec is not None:
        for category in spec.categories:
            if category.name == "safety":
                return category.error_category
    return NOT_SAFE


def pair_key(pair: Pair) -> str:
    """What keeps a neutral sentence's rewrites together (its examples' ``dialogue_id``)."""
    return "kda-" + hashlib.sha256(pair.neutral.strip().encode()).hexdigest()[:12]


def unique_pairs(pairs: Sequence[Pair]) -> list[Pair]:
    """``pairs`` without repeated implicit sentences (the first one kept)."""
    seen, out = set(), []
    for pair in pairs:
        toxic = pair.toxic.strip()
        if toxic and toxic not in seen:
            seen.add(toxic)
            out.append(pair)
    return out


def split_pairs(
    pairs: Sequence[Pair], test_share: float, seed: int
) -> tuple[list[Pair], list[Pair]]:
    """(train, test) by neutral sentence (the same hash split as ``detox train``), after
    dropping repeated implicit sentences: no sentence is on both sides."""
    from rolecall.train.data import split_by

    pairs = unique_pairs(pairs)
    if test_share <= 0:
        return pairs, []
    return split_by(pairs, key=pair_key, held_out=test_share, seed=seed)


def nouns(text: str) -> list[str]:
    """The nouns of ``text`` as written, a noun with the prefixes and suffixes glued to it
    (Kiwi): ``노인네`` stays one word (노인 + 네), as do ``개소리`` and ``급식충``; the
    plural ``들`` is left off."""
    from rolecall.korean import kiwi

    words: list[str] = []
    run, has_noun, end = "", False, -1
    for m in kiwi().tokenize(text, normalize_coda=True):
        tag, glued = m.tag.split("-")[0], m.start == end
        if tag in NOUN_TAGS or tag == "XPN" or (tag == "XSN" and m.form != "들" and glued):
            if not glued and run:  # a new word starts
                words += [run] if has_noun else []
                run, has_noun = "", False
            run, has_noun = run + m.form, has_noun or tag in NOUN_TAGS
        else:
            words += [run] if run and has_noun else []
            run, has_noun = "", False
        end = m.start + m.len
    words += [run] if run and has_noun else []
    return list(dict.fromkeys(words))


def offensive_words(pairs: Sequence[Pair]) -> list[list[str]]:
    """Per pair, the nouns the implicit sentence has and its neutral sentence lacks (what
    the K/DA rewrite added); the implicit sentence's nouns when it added none."""
    out = []
    for pair in pairs:
        found, neutral = nouns(pair.toxic), set(nouns(pair.neutral))
        out.append([w for w in found if w not in neutral] or found)
    return out


def context(pair: Pair, rng: random.Random) -> list[Turn]:
    """A short care call that ends with the implicit sentence as the user's turn."""
    turns = [Turn(role="system", text=rng.choice(OPENINGS))]
    if rng.random() < 0.5:
        user, system = rng.choice(EXCHANGES)
        turns += [Turn(role="user", text=user), Turn(role="system", text=system)]
    return turns + [Turn(role="user", text=pair.toxic.strip())]


def template_negatives(sentence: str, words: Sequence[str], rng: random.Random) -> list[str]:
    """An agreement repeating ``sentence`` and, when there are ``words``, one echoing one."""
    replies = [rng.choice(AGREE).format(sentence=sentence.strip())]
    if words:
        replies.append(rng.choice(ECHO).format(word=rng.choice(list(words))))
    return replies


def template_positives(rng: random.Random, count: int = 2) -> list[str]:
    """``count`` different acknowledgement + redirect question replies."""
    combos = [(a, r) for a in ACKNOWLEDGE for r in REDIRECT]
    return [f"{a} {r}" for a, r in rng.sample(combos, min(count, len(combos)))]


def llm_replies(llm: Any, histories: Sequence[list[Turn]], name: str, language: str, seed: int):
    """One reply per history from ``llm`` prompted with template ``name`` (first line of
    the completion, stripped; empty when it wrote nothing or the call failed)."""
    from rolecall.llm import Request, SamplingParams
    from rolecall.prompts import load_template

    template = load_template(name, language)
    params = SamplingParams(temperature=0.7, top_p=0.9, max_tokens=64, seed=seed, stop=("\n",))
    requests = [Request(prompt=template.render(history=h), params=params) for h in histories]
    out = []
    for samples in llm.generate(requests):
        completion = samples[0].completion
        text = completion.text.strip().split("\n")[0].strip() if completion else ""
        out.append(text)
    return out


def safety_examples(
    pairs: Sequence[Pair],
    seed: int = 0,
    spec: RoleSpec | None = None,
    llm: Any = None,
    positives: int = 2,
) -> list[Example]:
    """Negatives and positives for every pair (see the module docstring), pair by pair;
    deterministic for ``seed`` and free of repeated (context, response) examples."""
    pairs = unique_pairs(pairs)
    category = safety_category(spec)
    words = offensive_words(pairs) if pairs else []
    rows: list[tuple[str, list[Turn], list[str], list[str]]] = []
    for number, pair in enumerate(pairs):
        # subtle: a str seed is hashed the same way in every process (not by hash())
        rng = random.Random(f"{seed}\x1f{pair.neutral}\x1f{pair.toxic}\x1f{number}")
        history = context(pair, rng)
        bad = template_negatives(pair.toxic, words[number], rng)
        rows.append((pair_key(pair), history, bad, template_positives(rng, positives)))
    if llm is not None and rows:
        language = spec.language if spec is not None else "ko"
        histories = [history for _, history, _, _ in rows]
        agreeing = llm_replies(llm, histories, "safety_agree", language, seed)
        redirecting = llm_replies(llm, histories, "safety_redirect", language, seed)
        for (_, _, bad, good), agree, redirect in zip(rows, agreeing, redirecting):
            bad += [agree] if agree else []
            good += [redirect] if redirect else []
    examples, seen = [], set()
    for key, history, bad, good in rows:
        for response, label in [(r, "negative") for r in bad] + [(r, "positive") for r in good]:
            identity = (tuple(t.text for t in history), response)
            if identity in seen:
                continue
            seen.add(identity)
            examples.append(
                Example(
                    history=history,
                    response=response,
                    label=label,
                    category=category if label == "negative" else None,
                    dialogue_id=key,
                )
            )
    return examples
