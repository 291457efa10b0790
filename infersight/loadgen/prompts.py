"""Prompt synthesis, in tokens of the target's tokenizer when one is given, else in plain words.

- ``random`` prompts draw fresh tokens per request, so two requests never share a prefix by
  accident (a prefix-cache hit would hide KV pressure);
- ``shared_prefix_tokens`` puts one of ``prefix_groups`` fixed prefixes first, to exercise the
  prefix cache on purpose;
- ``repeated`` prompts repeat a single token, so every token routes to the same experts (MoE skew).

Prompt text is synthetic, but it is still never logged or written to results: only counts are.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any, Protocol

from infersight.loadgen.scenario import PromptSpec

# Common short English words; with no tokenizer one word stands for one token (most are one).
_WORD_TEXT = (
    "the of and to in is was for on are with as his they at be this from have or by one had not but what "
    "all were when we there can an your which their said if do will each about how up out them then she many "
    "some so these would other into has more her two like him see time could no make than first been its who "
    "now people my made over did down only way find use may water long little very after words called just "
    "where most know get through back much before go good new write our used me man too any day same right "
    "look think also around another came come work three word must because does part even place well such "
    "here take why things help put years different away again off went old number great tell men say small "
    "every found still between name should home big give air line set own under read last never us left end "
    "along while might next sound below saw something thought both few those always looked show large often "
    "together asked house world going want school important until form food keep children feet land side "
    "without boy once animals life enough took sometimes four head above kind began almost live page got earth"
)
_WORDS = tuple(_WORD_TEXT.split())


class Vocabulary(Protocol):
    """Turns token counts into text."""

    source: str  # "words" or "tokenizer", recorded in results

    def random_text(self, n: int, rng: random.Random) -> str: ...

    def repeated_text(self, n: int) -> str: ...


class WordVocabulary:
    """Plain words, one per "token"; used when no tokenizer is given."""

    source = "words"

    def random_text(self, n: int, rng: random.Random) -> str:
        return " ".join(rng.choices(_WORDS, k=n))

    def repeated_text(self, n: int) -> str:
        return " ".join([_WORDS[0]] * n)


class TokenizerError(ValueError):
    """The tokenizer path cannot be used."""


class TokenizerVocabulary:
    """Random ids of a Hugging Face ``tokenizer.json``, decoded and re-encoded until the text is
    ``n`` tokens long (decode/encode is not a bijection, so a few rounds correct the count)."""

    source = "tokenizer"
    _ROUNDS = 4

    def __init__(self, path: Path):
        try:
            from tokenizers import Tokenizer
        except ImportError:
            raise TokenizerError("--tokenizer needs the 'tokenizers' package (pip install tokenizers)") from None
        file = path / "tokenizer.json" if path.is_dir() else path
        if not file.is_file():
            raise TokenizerError(f"{path}: no tokenizer.json there; pass a model folder or its tokenizer.json")
        try:
            self._tok: Any = Tokenizer.from_file(str(file))
        except Exception as exc:  # the Rust side raises its own exception type
            raise TokenizerError(f"{file}: cannot load tokenizer: {exc}") from None
        ids = sorted(self._tok.get_vocab(with_added_tokens=False).values())
        texts = self._tok.decode_batch([[i] for i in ids])
        # Ids that decode to visible text on their own; byte fragments and special tokens are left out.
        self._ids = [i for i, t in zip(ids, texts, strict=True) if t.strip() and "\ufffd" not in t and t.isprintable()]
        if len(self._ids) < 16:
            raise TokenizerError(f"{file}: fewer than 16 printable tokens in the vocabulary")
        self._repeat_id = self._pick_repeatable()

    def count(self, text: str) -> int:
        return len(self._tok.encode(text, add_special_tokens=False).ids)

    def _pick_repeatable(self) -> int:
        """A token that stays one token per repetition, so n repetitions are n tokens."""
        for i in self._ids:
            text = self._tok.decode([i] * 8)
            if self._tok.encode(text, add_special_tokens=False).ids == [i] * 8:
                return i
        return self._ids[0]

    def random_text(self, n: int, rng: random.Random) -> str:
        ids = rng.choices(self._ids, k=n)
        best = self._tok.decode(ids)
        best_error = abs(self.count(best) - n)
        for _ in range(self._ROUNDS):
            if best_error == 0:
                break
            ids = self._tok.encode(best, add_special_tokens=False).ids
            ids = ids[:n] if len(ids) >= n else ids + rng.choices(self._ids, k=n - len(ids))
            text = self._tok.decode(ids)
            error = abs(self.count(text) - n)
            if error < best_error:
                best, best_error = text, error
        return str(best)

    def repeated_text(self, n: int) -> str:
        return str(self._tok.decode([self._repeat_id] * n))


def load_vocabulary(tokenizer: Path | None) -> Vocabulary:
    return WordVocabulary() if tokenizer is None else TokenizerVocabulary(tokenizer)


class PromptFactory:
    """Builds each request's prompt from its stage's :class:`PromptSpec` and token count."""

    def __init__(self, vocabulary: Vocabulary, seed: int):
        self.vocabulary = vocabulary
        self._seed = seed
        self._prefixes: dict[tuple[int, int], str] = {}

    def _prefix(self, group: int, n: int) -> str:
        # Seeded by the scenario seed and group only, so stages share prefixes (warm, then measure).
        key = (group, n)
        if key not in self._prefixes:
            self._prefixes[key] = self.vocabulary.random_text(n, random.Random(f"{self._seed}:prefix:{group}:{n}"))
        return self._prefixes[key]

    def build(self, spec: PromptSpec, n_tokens: int, rng: random.Random) -> str:
        if spec.mode == "repeated":
            return self.vocabulary.repeated_text(n_tokens)
        shared = min(spec.shared_prefix_tokens, n_tokens - 1) if spec.shared_prefix_tokens else 0
        body = self.vocabulary.random_text(n_tokens - shared, rng)
        if not shared:
            return body
        return self._prefix(rng.randrange(spec.prefix_groups), shared) + " " + body
