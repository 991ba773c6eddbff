"""nmt: RNN encoder-decoder neural machine translation (RNNsearch, RNNenc) from Python.

The same library as the ``nmt`` command line, through a native module (``nmt._nmt``):

- :class:`Translator` translates and scores batches (one model or an ensemble);
- :func:`train` trains or resumes a model from a TOML config, as ``nmt train``;
- :func:`bleu` and :func:`chrf` are sacreBLEU-identical corpus scores;
- :class:`Model` reads what a model file says about itself.

Computations release the GIL: Python threads translating at once run in parallel.
"""
from typing import Iterable, Iterator

from ._nmt import Model, Score, TranslationResult, __version__, bleu, chrf, train
from ._nmt import Translator as _NativeTranslator

__all__ = ["Model", "Score", "TranslationResult", "Translator", "__version__", "bleu", "chrf", "train"]


class Translator(_NativeTranslator):
    """A model, or an ensemble of models, ready to translate and score.

    ``Translator(path, threads=None, device="cpu")``: ``path`` is a model file
    (``model.safetensors`` from ``nmt train``) or a list of them for an ensemble, which decodes
    with the average of the models' distributions (``nmt translate -m A -m B``).
    """

    def translate_iterable(self, lines: Iterable[str], batch_size: int = 32, **kwargs) -> Iterator[TranslationResult]:
        """Translates ``lines`` ``batch_size`` at a time, yielding one result per line in the
        input order; ``kwargs`` are :meth:`translate_batch`'s."""
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        batch = []
        for line in lines:
            batch.append(line)
            if len(batch) == batch_size:
                yield from self.translate_batch(batch, **kwargs)
                batch = []
        if batch:
            yield from self.translate_batch(batch, **kwargs)
