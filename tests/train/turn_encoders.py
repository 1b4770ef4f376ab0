"""What the tests of the sentence-encoder backbones (``sentence``, ``e5``) share: a
classifier and a retriever trained over one, saved and loaded back scoring the same."""

from __future__ import annotations

import numpy as np

from rolecall.train.backbones.features import Features
from rolecall.train.classifier import Classifier, ClassifierSettings
from rolecall.train.data import context_text
from rolecall.train.loop import TrainConfig
from rolecall.train.retriever import Retriever, RetrieverSettings, fit_retriever
from tests.dialogue_data import make_examples


def heads_train_and_load_back(encoder, encoder_type: type, name: str, tmp_path) -> None:
    """A classifier learns over ``encoder`` and loads back as ``encoder_type``; a bi-encoder
    retriever saved names the backbone ``name`` and encodes the same after loading."""
    examples = make_examples()
    model = Classifier.create(encoder, ClassifierSettings(width=16), Features(encoder))
    assert model.settings.pool == "pair"
    history = model.fit(examples, TrainConfig(epochs=10, batch_size=8, lr=1e-2), progress=False)
    assert history["last_loss"] < history["first_loss"]
    model.save(tmp_path / "classifier")
    contexts, responses = [e.history for e in examples], [e.response for e in examples]
    again = Classifier.load(tmp_path / "classifier")
    assert isinstance(again.backbone, encoder_type)
    assert np.allclose(
        again.predict_proba(contexts, responses),
        model.predict_proba(contexts, responses),
        atol=1e-5,
    )
    pairs = [(context_text(e.history), e.response) for e in examples if e.label == "positive"]
    retriever, _ = fit_retriever(
        pairs,
        encoder,
        RetrieverSettings(kind="bi", dim=32),
        TrainConfig(epochs=2, batch_size=8),
        progress=False,
        cache_dir=tmp_path / "cache",
    )
    retriever.save(tmp_path / "retriever")
    loaded = Retriever.load(tmp_path / "retriever", tmp_path / "cache")
    assert loaded.settings.backbone == name
    texts = [r for _, r in pairs[:4]]
    assert np.allclose(
        loaded.encode_candidates(texts), retriever.encode_candidates(texts), atol=1e-4
    )
