"""Translation models (encoder-decoder) and sacreBLEU's corpus BLEU."""
from __future__ import annotations

from ctypes import byref, c_char_p, c_void_p, create_string_buffer
from typing import List, NamedTuple, Sequence, Tuple, overload

from ._device import long_call
from ._lib import Bleu, BleuOptions, DecodeOptions, check, check_size, lib, take_string
from ._model import Model

_TOKENIZE = {"none": 0, "13a": 1}  # clformer_bleu_tokenize


class Translator(Model):
    """An encoder-decoder model (trained with task "translate"). Load with
    `clformer.load(path)`."""

    @overload
    def translate(self, sentences: str, beam: int = ..., max_len: int = ...,
                  length_penalty: float = ..., batch_size: int = ...) -> str: ...

    @overload
    def translate(self, sentences: Sequence[str], beam: int = ..., max_len: int = ...,
                  length_penalty: float = ..., batch_size: int = ...) -> List[str]: ...

    def translate(self, sentences, beam: int = 1, max_len: int = 0, length_penalty: float = 1.0,
                  batch_size: int = 64):
        """Translates a sentence (str) or a list of them, as `clformer
        translate` does with the same options: greedy unless beam > 1, at most
        max_len output tokens (0: the model's max_len - 1), sorted by length
        and decoded batch_size at a time. A model trained on whitespace
        tokens takes and gives tokens; one with SentencePiece raw text."""
        single = isinstance(sentences, str)
        lines = [sentences] if single else list(sentences)
        options = DecodeOptions()
        lib.clformer_decode_options_default(byref(options))
        check_size(options, "clformer_decode_options")
        options.beam, options.max_len, options.length_penalty = beam, max_len, length_penalty
        encoded = (c_char_p * len(lines))(*[s.encode("utf-8") for s in lines])
        outputs = (c_void_p * len(lines))()
        with self.device.use() as ctx:
            session = self._session_handle(ctx)
            try:
                long_call(lambda: lib.clformer_translate_sentences(
                    session, encoded, len(lines), byref(options), batch_size, outputs, None,
                    None, None))
            finally:
                texts = [take_string(p) for p in outputs]
        return texts[0] if single else texts


class BleuScore(NamedTuple):
    """Corpus BLEU as sacreBLEU 2.x computes it."""

    score: float
    precisions: Tuple[float, float, float, float]  #: percent, 1- to 4-grams
    bp: float                                      #: brevity penalty
    hyp_len: int
    ref_len: int
    signature: str  #: sacreBLEU's, e.g. "nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.6.0"
    line: str       #: sacreBLEU's line, "BLEU = 35.12 67.1/41.0/27.3/18.7 (BP = ...)"

    def __str__(self) -> str:
        return self.line


def bleu(hypotheses: Sequence[str], references: Sequence[str], tokenize: str = "13a",
         lowercase: bool = False) -> BleuScore:
    """Corpus BLEU of hypotheses against one reference each, equal to
    sacreBLEU's (4-grams, 'exp' smoothing); tokenize "13a" (sacreBLEU's
    default, for detokenised text) or "none" (the text's own whitespace
    tokens); lowercase is sacreBLEU's -lc."""
    if len(hypotheses) != len(references):
        raise ValueError(f"{len(hypotheses)} hypotheses but {len(references)} references: "
                         "give one reference per hypothesis")
    if tokenize not in _TOKENIZE:
        raise ValueError(f"tokenize must be one of {sorted(_TOKENIZE)}, not {tokenize!r}")
    options = BleuOptions()
    lib.clformer_bleu_options_default(byref(options))
    check_size(options, "clformer_bleu_options")
    options.tokenize, options.lowercase = _TOKENIZE[tokenize], lowercase
    n = len(hypotheses)
    hyps = (c_char_p * n)(*[h.encode("utf-8") for h in hypotheses])
    refs = (c_char_p * n)(*[r.encode("utf-8") for r in references])
    result = Bleu()
    check(lib.clformer_bleu_corpus_with(hyps, refs, n, byref(options), byref(result)))
    line, signature = create_string_buffer(256), create_string_buffer(256)
    lib.clformer_bleu_format(byref(result), line, len(line))
    check(lib.clformer_bleu_signature_with(byref(options), signature, len(signature)))
    return BleuScore(result.score, tuple(result.precisions), result.bp, result.hyp_len,
                     result.ref_len, signature.value.decode(), line.value.decode())
