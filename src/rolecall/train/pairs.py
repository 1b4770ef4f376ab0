"""What every model over ``[CLS] context [SEP] response`` pairs shares: settings, the head,
pooling, pair encoding (through ``Features``: cached for a frozen backbone), head training
and loading, held-out splits. Used by ``classifier.py`` and ``reranker.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from rolecall.errors import (
    ConfigError,
    InputFileError,
    describe_validation,
)
from rolecall.progress import progress_bar
from rolecall.records import Example, Turn
from rolecall.train import distributed
from rolecall.train.backbones.base import Backbone, torch_module
from rolecall.train.backbones.features import Features, last_index, mean_pool
from rolecall.train.backbones.load import load_backbone
from rolecall.train.checkpoints import Checkpoints, digest
from rolecall.train.data import context_text, split_by
from rolecall.train.loop import TrainConfig, fit, read_model, save_model
from rolecall.train.settings import PairSettings as PairSettings  # re-exported

Context = str | Sequence[Turn]


def resolve_backbone(backbone: Backbone | str) -> Backbone:
    """A ``Backbone`` as given, or loaded from a path / ``"embedded"``."""
    return backbone if isinstance(backbone, Backbone) else load_backbone(backbone)


def resolve_pool(pool: str, backbone: Backbone) -> str:
    """``auto`` becomes what suits the backbone (``Backbone.default_pool``)."""
    return backbone.default_pool if pool == "auto" else pool


# pooled width in hidden sizes
POOL_WIDTH = {"mean": 1, "mean+first": 2, "mean+last": 2, "pair": 5}


def pool_states(hidden: Any, mask: Any, pool: str) -> Any:
    """[B, T, H] states, [B, T] mask -> [B, H] (mean), [B, 2H] (mean and one token) or,
    for ``pair`` (a sentence encoder's states: one per context turn, the response last),
    [B, 5H]: the context turns' mean, the last turn c, the response r, c * r and |c - r|.
    The last token is ``features.last_index``'s.
    """
    torch = torch_module()
    mean = mean_pool(hidden, mask)
    if pool == "mean":
        return mean
    if pool == "mean+first":
        return torch.cat([mean, hidden[:, 0]], dim=-1)
    rows = torch.arange(len(hidden), device=hidden.device)
    last = last_index(mask)
    if pool == "mean+last":
        return torch.cat([mean, hidden[rows, last]], dim=-1)
    if pool == "pair":
        response, turn = hidden[rows, last], hidden[rows, (last - 1).clamp(min=0)]
        context = mask.clone()
        context[rows, last] = False
        return torch.cat(
            [mean_pool(hidden, context), turn, response, turn * response, (turn - response).abs()],
            dim=-1,
        )
    raise ValueError(f"unknown pool {pool!r}")


def build_head(backbone: Backbone, settings: PairSettings, outputs: int) -> Any:
    """LayerNorm -> dropout -> linear -> GELU -> dropout -> linear, on the pooled vector.

    The norm matters for frozen decoders (Gemma's states run to the hundreds); the two
    dropouts are what MC dropout samples (``serve/unanswerable.py``).
    """
    nn = torch_module().nn
    size = backbone.hidden_size * POOL_WIDTH[settings.pool]
    head = nn.Sequential(
        nn.LayerNorm(size),
        nn.Dropout(settings.dropout),
        nn.Linear(size, settings.width),
        nn.GELU(),
        nn.Dropout(settings.dropout),
        nn.Linear(settings.width, outputs),
    )
    return head.to(model_device(backbone))


def model_device(backbone: Backbone) -> Any:
    return backbone.device


def as_context(context: Context, max_turns: int | None) -> str:
    """Context text as the models read it: a string is taken as already made."""
    return context if isinstance(context, str) else context_text(context, max_turns)


def encode_pairs(
    backbone: Backbone,
    features: Features | None,
    contexts: Sequence[str],
    responses: Sequence[str],
    settings: PairSettings,
    batch_size: int = 32,
    progress: bool = False,
) -> Any:
    """Pooled pair vectors [N, P], without gradients and with the backbone in eval mode.

    With ``features`` a frozen backbone's states come from (and go to) its cache; without
    it the backbone runs directly, so a long-running server does not keep every pair's
    states in memory.
    """
    torch = torch_module()
    if len(contexts) != len(responses):
        raise ValueError(f"{len(contexts)} contexts but {len(responses)} responses")
    backbone.train(False)
    device, chunks = model_device(backbone), []
    with (
        torch.no_grad(),
        progress_bar(len(contexts), "features (pairs)", enabled=progress) as advance,
    ):
        for start in range(0, len(contexts), batch_size):
            firsts = list(contexts[start : start + batch_size])
            seconds = list(responses[start : start + batch_size])
            if features is not None:
                hidden, mask = features.pairs(
                    firsts, seconds, settings.max_length, settings.response_max
                )
            else:
                hidden, mask = backbone.states(
                    backbone.batch_pairs(
                        firsts, seconds, settings.max_length, settings.response_max
                    )
                )
            chunks.append(pool_states(hidden.to(device), mask.to(device), settings.pool))
            advance(len(firsts))
    if features is not None:
        features.flush()
    if not chunks:
        width = backbone.hidden_size * POOL_WIDTH[settings.pool]
        return torch.zeros((0, width), device=device)
    return torch.cat(chunks)


def train_head(
    head: Any,
    backbone: Backbone,
    features: Features,
    groups: Sequence[Sequence[tuple[str, str]]],
    targets: Sequence[int],
    settings: PairSettings,
    config: TrainConfig,
    criterion: Callable[[Any, Any], Any],
    progress: bool,
    description: str,
    checkpoints: Checkpoints | None = None,
) -> dict[str, Any]:
    """Train ``head`` on groups of pairs (all of one size G) through ``loop.fit``.

    ``criterion(outputs [B, G, O], targets [B])`` gives the loss. A frozen backbone's
    pooled vectors are computed once up front (every epoch then costs only the head); a
    trainable one is run on every batch, with gradients.
    """
    torch = torch_module()
    size = len(groups[0])
    device = model_device(backbone)
    target = torch.tensor(list(targets), dtype=torch.long, device=device)
    table = None
    if backbone.frozen:
        flat = [pair for group in groups for pair in group]
        features, table = distributed.filled_by_rank0(
            features,
            lambda features: encode_pairs(
                backbone,
                features,
                [c for c, _ in flat],
                [r for _, r in flat],
                settings,
                features.batch_size,
                distributed.shows_progress(progress),
            ),
        )
        table = table.view(len(groups), size, -1)

    def loss_of(batch: list[int]) -> Any:
        if table is not None:
            vectors = table[batch]
        else:
            flat = [pair for i in batch for pair in groups[i]]
            hidden, mask = features.pairs(
                [c for c, _ in flat],
                [r for _, r in flat],
                settings.max_length,
                settings.response_max,
            )
            vectors = pool_states(hidden, mask, settings.pool).view(len(batch), size, -1)
        return criterion(head(vectors), target[batch])

    if checkpoints is not None:  # fit sees indices: the pairs themselves make the run
        made_of = digest([*groups, targets])
        checkpoints = checkpoints.also(pairs=made_of)
    items = list(range(len(groups)))
    return fit(head, backbone, items, loss_of, config, progress, description, checkpoints)


def load_head(
    directory: str | Path,
    kind: str,
    settings_type: type[PairSettings],
    make_head: Callable[[Backbone, Any], Any],
    cache_dir: Path | None = None,
) -> tuple[Any, Backbone, Any, Features | None]:
    """(settings, backbone, head, features) of a saved pair model of ``kind``;
    ``make_head(backbone, settings)`` builds the head the saved weights go into."""
    raw, state, backbone = read_model(directory, kind)
    try:
        settings = settings_type.model_validate(raw)
    except ValidationError as exc:
        raise InputFileError(
            Path(directory) / "model.json",
            f"bad settings: {describe_validation(exc, 'settings')}",
            fix=f"train the {kind} again with this rolecall version",
        ) from None
    head = make_head(backbone, settings)
    try:
        head.load_state_dict(state)
    except RuntimeError as exc:
        raise InputFileError(
            Path(directory) / "head.pt",
            f"does not fit the settings: {exc}",
            fix=f"train the {kind} again",
        ) from None
    head.eval()
    features = Features(backbone, cache_dir) if cache_dir is not None else None
    return settings, backbone, head, features


class PairModel:
    """A head over pair states, its backbone and settings; subclasses name their ``KIND``,
    ``SETTINGS`` type and number of ``OUTPUTS`` and add what they compute."""

    KIND: str = ""
    SETTINGS: type[PairSettings] = PairSettings
    OUTPUTS: int = 1

    def __init__(
        self, head: Any, backbone: Backbone, settings: Any, features: Features | None = None
    ):
        self.head, self.backbone, self.settings, self.features = (
            head,
            backbone,
            settings,
            features,
        )

    @classmethod
    def resolve(cls, settings: Any, backbone: Backbone) -> Any:
        """The settings with every ``auto`` choice made for this backbone."""
        return settings.model_copy(update={"pool": resolve_pool(settings.pool, backbone)})

    @classmethod
    def make_head(cls, backbone: Backbone, settings: Any) -> Any:
        return build_head(backbone, settings, cls.OUTPUTS)

    @classmethod
    def create(
        cls,
        backbone: Backbone | str,
        settings: Any = None,
        features: Features | None = None,
        seed: int = 0,
    ):
        """A new model; its head's initial weights come from ``seed`` alone, not from
        whatever a process drew before (a bench trains many models in one)."""
        backbone = resolve_backbone(backbone)
        settings = cls.resolve(settings or cls.SETTINGS(), backbone)
        with torch_module().random.fork_rng(devices=[]):
            torch_module().manual_seed(seed)
            head = cls.make_head(backbone, settings)
        return cls(head, backbone, settings, features)

    @classmethod
    def for_training(
        cls, backbone: Backbone | str, settings: Any, config: TrainConfig, cache_dir: Path | None
    ):
        """A new model whose features (a frozen backbone's states) are computed
        ``config.batch_size`` at a time and cached in ``cache_dir``."""
        backbone = resolve_backbone(backbone)
        features = Features(backbone, cache_dir, batch_size=config.batch_size)
        return cls.create(backbone, settings, features, seed=config.seed)

    @classmethod
    def load(cls, directory: str | Path, cache_dir: Path | None = None):
        settings, backbone, head, features = load_head(
            directory, cls.KIND, cls.SETTINGS, cls.make_head, cache_dir
        )
        return cls(head, backbone, settings, features)

    def save(self, directory: str | Path, metrics: dict | None = None) -> Path:
        return save_model(
            Path(directory),
            self.KIND,
            self.settings.model_dump(mode="json"),
            self.head,
            self.backbone,
            metrics,
        )


def split_metrics(
    train: Sequence[Example], test: Sequence[Example], history: dict[str, Any], **extra: Any
) -> dict[str, Any]:
    """What a pair model's training reports before its held-out scores: the split sizes,
    ``extra`` and the loss (first, last, and each epoch's mean)."""
    return {
        "train_examples": len(train),
        "test_examples": len(test),
        **extra,
        "steps": history["steps"],
        "first_loss": history["first_loss"],
        "last_loss": history["last_loss"],
        "epoch_losses": history["epoch_losses"],
    }


def example_key(example: Example) -> str:
    """What the held-out split keeps together: the dialogue, else the context itself."""
    return example.dialogue_id or context_text(example.history, None)


def held_out(
    examples: list[Example], share: float, seed: int, path: str | Path
) -> tuple[list[Example], list[Example]]:
    """(train, test) by ``example_key``; ``share == 0`` holds nothing out."""
    if not 0 <= share < 1:
        raise ConfigError(
            f"the test share must lie in [0, 1), got {share}",
            fix="use e.g. 0.1, or 0 to train on every example",
        )
    if share == 0:
        return examples, []
    train, test = split_by(examples, key=example_key, held_out=share, seed=seed)
    if not train:
        raise InputFileError(
            path,
            f"all {len(examples)} examples fell into the held-out share: too few dialogues",
            fix="add dialogues or lower the test share",
        )
    return train, test


# ---- the classifier ---------------------------------------------------------------------
