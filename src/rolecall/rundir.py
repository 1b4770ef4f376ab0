"""A run directory: the outputs of one command plus ``manifest.json`` describing the run.

The manifest records the config, the model ids, the hash of every prompt template used,
record counts, LLM statistics and timings. It is rewritten atomically after each stage, so
a killed run leaves a manifest of the stages it finished; a resumed run adds to it
(``runs`` lists every start, so the cost of each resume stays visible).
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import time
from pathlib import Path
from typing import Any

from rolecall import __version__

MANIFEST = "manifest.json"


def text_hash(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


class RunDir:
    def __init__(self, path: str | Path, command: str, config: dict[str, Any] | None = None):
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)
        manifest_path = self.path / MANIFEST
        if manifest_path.exists():
            self.manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        else:
            self.manifest = {"command": command, "created": time.time(), "runs": [],
                             "config": {}, "models": {}, "prompts": {}, "counts": {},
                             "stages": {}}
        # one config per command: a directory holds several stages (generate, judge...)
        self.manifest["config"][command] = config or {}
        self.manifest["runs"].append({"command": command, "started": time.time(),
                                      "rolecall": __version__,
                                      "python": platform.python_version()})
        self._started = time.perf_counter()
        self.save()

    def file(self, name: str) -> Path:
        return self.path / name

    def record_model(self, role: str, model_id: str) -> None:
        self.manifest["models"][role] = model_id

    def record_prompt(self, name: str, template_text: str) -> None:
        self.manifest["prompts"][name] = text_hash(template_text)

    def record_stage(self, stage: str, counts: dict[str, Any], llm_stats: dict | None = None
                     ) -> None:
        entry = {"counts": counts, "seconds": round(time.perf_counter() - self._started, 3),
                 "finished": time.time()}
        if llm_stats is not None:
            entry["llm"] = llm_stats
        self.manifest["stages"][stage] = entry
        self.manifest["runs"][-1].setdefault("stages", {})[stage] = entry
        self.manifest["counts"].update(counts)
        self.save()

    def save(self) -> None:
        target = self.path / MANIFEST
        temp = target.with_suffix(".json.tmp")
        temp.write_text(json.dumps(self.manifest, ensure_ascii=False, indent=2),
                        encoding="utf-8")
        os.replace(temp, target)
