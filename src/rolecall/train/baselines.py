"""The classic baseline every trained classifier is compared with: character n-gram TF-IDF +
logistic regression (scikit-learn), over single texts or text pairs.

It is also a judge kind in its own right (``rolecall train implicit-judge --backbone
tfidf``): it trains in seconds on a CPU, predicts thousands of texts a second, and on the
shared Korean corpora it is as good as the frozen-Gemma heads (``docs/trained-judges.md``).

Texts are read in one or more *views*, each its own TF-IDF vocabulary, side by side:

- ``chars``: ``char_wb`` n-grams (1-4 by default): Korean words carry their particles and
  endings attached, and disguised swear words (``시1발``, ``ㅅㅂ``) share character n-grams
  with the plain ones, so characters are the first unit. Alone, this is the classic
  baseline (``BASELINE_VIEWS``) every learned judge is measured against.
- ``morphemes``: Kiwi morphemes with their part-of-speech tag (``먹/VV``, ``어요/EF``),
  unigrams and bigrams: the stem and the ending apart, whatever the spelling joined.
- ``words``: whitespace tokens, unigrams and bigrams.
- ``sentence``: not n-grams but the bundled sentence encoder's 512-dim vector
  (``retrieval/sentence_vectors.py``; needs ``rolecall[models]``): what the text means,
  whatever its words. Measured per judge in ``bench/judges.py``; the K/DA consistency judge
  takes it by default (``kda_judges.JUDGE_VIEWS``).
- ``e5``: the second bundled encoder's 384-dim vector (multilingual-e5-small,
  ``retrieval/e5_vectors.py``): a full Korean vocabulary, slower per text.
- ``content`` (pairs only): not n-grams but two shares, the content morphemes the second
  text added and those it dropped (``content_changes`` below: Kiwi, spacing ignored): a
  copy, a respaced copy or a change of speech level adds none, a rewrite adds words. The
  K/DA consistency judge takes it by default.

A *pair* (first, second) is read as the second text's n-grams, the element-wise product
of both texts' vectors (which n-grams they share: a linear model cannot see that from the
two vectors side by side), their cosine similarity (the mean over the n-gram views) and,
with ``added``, the second text's n-grams that the first lacks (what a rewrite put in: a
swear word, or only a space). With a dense view (``sentence``, ``e5``), the second text's
sentence vector and the two vectors' cosine beside (meaning kept: a near-copy lies near 1, a
rewrite that adds an insult lower, an unrelated text near 0). With ``content``, its two
shares, each as a column and one-hot bins as the cosine.

A model directory holds ``model.json`` (kind ``tfidf``, settings, metrics) and
``tfidf.npz`` (the vocabulary, IDF weights and the regression's coefficients): arrays, not
a pickle, so opening a model directory never runs code from it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import Field, model_validator

from rolecall.errors import InputFileError
from rolecall.rundir import write_json
from rolecall.train.loop import MODEL_FILE, Settings, read_info

KIND = "tfidf"
ARRAYS = "tfidf.npz"
BINS = 10  # of the pair cosine and of the content shares
TextOrPair = str | tuple[str, str]
View = Literal["chars", "morphemes", "words", "sentence", "e5", "content"]
BASELINE_VIEWS: list[View] = ["chars"]
SENTENCE = "sentence"  # a view that is not n-grams (retrieval.sentence_vectors.NAME)
E5 = "e5"  # the second encoder's vector (retrieval.e5_vectors.NAME)
DENSE = (SENTENCE, E5)  # the views that are sentence vectors, in the order they are read
CONTENT = "content"  # pairs only: content morphemes added and dropped (content_changes)
NOT_NGRAMS = (*DENSE, CONTENT)


class TfidfSettings(Settings):
    task: str = Field("text", description="what the labels mean (implicit, consistency, ...)")
    labels: list[str] = Field(min_length=2, description="class names, in column order")
    pair: bool = Field(False, description="inputs are (first, second) text pairs")
    added: bool = Field(
        True,
        description="pairs: also the second text's n-grams the first lacks (a model saved "
        "without this setting reads pairs without them)",
    )
    views: list[View] = Field(
        default_factory=lambda: list(BASELINE_VIEWS),
        min_length=1,
        description="chars (the classic baseline), morphemes (Kiwi), words, sentence (the "
        "bundled sentence encoder, USE-m), e5 (multilingual-e5-small), content (pairs: "
        "content morphemes added and dropped); "
        "side by side",
    )
    ngram_min: int = Field(1, ge=1, description="character n-grams of the chars view")
    ngram_max: int = Field(4, ge=1)
    max_features: int = Field(100_000, ge=1)
    c: float = Field(4.0, gt=0, description="inverse regularisation strength")
    class_weight: Literal["none", "balanced"] = "balanced"
    seed: int = 0

    @model_validator(mode="after")
    def _content_reads_pairs(self) -> TfidfSettings:
        if CONTENT in self.views and not self.pair:
            raise ValueError("the content view compares the two texts of a pair (pair=True)")
        return self


class TfidfModel:
    """``fit(inputs, labels)``, ``predict_proba(inputs)``, ``save(dir)``, ``load(dir)``."""

    KIND = KIND

    def __init__(self, settings: TfidfSettings, vectorizers: Any = None, regression: Any = None):
        self.settings, self.vectorizers, self.regression = settings, vectorizers, regression

    @property
    def labels(self) -> list[str]:
        return list(self.settings.labels)

    def fit(self, inputs: Sequence[TextOrPair], labels: Sequence[str]) -> dict[str, Any]:
        """Fit on texts (or pairs) and their label names; returns the training log loss."""
        from sklearn.linear_model import LogisticRegression
        from sklearn.metrics import log_loss

        unknown = sorted(set(labels) - set(self.settings.labels))
        if unknown:
            raise ValueError(f"labels {unknown} are not among {self.settings.labels}")
        if len(set(labels)) < 2:
            raise ValueError("training needs at least two different labels")
        texts = [t for item in inputs for t in self._texts(item)]
        self.vectorizers = {view: _vectorizer(self.settings, view) for view in self.lexical}
        for view, vectorizer in self.vectorizers.items():
            vectorizer.fit(_read(view, texts))
        matrix = self._matrix(inputs)
        targets = np.array([self.settings.labels.index(y) for y in labels])
        weight = None if self.settings.class_weight == "none" else "balanced"
        self.regression = LogisticRegression(
            C=self.settings.c, class_weight=weight, max_iter=2000, random_state=self.settings.seed
        )
        # subtle: a label absent from the training data still gets its column (probability
        # 0), so every model of one task has the same columns
        self.regression.fit(matrix, targets)
        proba = np.zeros((len(targets), len(self.labels)))
        proba[:, self.regression.classes_] = self.regression.predict_proba(matrix)
        return {
            "train_examples": len(targets),
            "features": sum(len(v.vocabulary_) for v in self.vectorizers.values()),
            "train_log_loss": float(log_loss(targets, proba, labels=range(len(self.labels)))),
        }

    def predict_proba(self, inputs: Sequence[TextOrPair]) -> np.ndarray:
        """[N, len(labels)] probabilities, columns in ``labels`` order."""
        if self.regression is None:
            raise ValueError("the model is not trained")
        out = np.zeros((len(inputs), len(self.labels)))
        if len(inputs):
            out[:, self.regression.classes_] = self.regression.predict_proba(self._matrix(inputs))
        return out

    def predict(self, inputs: Sequence[TextOrPair]) -> list[str]:
        return [self.labels[i] for i in self.predict_proba(inputs).argmax(axis=1)]

    # ---- saving and loading ------------------------------------------------------------

    def save(self, directory: str | Path, metrics: dict | None = None) -> Path:
        from rolecall import __version__

        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        arrays = {}
        for view, vectorizer in self.vectorizers.items():
            vocabulary = sorted(vectorizer.vocabulary_, key=vectorizer.vocabulary_.get)
            arrays[f"vocabulary_{view}"] = np.array(vocabulary, dtype=object).astype(str)
            arrays[f"idf_{view}"] = vectorizer.idf_
        np.savez_compressed(
            directory / ARRAYS,
            **arrays,
            coef=self.regression.coef_,
            intercept=self.regression.intercept_,
            classes=self.regression.classes_,
        )
        info = {
            "kind": KIND,
            "settings": self.settings.model_dump(mode="json"),
            "metrics": metrics or {},
            "rolecall": __version__,
        }
        if SENTENCE in self.views:
            from rolecall.retrieval.sentence_vectors import PACKAGE, PACKAGE_VERSION

            info["sentence_encoder"] = {"package": PACKAGE, "version": PACKAGE_VERSION}
        if E5 in self.views:
            from rolecall.retrieval import e5_vectors

            info["e5_encoder"] = {
                "package": e5_vectors.PACKAGE,
                "version": e5_vectors.PACKAGE_VERSION,
            }
        write_json(directory / MODEL_FILE, info)
        return directory

    @classmethod
    def load(cls, directory: str | Path) -> TfidfModel:
        from sklearn.linear_model import LogisticRegression

        directory = Path(directory)
        info = read_info(directory, KIND, "rolecall train implicit-judge --backbone tfidf")
        # a model saved before ``added`` existed reads pairs without that block
        settings = TfidfSettings.model_validate({"added": False, **info["settings"]})
        try:
            arrays = np.load(directory / ARRAYS, allow_pickle=False)
            vectorizers = {view: _vectorizer(settings, view) for view in _lexical(settings)}
            for view, vectorizer in vectorizers.items():
                # a model saved before views holds one unnamed (chars) vocabulary
                key = view if f"idf_{view}" in arrays else None
                terms = arrays[f"vocabulary_{key}" if key else "vocabulary"]
                vectorizer.vocabulary_ = {str(term): i for i, term in enumerate(terms)}
                vectorizer.idf_ = arrays[f"idf_{key}" if key else "idf"]
            coef, intercept, classes = arrays["coef"], arrays["intercept"], arrays["classes"]
        except (OSError, KeyError, ValueError) as exc:
            raise InputFileError(
                directory / ARRAYS, f"cannot be read: {exc}", fix="train the model again"
            ) from None
        model = cls(settings, vectorizers)
        model.regression = LogisticRegression()
        model.regression.coef_, model.regression.intercept_ = coef, intercept
        model.regression.classes_ = classes
        return model

    # ---- internals ---------------------------------------------------------------------

    @property
    def views(self) -> list[str]:
        return list(dict.fromkeys(self.settings.views))

    @property
    def lexical(self) -> list[str]:
        return _lexical(self.settings)

    def _texts(self, item: TextOrPair) -> list[str]:
        if self.settings.pair:
            if isinstance(item, str) or len(item) != 2:
                raise ValueError("a pair model reads (first, second) pairs")
            return [item[0], item[1]]
        if not isinstance(item, str):
            raise ValueError("a text model reads strings")
        return [item]

    def _ngrams(self, texts: list[str]) -> Any:
        """The n-gram views side by side (each view's rows L2-normalised), or None."""
        from scipy import sparse

        if not self.lexical:
            return None
        blocks = [self.vectorizers[v].transform(_read(v, texts)) for v in self.lexical]
        return sparse.hstack(blocks).tocsr()

    @property
    def dense(self) -> list[str]:
        return [view for view in DENSE if view in self.views]

    def _sentences(self, texts: list[str], view: str) -> np.ndarray:
        """The dense view's vectors of ``texts`` (each distinct text encoded once)."""
        if view == E5:
            from rolecall.retrieval.e5_vectors import e5_vectors

            return e5_vectors(texts)
        from rolecall.retrieval.sentence_vectors import vectors_of_unique

        return vectors_of_unique(texts)

    def _matrix(self, inputs: Sequence[TextOrPair]) -> Any:
        from scipy import sparse

        texts = [self._texts(item) for item in inputs]
        if not self.settings.pair:
            first = [t[0] for t in texts]
            blocks = [self._ngrams(first), *(self._sentences(first, v) for v in self.dense)]
            return sparse.hstack([sparse.csr_matrix(b) for b in blocks if b is not None]).tocsr()
        firsts, seconds = [t[0] for t in texts], [t[1] for t in texts]
        parts: list[Any] = []
        if self.lexical:
            first, second = self._ngrams(firsts), self._ngrams(seconds)
            shared = first.multiply(second).tocsr()
            # each view's rows are L2-normalised, so the row sums of the product over the
            # views are the sum of their cosines; one-hot bins of the mean too, because
            # "related but not the same" (a rewrite) lies between unrelated (low) and a
            # copy or paraphrase (high): no single weight can say that
            cosine = np.asarray(shared.sum(axis=1)).ravel() / len(self.lexical)
            parts += [second, shared, *_binned(cosine)]
            if self.settings.added:
                parts.append(second - second.multiply(first.sign()))
        for view in self.dense:
            # a sentence on both sides: encoded once
            both = self._sentences(firsts + seconds, view)
            u, v = both[: len(firsts)], both[len(firsts) :]
            parts += [sparse.csr_matrix(v), *_binned((u * v).sum(axis=1))]
        if CONTENT in self.views:
            changes = content_changes(firsts, seconds)
            parts += [*_binned(changes[:, 0]), *_binned(changes[:, 1])]
        return sparse.hstack(parts).tocsr()


def _lexical(settings: TfidfSettings) -> list[str]:
    """The n-gram views (each its own TF-IDF vocabulary), without repeats."""
    return [view for view in dict.fromkeys(settings.views) if view not in NOT_NGRAMS]


def _binned(cosine: np.ndarray) -> list[Any]:
    """A value in [0, 1] (a cosine, a share) as a column and as one-hot bins of ``BINS``."""
    from scipy import sparse

    bins = np.clip((cosine * BINS).astype(int), 0, BINS - 1)
    onehot = sparse.csr_matrix(
        (np.ones(len(bins)), (np.arange(len(bins)), bins)), shape=(len(bins), BINS)
    )
    return [sparse.csr_matrix(cosine[:, None]), onehot]


def _vectorizer(settings: TfidfSettings, view: str) -> Any:
    from sklearn.feature_extraction.text import TfidfVectorizer

    if view == "chars":
        low, high = settings.ngram_min, settings.ngram_max
        return TfidfVectorizer(
            analyzer="char_wb",
            ngram_range=(low, max(low, high)),
            max_features=settings.max_features,
            sublinear_tf=True,
        )
    # morphemes and words: tokens joined by spaces (``_read``), unigrams and bigrams
    return TfidfVectorizer(
        token_pattern=r"\S+",
        lowercase=False,
        ngram_range=(1, 2),
        max_features=settings.max_features,
        sublinear_tf=True,
    )


def _read(view: str, texts: list[str]) -> list[str]:
    """The texts as the view's vectorizer reads them (Kiwi analyses each distinct text
    once: the sentences of pairs repeat)."""
    if view != "morphemes":
        return texts
    from rolecall.korean import kiwi

    unique = list(dict.fromkeys(texts))
    analysed = kiwi().tokenize(unique) if unique else []
    read = {u: " ".join(f"{t.form}/{t.tag}" for t in tokens) for u, tokens in zip(unique, analysed)}
    return [read[t] for t in texts]


# ---- the content view: what a rewrite added and dropped ----------------------------

# Kiwi tag prefixes that carry grammar, not content: particles, endings, suffixes and the
# punctuation marks (SW, symbols such as ㅋㅋ or ㅅㅂ, and SL/SH/SN stay content)
FUNCTION_TAGS = ("J", "E", "XS", "SF", "SP", "SS", "SE", "SO")


def content_morphemes(texts: Sequence[str]) -> list[Counter]:
    """Each text's content morphemes (``form/TAG``, counted), analysed without spaces;
    each distinct text analysed once."""
    from rolecall.korean import kiwi

    unique = list(dict.fromkeys(texts))
    found = {}
    analysed = kiwi().tokenize([t.replace(" ", "") for t in unique]) if unique else []
    for text, tokens in zip(unique, analysed):
        found[text] = Counter(
            f"{t.form}/{t.tag}" for t in tokens if not t.tag.startswith(FUNCTION_TAGS)
        )
    return [found[t] for t in texts]


def added_and_dropped(first: Counter, second: Counter) -> tuple[float, float]:
    """(share of ``second``'s morphemes not in ``first``, share of ``first``'s not in
    ``second``), counting repeats; 0 for an empty side."""
    added = sum((second - first).values()) / max(sum(second.values()), 1)
    dropped = sum((first - second).values()) / max(sum(first.values()), 1)
    return added, dropped


def content_changes(firsts: Sequence[str], seconds: Sequence[str]) -> np.ndarray:
    """[n, 2]: (added, dropped) of each pair: the share of the second text's content
    morphemes the first lacks, and of the first's the second lacks.

    K/DA's consistency filter fails a candidate that only paraphrases its sentence (a copy,
    a respaced or repunctuated copy, another speech level); a real rewrite puts words in
    (an insult, community slang, ``ㅅㅂ``). Both texts are analysed with their spaces taken
    out, so loose spacing (``3박 4일`` / ``3박4일``) is no change; an ending or a particle
    (``먹었어요`` -> ``먹었어``) is not content; a dropped intensifier (``정말``) is a
    dropped morpheme. A plain "same letters" flag instead taught the consistency judge
    that only exact near-copies fail, and it let the rewordings through
    (docs/trained-judges.md, issue #32)."""
    both = content_morphemes(list(firsts) + list(seconds))
    n = len(firsts)
    rows = [added_and_dropped(both[i], both[n + i]) for i in range(n)]
    return np.array(rows, dtype=float).reshape(n, 2)
