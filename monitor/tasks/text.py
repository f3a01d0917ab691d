"""Generated text: one completion per row; the group is the demographic group its prompt was about.

Bad rows: a missing completion (``text_missing``). The word lists, lexicon, WEAT sets and
embeddings are options, inline or read from files once at start-up:

- ``lexicon_file``: one word per line (HONEST; no lexicon ships with fairwatch);
- ``targets_file``: one word per line (default: professions);
- ``word_lists_file``: JSON ``{group: [words]}`` (default: small gender word lists);
- ``weat_sets_file``: JSON ``{X, Y, A, B}``; ``embeddings_file``: GloVe-style ``word v1 v2 ...``.

A ``*_file`` option, when given, replaces its inline form. Relative paths are relative to the
config file.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Self

from metrics_core.text import default_targets, default_word_lists, parse_embeddings, parse_word_list
from monitor.core.errors import ConfigError
from monitor.tasks.base import FamilyModule, GroupwiseOptions, ModelView, Rows, Task

__all__ = ["TASK", "TextOptions"]


class TextOptions(GroupwiseOptions):
    lexicon: list[str] | None = None
    word_lists: dict[str, list[str]] | None = None
    targets: list[str] | None = None
    weat_sets: dict[str, list[str]] | None = None
    embeddings: dict[str, list[float]] | None = None
    n_permutations: int = 10_000
    lexicon_file: Path | None = None
    word_lists_file: Path | None = None
    targets_file: Path | None = None
    weat_sets_file: Path | None = None
    embeddings_file: Path | None = None

    def relative_to(self, base: Path) -> Self:
        update = {
            key: base / path
            for key in _READERS
            if (path := getattr(self, key)) is not None and not path.is_absolute()
        }
        return self.model_copy(update=update) if update else self

    def evaluate_kwargs(self) -> dict[str, object]:
        kwargs = self.model_dump(exclude=set(_READERS))
        for key, reader in _READERS.items():
            path: Path | None = getattr(self, key)
            if path is None:
                continue
            try:
                kwargs[key.removesuffix("_file")] = reader(path.read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                raise ConfigError(f"options.{key}: cannot read {path}: {exc}") from exc
        # the shipped defaults: the HELM metrics are computed unless the user's lists replace them
        if kwargs["word_lists"] is None:
            kwargs["word_lists"] = default_word_lists()
        if kwargs["targets"] is None:
            kwargs["targets"] = default_targets()
        return kwargs


#: ``<option>_file`` -> how its file's text becomes the option's value.
_READERS: dict[str, Callable[[str], object]] = {
    "lexicon_file": parse_word_list,
    "targets_file": parse_word_list,
    "word_lists_file": json.loads,
    "weat_sets_file": json.loads,
    "embeddings_file": parse_embeddings,
}


def clean(rows: Rows, model: ModelView) -> None:
    rows.required_text("text", model.columns.text, "text_missing")


TASK = Task(
    name="text",
    families=("text",),
    evaluate=FamilyModule("metrics_core.text"),
    required=(("text",),),
    reads={"text": ("text",)},
    options=TextOptions,
    clean=clean,
)
