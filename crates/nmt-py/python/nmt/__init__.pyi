"""Type stubs of the nmt package (see each object's docstring)."""
import os
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple, Union

import numpy

__version__: str

_Path = Union[str, "os.PathLike[str]"]

class TranslationResult:
    """One source sentence's result: its n-best list, best first."""

    hypotheses: List[str]
    """The hypotheses' text."""
    scores: List[float]
    """Ranking scores ``log p / len^alpha`` (empty with ``return_scores=False``)."""
    log_probs: List[float]
    """``log p(y | x)`` of each hypothesis, ``</s>`` included (empty with ``return_scores=False``)."""
    tokens: List[List[str]]
    """Each hypothesis's target subword pieces, ``</s>`` last when it finished."""
    source_tokens: List[str]
    """The source's subword pieces, ``</s>`` last: the attention's columns."""
    @property
    def attention(self) -> Optional[List[numpy.ndarray]]:
        """Per hypothesis, attention weights ``(len(tokens[i]), len(source_tokens))``, rows
        summing to 1; ``None`` unless ``return_attention=True``."""

class Translator:
    """A model (or an ensemble: a list of paths) ready to translate and score."""

    def __init__(
        self, path: Union[_Path, Sequence[_Path]], threads: Optional[int] = None, device: str = "cpu", compute_type: str = "default"
    ) -> None:
        """Loads the model file(s); ``threads``: the search's threads (default: every core);
        ``device``: ``"cpu"``, ``"cuda"`` or ``"cuda:N"`` (a build with the cuda feature);
        ``compute_type``: ``"int8"``, ``"float32"`` or ``"default"`` (the model file's choice;
        ``nmt quantize`` files multiply in int8)."""
    def translate_batch(
        self,
        sources: List[str],
        beam_size: Optional[int] = None,
        num_hypotheses: int = 1,
        normalize: Optional[float] = None,
        max_length: Optional[int] = None,
        no_unk: bool = False,
        return_scores: bool = True,
        return_attention: bool = False,
        replace_unk: bool = False,
        batch_size: Optional[int] = None,
        use_vmap: Optional[bool] = None,
    ) -> List[TranslationResult]:
        """Translates ``sources`` (one result per sentence, in order) with the search of
        ``nmt translate``. ``None`` keeps the model file's ``[search]`` value; ``max_length``
        crops longer sources (subword tokens); ``replace_unk`` replaces each ``<unk>`` with the
        source word it attended to most (attention models); ``use_vmap`` scores only the model
        file's lexical shortlist (CTranslate2's vocabulary map; ``nmt translate --shortlist``)."""
    def translate_iterable(self, lines: Iterable[str], batch_size: int = 32, **kwargs: Any) -> Iterator[TranslationResult]:
        """Translates ``lines`` ``batch_size`` at a time, yielding results in input order."""
    def score_batch(
        self, sources: List[str], targets: List[str], per_token: bool = False, normalize: bool = False, batch_size: int = 64
    ) -> Union[List[float], List[List[float]]]:
        """``log p(target | source)`` per pair (``nmt score``); ``per_token``: each target token's
        log-probability, ``</s>`` last; ``normalize``: divided by the target's tokens."""
    @property
    def languages(self) -> Optional[Tuple[str, str]]:
        """``(source, target)`` ISO 639-1 codes, when the model file knows them."""
    @property
    def ensemble_size(self) -> int:
        """How many models decode together."""

class Model:
    """A model file's metadata."""

    @staticmethod
    def load(path: _Path) -> "Model":
        """Reads the model file at ``path``."""
    @property
    def config(self) -> Dict[str, Any]:
        """The model's configuration (``[model]``, preset expanded)."""
    @property
    def search(self) -> Dict[str, Any]:
        """The search defaults (``[search]``)."""
    @property
    def languages(self) -> Optional[Tuple[str, str]]:
        """``(source, target)`` ISO 639-1 codes, when known."""
    @property
    def step(self) -> int:
        """Training updates done when the file was written."""
    @property
    def parameters(self) -> int:
        """The number of parameters."""

class Score:
    """A corpus score; ``str(score)`` is sacreBLEU's text line, ``float(score)`` its value."""

    name: str
    score: float
    signature: str
    def __float__(self) -> float: ...

def train(
    config: _Path,
    model_dir: _Path,
    threads: Optional[int] = None,
    overrides: Optional[Dict[str, Union[bool, int, float, str]]] = None,
    progress: bool = True,
    callback: Optional[Callable[[Dict[str, Any]], None]] = None,
    data: Optional[_Path] = None,
) -> Dict[str, Any]:
    """Trains or resumes (``nmt train -c config -m model_dir``); ``overrides`` are
    ``--set`` keys (``{"train.max_minutes": 30}``); ``callback`` receives each line of
    ``train_log.jsonl`` as a dict; ``data``: a prepared corpus (``nmt prepare``). Returns the
    final metrics (steps, best_bleu, best_step, best_model, checkpoint, reason, elapsed_s,
    tok_per_s)."""

def bleu(hypotheses: List[str], references: Union[List[str], List[List[str]]], tokenize: str = "13a", lowercase: bool = False) -> Score:
    """Corpus BLEU as ``sacrebleu.corpus_bleu``; ``references[k][i]`` is the k-th reference of
    sentence ``i`` (a flat list is one reference per sentence)."""

def chrf(hypotheses: List[str], references: Union[List[str], List[List[str]]], lowercase: bool = False) -> Score:
    """Corpus chrF2 as ``sacrebleu.corpus_chrf``."""
