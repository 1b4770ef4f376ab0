"""Backbones of the dialogue models: token states for texts and text pairs.

The modules: ``base`` (the ``Backbone``, layer cutting, ``torch_module``), ``load`` (by name,
or as saved), ``sentence`` and ``sentence_top`` (the bundled sentence encoder, USE-m, with
its trainable dense top), ``e5`` (multilingual-e5-small, vectors only), ``features`` (states
computed once per text and cached on disk for a frozen backbone).

Every model of ``rolecall.train`` (out-of-bounds classifier, bi/poly-encoder retriever,
cross-encoder reranker) is a small head over a ``Backbone``. A backbone is

- ``load_backbone("/path/to/hf-model")``: any local transformers model directory (encoder
  or decoder; ``AutoModel``), trainable by default (the GPU user's path, e.g. a copy of
  ``klue/roberta-base``);
- ``load_backbone("embedded")``: the embedded Gemma 3 270M (see ``llm/hf.py``), frozen by
  default: on a CPU its hidden states are computed once per text and cached on disk
  (``features``) and only the head trains (DESIGN.md: no small Korean encoder can be
  installed offline);
- a ``Backbone`` built in code around any model and tokenizer (the tests build tiny random
  ones: ``tests/tiny_models.py``).

Token states are ``(hidden [B, T, H], mask [B, T])``. Pairs (``history``, ``response``) are
assembled by hand, the same way for every tokenizer: ``[CLS] history [SEP] response [SEP]``
(BOS/EOS where the tokenizer has no CLS/SEP), the history cut from the *left* (its end, the
last utterance, matters most) and the response from the right, segment ids 0/1 where the
model has segment embeddings. Nothing is ever downloaded: loads are ``local_files_only``.

``layer=N`` keeps the first N transformer layers only (the module list and
``config.num_hidden_layers`` / ``layer_types`` are cut): the states are those of layer N,
through the model's final norm where it has one, exactly what the full model's layer N
would give a head, and extraction does N/L of the work. The layer is part of the
backbone's identity (feature cache keys) and of ``backbone.json``; a directory saved
before the setting existed loads whole.

``tune_top(N)`` trains the top N transformer layers (and the final norm after them) and
keeps everything below as loaded: on a CPU this is what makes the embedded Gemma a
classifier worth its cost (docs/models.md). Only those layers' weights are saved (``tuned.
safetensors``, tens of MB instead of the whole model); loading reads the source again and
puts them back.
"""
